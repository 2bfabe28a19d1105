"""Where the data solbench ships lies: under solbench/data/, in a checkout and in an installed wheel alike.

One copy in the tree. In a checkout, solbench/data/scenarios, reference_kernels and baselines are links
to the top-level folders of those names, and the top-level roofline/ is a link to solbench/data/roofline;
setuptools copies through the links, so a wheel or sdist carries real files (tests/test_packaging.py).
`solbench info --paths` prints these locations.
"""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[1] / "data"
SUITES_DIR = DATA_DIR / "scenarios"
"""Suite files, scenarios/<name>.toml."""
KERNELS_DIR = DATA_DIR / "reference_kernels"
"""The seed kernels: seed_attention.cu (CUDA) and torch_attention.py (the Python reference candidate)."""
ROOFLINE_DIR = DATA_DIR / "roofline"
"""Arch spec files, roofline/<arch>.toml."""
PROFILES_DIR = ROOFLINE_DIR / "measured"
"""Measured ceilings shipped with solbench, roofline/measured/<arch>.toml."""
BASELINES_DIR = DATA_DIR / "baselines"
"""Recorded baseline runs, baselines/<arch>/<suite>[+TAG].json."""
