"""Features bite by default (issue 39, class 8): a user's suite that turns on sinks, a softcap or fp16 and names no
input profile draws inputs where a kernel ignoring the feature (or accumulating in fp16) fails every scenario,
while honest kernels pass with their margin; `solbench run` warns, once per feature, about the scenarios where
one does not bite (supervisor/bite.py), as `solbench lint` finds."""

import dataclasses

import pytest

torch = pytest.importorskip("torch")

from solbench.core.model import Status  # noqa: E402
from solbench.core.scenario import Scenario  # noqa: E402
from solbench.core.suites import load_suite  # noqa: E402
from solbench.sandbox.impls import PythonImpl  # noqa: E402
from solbench.supervisor import bite  # noqa: E402
from solbench.supervisor.inputs import PROFILES, drawn_profile  # noqa: E402
from tests.test_numerics_cheats import HONEST, _p_rounded, _verdict  # noqa: E402
from tests.test_trust_cpu import CORPUS  # noqa: E402

SHAPES = [dict(regime="decode", q_lens=(1, 1, 1), kv_lens=(40, 300, 2000)),
          dict(regime="decode", q_lens=(1, 1), kv_lens=(8000, 3000)),
          dict(regime="chunked_prefill", q_lens=(64,), kv_lens=(4096,))]
"""A user's three sinks scenarios: under the old default draw (`plain`), ignoring the sinks passed 2 of 3."""
FP16 = [Scenario(heads_q=4, heads_kv=2, dtype="fp16", **shape) for shape in SHAPES + [
    dict(q_lens=(16,), kv_lens=(16,)), dict(q_lens=(33, 70, 1), kv_lens=(33, 70, 1), causal=False),
    dict(q_lens=(256,), kv_lens=(256,), head_dim_qk=64, head_dim_v=64)]]
"""Six fp16 scenarios, short rows among them (16 keys: under `plain` fp16 accumulation stayed in the budget)."""


def _forward(path):
    return PythonImpl(str(path)).module.forward


def _passing(name, scenarios):
    """The ids of the scenarios on which the corpus cheat `name` passes."""
    return [sc.id for sc in scenarios if not _verdict(_forward(CORPUS / name), sc).status.is_failure]


def test_no_profile_draws_what_makes_each_feature_bite_and_a_named_one_is_kept():
    plain = Scenario(q_lens=(8,), kv_lens=(8,), heads_q=2, heads_kv=1)
    assert drawn_profile(plain) == PROFILES["plain"] == PROFILES["default"]
    assert drawn_profile(dataclasses.replace(plain, sinks=True)).sinks_at_lse
    assert drawn_profile(dataclasses.replace(plain, dtype="fp16")) == PROFILES["high_logits"]
    assert drawn_profile(dataclasses.replace(plain, softcap=30.0)).capped_logit_std == 11.0
    for name in ("plain", "peaked", "sinks_lse"):
        sc = dataclasses.replace(plain, sinks=True, dtype="fp16", input_profile=name)
        assert drawn_profile(sc) == PROFILES[name]


def test_ignoring_sinks_fails_every_scenario_of_a_suite_that_names_no_profile():
    sinks = [Scenario(heads_q=8, heads_kv=2, sinks=True, **shape) for shape in SHAPES]
    assert not _passing("ignores_sinks.py", sinks)
    plain = [dataclasses.replace(sc, input_profile="plain") for sc in sinks]
    assert len(_passing("ignores_sinks.py", plain)) >= 2  # what the issue found: at most the 40-key row caught it
    honest = _forward(HONEST)
    for sc in sinks:
        v = _verdict(honest, sc)
        assert v.status is Status.PASSED and v.error.mean_abs < 1.5 * v.error.seed_mean_abs, (sc.id, v.error)


