"""Plots are drawn from plain dicts on CPU and produce real image files."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from solbench.report import plots
from solbench.core.roofline import MeasuredProfile, bound, load_arch
from solbench.core.scenario import Scenario

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def scenarios(n):
    out = []
    for i in range(n):
        s = 256 * (1 + i % 16)
        if i % 3 == 0:
            out.append(Scenario(q_lens=(1,) * 4, kv_lens=(s,) * 4, heads_q=32, heads_kv=8, regime="decode", tag=f"t{i}"))
        elif i % 3 == 1:
            out.append(Scenario(q_lens=(s,), kv_lens=(s,), heads_q=16, heads_kv=16, tag=f"t{i}"))
        else:
            out.append(Scenario(q_lens=(s,), kv_lens=(s,), heads_q=16, heads_kv=4, dtype="fp8_e4m3",
                                descale="per_tensor", tag=f"t{i}"))
    return out


def rows_for(n, impls=("candidate", "seed", "fa3")):
    spec, rng, rows = load_arch("h200"), random.Random(1), []
    for sc in scenarios(n):
        b = bound(sc, spec)
        for impl in impls:
            frac = rng.uniform(0.05, 0.95)
            rows.append({"scenario_id": sc.id, "impl": impl, "flops": b.flops, "bytes": b.bytes,
                         "time_ms": b.bound_ms / frac, "sol_fraction": frac, "dtype": sc.dtype})
    return rows


def profile():
    return MeasuredProfile(arch="h200", gpu="NVIDIA H200", date="2026-01-01", bf16_tflops=790.0,
                           fp16_tflops=780.0, fp8_tflops=1300.0, copy_tbps=4.3, launch_us=5.0)


def test_roofline_chart_png(tmp_path):
    rows = rows_for(24)
    rows.append({**rows[0], "impl": "broken", "time_ms": None, "sol_fraction": None})  # a failed pair: left out
    path = plots.roofline_chart(rows, load_arch("h200"), profile(), tmp_path / "roof.png")
    assert path.read_bytes()[:8] == PNG_MAGIC and path.stat().st_size > 20_000
    without = plots.roofline_chart(rows, load_arch("h200"), None, tmp_path / "roof_datasheet.svg")
    assert b"<svg" in without.read_bytes()[:400]


def test_roofline_chart_with_no_points(tmp_path):
    path = plots.roofline_chart([], load_arch("b200"), None, tmp_path / "empty.png")
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_achieved_tflops():
    assert plots.achieved_tflops({"flops": 2e12, "time_ms": 4.0}) == pytest.approx(500.0)


@pytest.mark.slow
def test_sol_bar_chart_grows_with_scenarios(tmp_path):
    from PIL import Image

    small = plots.sol_bar_chart(rows_for(10), tmp_path / "small.png")
    big = plots.sol_bar_chart(rows_for(180), tmp_path / "big.png")
    limited = plots.sol_bar_chart(rows_for(180), tmp_path / "limited.png", limit=25)
    for p in (small, big, limited):
        assert p.read_bytes()[:8] == PNG_MAGIC
    h_small, h_big, h_limited = (Image.open(p).size[1] for p in (small, big, limited))
    assert h_big > 8 * h_small and h_limited < h_big / 4


def test_sol_percent_table_keeps_the_furthest_from_sol():
    rows = [
        {"scenario_id": "a", "impl": "x", "sol_fraction": 0.9}, {"scenario_id": "a", "impl": "y", "sol_fraction": 0.1},
        {"scenario_id": "b", "impl": "x", "sol_fraction": 0.3}, {"scenario_id": "b", "impl": "y", "sol_fraction": 0.4},
        {"scenario_id": "c", "impl": "x", "sol_fraction": 0.5}, {"scenario_id": "c", "impl": "y", "sol_fraction": None},
    ]
    scen, impls, value, total = plots.sol_percent_table(rows)
    assert (scen, impls, total) == (["a", "b", "c"], ["x", "y"], 3)
    assert value[("b", "y")] == pytest.approx(40.0) and ("c", "y") not in value
    # best per scenario: a 90, b 40, c 50 -> the two lowest are b and c, kept in original order
    assert plots.sol_percent_table(rows, limit=2)[0] == ["b", "c"]


def test_sol_chart_title_says_when_scenarios_are_left_out():
    assert plots.sol_chart_title("%-of-SOL, hopper", 60, 182) == "%-of-SOL, hopper: 60 of 182 scenarios (furthest from SOL)"
    assert plots.sol_chart_title(None, 26, 26) == "% of speed of light per scenario: 26 scenarios"


def test_sol_bar_chart_with_nothing(tmp_path):
    assert plots.sol_bar_chart([], tmp_path / "none.png").read_bytes()[:8] == PNG_MAGIC


def test_import_is_lazy():
    code = "import sys, solbench.report.plots; print('matplotlib' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_every_implementation_has_its_own_fixed_style():
    from solbench.baselines import REGISTRY

    assert {"candidate", "seed", *REGISTRY} <= set(plots.IMPL_STYLES)
    styles = list(plots.IMPL_STYLES.values())
    assert len({s.color for s in styles}) == len(styles) and len({s.marker for s in styles}) == len(styles)


def test_other_names_keep_one_style_and_do_not_take_a_library_colour():
    names = [f"kernel-{i}" for i in range(40)]
    assert [plots.impl_style(n) for n in names] == [plots.impl_style(n) for n in names]
    fixed = {s.color for s in plots.IMPL_STYLES.values()}
    assert not fixed & {plots.impl_style(n).color for n in names}
    assert len({plots.impl_style(n) for n in names}) > 10  # spread over colours and markers


def svg_colors(path) -> dict[str, str]:
    """impl -> the colour its first drawn element has in a chart saved as SVG (each impl's artists carry
    gid 'impl-<name>')."""
    import re

    found = re.finditer(r'<g id="impl-([^"]+)">.*?(?:fill|stroke): (#[0-9a-f]{6})', path.read_text(), re.S)
    colors = {}
    for m in found:
        colors.setdefault(m.group(1), m.group(2))
    return colors


@pytest.mark.parametrize("impls", [("candidate", "seed", "fa3", "sdpa-flash", "flex", "cudnn", "fa4",
                                    "torch-cudnn", "flashinfer-fa2", "flashinfer-fa3", "sdpa-efficient", "mine"),
                                   ("flex", "fa3", "mine")])
def test_charts_draw_each_implementation_in_its_own_colour_whatever_else_is_drawn(tmp_path, impls):
    rows = rows_for(6, impls)
    roof = svg_colors(plots.roofline_chart(rows, load_arch("h200"), None, tmp_path / "roof.svg"))
    bars = svg_colors(plots.sol_bar_chart(rows, tmp_path / "sol.svg"))
    expected = {impl: plots.impl_style(impl).color for impl in impls}
    assert roof == expected and bars == expected  # 12 implementations: no colour cycle repeats


def test_a_point_can_take_another_implementations_style(tmp_path):
    rows = [{**r, "impl": "fa3 (recorded 2026-01)", "style": "fa3"} for r in rows_for(4, ("fa3",))]
    colors = svg_colors(plots.roofline_chart(rows, load_arch("h200"), None, tmp_path / "roof.svg"))
    assert colors == {"fa3 (recorded 2026-01)": plots.IMPL_STYLES["fa3-fwd"].color}  # a recorded run's fa3 is fa3-fwd


def test_sol_chart_lists_only_implementations_it_draws(tmp_path):
    rows = [{"scenario_id": "near", "impl": "fa3", "sol_fraction": 0.9},
            {"scenario_id": "near", "impl": "seed", "sol_fraction": 0.8},
            {"scenario_id": "far", "impl": "seed", "sol_fraction": 0.1}]
    svg = plots.sol_bar_chart(rows, tmp_path / "sol.svg", limit=1)
    assert svg_colors(svg) == {"seed": plots.IMPL_STYLES["seed"].color}
    assert "<!-- seed -->" in svg.read_text() and "<!-- fa3 -->" not in svg.read_text()  # no legend entry either
