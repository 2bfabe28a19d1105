"""Suite files: counts and shapes of the shipped suites, the generators, lint exceptions, and errors with file:line."""

import json
from pathlib import Path

import pytest

from solbench.core.errors import ConfigError, ScenarioError
from solbench.core.suites import expand_lengths, load_suite
from solbench.front import cli

EXPECTED = {"hopper": 182, "blackwell": 182, "hopper-d128": 182, "blackwell-d128": 182, "fa3-h2h": 26,
            "rtx3080-mask": 15, "avo": 24, "real": 24, "edge": 21, "smoke": 10}
SNAPSHOT = Path(__file__).parent / "snapshots" / "scenario_ids.txt"


@pytest.mark.parametrize("name, count", EXPECTED.items())
def test_suite_counts(name, count):
    suite = load_suite(name)
    assert len(suite.scenarios) == count
    assert len({s.id for s in suite.scenarios}) == count


def _by_regime(scs):
    regimes = {}
    for s in scs:
        regimes.setdefault((s.regime, s.q_lens, s.kv_lens), []).append(s)
    return regimes


@pytest.mark.parametrize("name", ["hopper", "blackwell"])
def test_new_grids_span_head_dims_masks_and_features(name, capsys):
    assert cli.main(["scenarios", "--suite", name, "--json"]) == 0
    scs = json.loads(capsys.readouterr().out)["scenarios"]
    assert len(scs) == 182 and len({s["id"] for s in scs}) == 182
    dims = {(s["head_dim_qk"], s["head_dim_v"]) for s in scs}
    assert dims == {(64, 64), (96, 96), (128, 128), (192, 128), (256, 256)}
    scs = load_suite(name).scenarios
    regimes = _by_regime(scs)
    assert len(regimes) == 7 and all(len(v) == 26 for v in regimes.values())
    full = [s for s in scs if not s.causal]
    assert len(full) == 3 * 3 and {s.regime for s in full} == {"prefill"}  # decode rows are causal by nature
    assert {s.group_size for s in scs} >= {1, 8, 32} and {s.dtype for s in scs} == {"bf16", "fp16", "fp8_e4m3"}
    assert {s.descale for s in scs} == {"none", "per_tensor", "per_head"}
    assert {s.window_left for s in scs} == {-1, 127, 511, 1023}
    assert {s.softcap for s in scs} == {0.0, 30.0, 50.0}
    with_sinks = [s for s in scs if s.sinks]
    assert with_sinks and all(s.input_profile == "sinks_lse" for s in with_sinks)
    assert any(s.sinks and s.window_left >= 0 for s in scs)
    assert {s.input_profile for s in scs} == {"default", "peaked", "high_logits", "sinks_lse"}
    # every window bites somewhere in each regime it appears in: some row there is longer than the window
    for s in scs:
        if s.window_left >= 0:
            assert max(s.kv_lens) > s.window_left + 1, s.id


def test_first_grids_keep_their_ids_as_hopper_d128_and_blackwell_d128():
    """Recorded runs name these scenarios: the d128 grids are the old hopper/blackwell, id for id, hash for hash."""
    from solbench.core.model import RENAMED_SUITES

    lines = SNAPSHOT.read_text().splitlines()
    for (old, suite_hash), new in RENAMED_SUITES.items():
        suite = load_suite(new)
        assert suite.hash == suite_hash
        assert [f"{new} {s.id}" for s in suite.scenarios] == [line for line in lines if line.startswith(new + " ")]
        assert all(s.head_dim_qk == 128 and s.heads_q == 32 and s.causal for s in suite.scenarios)


def test_grid_is_7_regimes_by_26_variants():
    for name in ("hopper-d128", "blackwell-d128"):
        scs = load_suite(name).scenarios
        regimes = _by_regime(scs)
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


def _exceptions_file(tmp_path, entry: str):
    f = tmp_path / "x.toml"
    f.write_text('name = "x"\n[[scenario]]\nq_lens = [8]\nheads_q = 2\nheads_kv = 2\n[[lint_exception]]\n' + entry)
    return str(f)


def test_lint_exceptions_are_read_and_checked(tmp_path):
    ok = 'scenarios = "prefill-*"\nchecks = ["sol_time"]\nreason = "tiny on purpose"\n'
    (exc,) = load_suite(_exceptions_file(tmp_path, ok)).lint_exceptions
    assert exc.covers("prefill-b1-sq8-skv8-hq2-hkv2-d128-bf16-causal", "sol_time")
    assert not exc.covers("prefill-b1-sq8-skv8-hq2-hkv2-d128-bf16-causal", "working_set")
    for bad, why in [(ok.replace("prefill-*", "decode-*"), "matches no scenario"),
                     (ok.replace('"sol_time"', '"speed"'), "checks"),
                     (ok.replace("tiny on purpose", " "), "written reason"),
                     (ok + "until = 2\n", "exactly")]:
        with pytest.raises(ScenarioError, match=why) as err:
            load_suite(_exceptions_file(tmp_path, bad))
        assert "x.toml:6:" in str(err.value)
