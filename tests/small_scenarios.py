"""The shipped suites' scenarios cut to CPU size: the same variant (heads per group, head dims, dtype, layout, mask,
features, input profile) with small lengths per regime (rows up to a few thousand keys, so windows of 128 and 1024
still bite) and at most 2 KV heads x 2 query heads. Deduplicated by id across suites (the grids share their cuts)."""

from __future__ import annotations

import functools
from dataclasses import replace

from solbench.core import masks
from solbench.core.scenario import Scenario
from solbench.core.suites import available_suites, load_suite

SHAPES = {
    "prefill": dict(q_lens=(130, 37), kv_lens=(130, 37)),
    "chunked_prefill": dict(q_lens=(16, 40), kv_lens=(1500, 300)),
    "decode": dict(q_lens=(1, 1, 1), kv_lens=(1500, 40, 300)),
    "split_kv_decode": dict(q_lens=(1, 1), kv_lens=(3000, 1200)),
    "mixed": dict(q_lens=(1, 1, 48), kv_lens=(1500, 300, 400)),
}
LONG_ROWS = dict(regime="chunked_prefill", q_lens=(16,), kv_lens=(16384,))
"""16 rows of 16k keys: where dropping the blocks far below a row's peak loses a share of its mass."""
SMALL_PAIRS = 500_000
SMALL_KV_ROWS = 100_000
"""A scenario with at most SMALL_PAIRS visible (query head, query, key) triples and SMALL_KV_ROWS stored
(key, KV head) rows is small as it is."""


def cut(sc: Scenario, shape: dict | None = None) -> Scenario:
    """`sc` with 2 KV heads x 2 query heads at most and `shape`'s lengths (default: its regime's SHAPES entry);
    a scenario already small (and no shape asked for) as it is."""
    if shape is None and masks.visible_pairs(sc) <= SMALL_PAIRS and sc.total_kv * sc.heads_kv <= SMALL_KV_ROWS:
        return sc
    heads_kv = min(sc.heads_kv, 2)
    return replace(sc, heads_kv=heads_kv, heads_q=heads_kv * min(sc.group_size, 2), **(shape or SHAPES[sc.regime]))


@functools.lru_cache(maxsize=None)
def small_scenarios(suites: tuple[str, ...] | None = None) -> tuple[Scenario, ...]:
    """The cuts of these suites' scenarios (None: every shipped suite), in suite order, each id once."""
    out = {}
    for name in suites or available_suites():
        for sc in load_suite(name).scenarios:
            small = cut(sc)
            out.setdefault(small.id, small)
    return tuple(out.values())
