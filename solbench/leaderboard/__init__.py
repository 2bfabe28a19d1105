"""The leaderboard of external kernels: a SQLite store of whole RunResults with their provenance
(`store`), one entry per (run, implementation) (`entry`), a pure fair ranking against a fixed
per-scenario denominator (`rank`), and renderers for the terminal/JSON (`text`) and a static page (`html`).
"""
