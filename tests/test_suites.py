"""Suite files: counts and shapes of the shipped suites, the generators, and errors with file:line."""

import pytest

from solbench.core.errors import ConfigError, ScenarioError
from solbench.core.suites import expand_lengths, load_suite

EXPECTED = {"hopper": 182, "blackwell": 182, "fa3-h2h": 26, "rtx3080-mask": 15, "avo": 24, "real": 24,
            "edge": 21, "smoke": 10}


@pytest.mark.parametrize("name, count", EXPECTED.items())
def test_suite_counts(name, count):
    suite = load_suite(name)
    assert len(suite.scenarios) == count
    assert len({s.id for s in suite.scenarios}) == count


def test_grid_is_7_regimes_by_26_variants():
    for name in ("hopper", "blackwell"):
        scs = load_suite(name).scenarios
        regimes = {}
        for s in scs:
            regimes.setdefault((s.regime, s.q_lens, s.kv_lens), []).append(s)
        assert len(regimes) == 7 and all(len(v) == 26 for v in regimes.values())
        assert {s.regime for s in scs} == {"prefill", "chunked_prefill", "decode", "split_kv_decode", "mixed"}
        dense = [s for s in scs if not (s.sinks or s.softcap or s.window_left >= 0)]
        assert len(dense) == 7 * 12
        assert {(s.heads_q, s.heads_kv) for s in dense} == {(32, 32), (32, 8), (32, 4), (32, 1)}
        assert sum(1 for s in scs if s.sinks and s.window_left == 127) == 14
        assert all(s.head_dim_qk == 128 for s in scs)
        long_decode = [s for s in scs if s.regime == "split_kv_decode"]
        assert all(16384 <= max(s.kv_lens) <= 131072 for s in long_decode)


def test_rtx3080_mask_shapes():
    scs = load_suite("rtx3080-mask").scenarios
    assert all(s.dtype == "fp16" and s.head_dim_qk == 64 and s.mask and s.mask.density == 0.25 and not s.causal
               for s in scs)
    corr = {s.q_lens[0] for s in scs if s.heads_q == 4 and s.batch == 2 and s.mask.pattern == "iid"}
    assert corr == {64, 128, 256, 512}
    nsweep = {s.q_lens[0] for s in scs if s.heads_q == 12 and s.batch == 16}
    assert nsweep == {64, 128, 256, 512, 1024}
    bsweep = {s.batch for s in scs if s.heads_q == 12 and s.q_lens[0] == 512}
    assert bsweep == {1, 4, 8, 16, 32, 64}
    assert any(s.mask.pattern == "iid_empty_rows" for s in scs)


def test_fa3_h2h_and_avo_shapes():
    fa3 = load_suite("fa3-h2h").scenarios
    assert all(s.total_q == 16384 for s in fa3)
    assert sum(s.dtype == "fp8_e4m3" for s in fa3) == 2
    avo = load_suite("avo").scenarios
    assert all(s.total_q == 32768 and s.dtype == "bf16" for s in avo)
    assert {(s.heads_q, s.heads_kv) for s in avo} == {(16, 16), (32, 4), (32, 8)}


def test_generators():
    assert expand_lengths([{"repeat": 3, "n": 2}, 7]) == [3, 3, 7]
    geom = expand_lengths({"geom": [128, 4096], "n": 6})
    assert geom[0] == 128 and geom[-1] == 4096 and geom == sorted(geom) and len(geom) == 6
    with pytest.raises(ScenarioError):
        expand_lengths([{"geom": [10, 5], "n": 3}])
    with pytest.raises(ScenarioError):
        expand_lengths("12")


def test_error_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n\n[[scenario]]\nq_lens = [8]\nheads_q = 4\nheads_kv = 4\n\n'
                   '[[scenario]]\nq_lens = [8]\nheads_q = 6\nheads_kv = 4\n')
    with pytest.raises(ScenarioError) as err:
        load_suite(str(bad))
    assert f"{bad}:8:" in str(err.value) and "heads_kv" in str(err.value)


def test_product_conflict_and_unknown_axis(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text('name = "p"\n[[axis.a]]\nq_lens = [4]\nheads_q = 2\n[[axis.b]]\nheads_q = 2\nheads_kv = 1\n'
                 '[[product]]\naxes = ["a", "b"]\n')
    with pytest.raises(ScenarioError, match="already set"):
        load_suite(str(f))
    f.write_text('name = "p"\n[[product]]\naxes = ["nope"]\n')
    with pytest.raises(ScenarioError, match=r"p.toml:2: unknown axis"):
        load_suite(str(f))


def test_malformed_toml_and_unknown_suite(tmp_path):
    f = tmp_path / "m.toml"
    f.write_text('name = "m"\n[[scenario]\n')
    with pytest.raises(ScenarioError, match="malformed TOML"):
        load_suite(str(f))
    with pytest.raises(ConfigError, match="unknown suite"):
        load_suite("no-such-suite")


def test_duplicate_ids_rejected(tmp_path):
    f = tmp_path / "d.toml"
    f.write_text('name = "d"\n' + '[[scenario]]\nq_lens = [8]\nheads_q = 2\nheads_kv = 2\n' * 2)
    with pytest.raises(ScenarioError, match="duplicate scenario id"):
        load_suite(str(f))


def test_suite_hash_changes_with_definitions(tmp_path):
    f = tmp_path / "h.toml"
    f.write_text('name = "h"\n[[scenario]]\nq_lens = [8]\nheads_q = 2\nheads_kv = 2\n')
    h1 = load_suite(str(f)).hash
    f.write_text('name = "h"\n[[scenario]]\nq_lens = [9]\nheads_q = 2\nheads_kv = 2\n')
    assert load_suite(str(f)).hash != h1