def test_fp16_accumulation_fails_every_fp16_scenario_that_names_no_profile():
    cheat = _forward(CORPUS / "fp16_accumulation.py")
    for sc in FP16:  # the budget is 3x the seed's mean error; `plain` short rows sat at ~3x
        v = _verdict(cheat, sc)
        assert v.status is Status.MISMATCH and v.error.mean_abs > 8 * v.error.seed_mean_abs, (sc.id, v.error)
    honest = _forward(HONEST)
    for sc in FP16:
        v = _verdict(honest, sc)
        assert v.status is Status.PASSED and v.error.mean_abs < 1.5 * v.error.seed_mean_abs, (sc.id, v.error)
    for sc in (FP16[0], FP16[1], FP16[4]):  # decode and non-causal: what _p_rounded computes (it masks nothing)
        v = _verdict(_p_rounded, sc)  # P rounded to fp16 before P V, as FA2/FA3 do
        assert v.status is Status.PASSED and v.error.mean_abs < 2 * v.error.seed_mean_abs, (sc.id, v.error)


def test_a_softcap_that_names_no_profile_is_reached_by_its_scores():
    capped = [Scenario(heads_q=4, heads_kv=2, softcap=cap, **shape) for shape in SHAPES for cap in (30.0, 50.0)]
    assert not _passing("cubic_softcap.py", capped)
    honest = _forward(HONEST)
    assert all(_verdict(honest, sc).status is Status.PASSED for sc in capped)


def _suite(tmp_path, profiles):
    body = ['name = "user"\n']
    for profile in profiles:
        for shape in SHAPES:
            lens = "".join(f"{k} = {list(v) if isinstance(v, tuple) else repr(v)}\n".replace("'", '"')
                           for k, v in shape.items())
            body.append(f"[[scenario]]\n{lens}heads_q = 4\nheads_kv = 2\nsinks = true\n"
                        + (f'input_profile = "{profile}"\n' if profile else ""))
    path = tmp_path / "user.toml"
    path.write_text("".join(body))
    return path


def test_run_warns_once_for_a_feature_that_does_not_bite_and_the_cheat_fails_where_it_does(tmp_path, capsys,
                                                                                           monkeypatch):
    """One CPU run of the ignores_sinks cheat on six sinks scenarios: three that name no profile (each a mismatch)
    and the same three drawn `plain` (ignoring the sinks passes two): stderr has one line about the sinks, naming
    2 of 6 and the fix; a second look at the suite answers from the cache."""
    from solbench.front import cli

    monkeypatch.setenv("SOLBENCH_CACHE", str(tmp_path / "cache"))
    suite = _suite(tmp_path, ["", "plain"])
    code = cli.main(["run", str(CORPUS / "ignores_sinks.py"), "--suite", str(suite), "--device", "cpu", "--quick",
                     "--seed", "none", "--out", str(tmp_path / "run"), "--json"])
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if "does not bite" in line]
    assert len(warnings) == 1 and "sinks does not bite in 2 of the 6 scenario(s)" in warnings[0], err
    assert "sinks_lse" in warnings[0] and "input_profile unset" in warnings[0]
    from solbench.supervisor.run_files import load_run

    result = load_run(tmp_path / "run" / "results.json")
    status = {o.scenario_id: o.status for o in result.outcomes}
    ids = [sc.id for sc in load_suite(str(suite)).scenarios]
    assert code == 1 and all(status[i] is Status.MISMATCH for i in ids[:3]), status
    # drawn `plain`, ignoring the sinks passes where the lint said (its draw is fixed; the run's is fresh, so the
    # borderline third may pass too)
    assert sum(status[i] is Status.PASSED for i in ids[3:]) >= 2
    assert len(list((tmp_path / "cache" / "lint").glob("*.json"))) == 6
    monkeypatch.setattr("solbench.supervisor.lint.feature_flags", lambda sc: pytest.fail("not from the cache"))
    assert bite.warning_lines(load_suite(str(suite))) == [warnings[0]]


def test_a_suite_whose_features_bite_gets_no_warning_and_excused_flags_are_not_repeated(tmp_path, monkeypatch):
    monkeypatch.setenv("SOLBENCH_CACHE", str(tmp_path / "cache"))
    assert bite.warning_lines(load_suite(str(_suite(tmp_path, [""])))) == []
    excused = _suite(tmp_path, ["plain"])
    excused.write_text(excused.read_text() + '[[lint_exception]]\nscenarios = "decode-*"\nchecks = ["sinks"]\n'
                                             'reason = "kept as the model draws them"\n')
    lines = bite.warning_lines(load_suite(str(excused)))
    assert len(lines) == 1 and "in 1 of the 3 scenario(s)" in lines[0]  # the chunked one is not excused
