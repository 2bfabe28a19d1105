"""The leaderboard of external kernels: a SQLite store of whole RunResults with their provenance
(`store`), one entry per (run, implementation) (`entry`), a pure fair ranking against a fixed
per-scenario denominator on the scenarios every entry supports and coverage-weighted (`rank`), and
renderers for the terminal, JSON and Markdown (`text`) and a static page (`html`).
"""
