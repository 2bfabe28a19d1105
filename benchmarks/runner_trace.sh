#!/usr/bin/env bash
# The native runner's timed iterations, one line each (SOLBENCH_RUNNER_TRACE), for the seed and given
# candidates on the first smoke scenarios, under --quick and the default policy; then the seed's sample
# medians through both runners (and the native one without its settle kernel). Run on the GPU machine from the repository root: what the cover, the open
# mark and the events measure, per iteration, when a timing result looks wrong.
#   bash benchmarks/runner_trace.sh [CANDIDATE.cu ...]
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
n=${SCENARIOS:-2}
for f in reference_kernels/seed_attention.cu "$@"; do
  for policy in quick default; do
    out="/tmp/trace-$policy-$(basename "$f" .cu)"
    SOLBENCH_RUNNER_TRACE=1 python3 -m solbench run "$f" --suite smoke --baselines none --seed none --runner native \
      --max-scenarios "$n" --out "$out" $([ "$policy" = quick ] && echo --quick) > /dev/null 2>&1
    echo "== $(basename "$f") $policy: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print([(o['status'], o['reason'][:80]) for o in d['outcomes']])" "$out/results.json")"
    grep -h "^iteration" "$out"/worker-candidate*.log | tail -n "${LINES_EACH:-6}"
  done
done
for runner in native native-nosettle python; do
  [ "$runner" = native-nosettle ] && export SOLBENCH_RUNNER_NO_SETTLE=1 || unset SOLBENCH_RUNNER_NO_SETTLE
  python3 -m solbench run reference_kernels/seed_attention.cu --suite smoke --baselines none --seed none \
    --runner "${runner%-nosettle}" --max-scenarios "$n" --out "/tmp/medians-$runner" > /dev/null 2>&1
  python3 - "/tmp/medians-$runner/results.json" "$runner" <<'PY'
import json, statistics, sys
d = json.load(open(sys.argv[1]))
for o in d["outcomes"]:
    m = o["measurements"]["candidate"]
    print(sys.argv[2], o["scenario_id"][:48], o["status"], "median ms %.4f" % statistics.median(m["samples_ms"]),
          "kernels", [k["duration_ms"] for k in m.get("telemetry", {}).get("kernels", [])][:3])
PY
done
