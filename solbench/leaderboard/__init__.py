"""The leaderboard of external kernels: a SQLite store of whole RunResults with their provenance
(`store`), one entry per (run, implementation) (`entry`), a pure fair ranking against a fixed
per-scenario denominator of the entries supporting at least half of a board's scenarios, on the scenarios
every ranked entry supports and coverage-weighted, the narrower ones listed apart (`rank`), and renderers
for the terminal, JSON and Markdown (`text`) and a static page (`html`).
"""
