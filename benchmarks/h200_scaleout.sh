#!/usr/bin/env bash
# Issue 22's one-H200 acceptance, in phases that each fit one device call (< 10 minutes):
#   bash benchmarks/h200_scaleout.sh fa3h2h [OUT]   # ~3 minutes
#   bash benchmarks/h200_scaleout.sh hopper [OUT]   # resumes from OUT/hopper; BUDGET seconds (default 540) a call
# fa3h2h: a plain run against `--gpus all` on the one GPU (seed as candidate, vllm-fa3 baseline): the second's
#    wall time must be within 5 % of the first's, with the same verdicts.
# hopper: candidate + seed + vllm-fa3 (the fastest available baseline on most of it) at the default policy with
#    POLICY (default round_budget_ms=30: what it buys, before it becomes the default), with
#    SOLBENCH_TRACE: its wall time (summed over the calls that resume it), where it goes (trace_summary.py) and
#    the expected wall time on 8 GPUs from the per-scenario costs (scaling.py). The seed is the candidate, so
#    the run is also the A/A of the policy it ran under.
# Device calls: vLLM's FA3 comes from `../shared/device/stage-vllm-fa3` (carry .devwheels/vllm-fa3, 37 MiB, and
#    run its install.sh first in the same call); the tracked tree is ~34 MiB, so move reports/ and baselines/
#    (neither is read here) out of the working tree for that call to stay under the 64 MiB carry limit.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
solbench() { python3 -m solbench "$@"; }
OUT=${2:-${OUT:-reports/scaleout-h200}}
mkdir -p "$OUT"
SEED=reference_kernels/seed_attention.cu
case "${1:-}" in
  fa3h2h)
    t0=$(date +%s); solbench run "$SEED" --suite fa3-h2h --baselines vllm-fa3 --out /tmp/fa3h2h-plain --json > /dev/null
    t1=$(date +%s); solbench run "$SEED" --suite fa3-h2h --baselines vllm-fa3 --gpus all --out /tmp/fa3h2h-gpus-all --json > /dev/null
    t2=$(date +%s)
    echo "fa3-h2h plain $((t1 - t0)) s, --gpus all $((t2 - t1)) s (goal: at most 5 % more)" | tee "$OUT/fa3h2h.txt"
    python3 - /tmp <<'PY' | tee -a "$OUT/fa3h2h.txt"
import json, sys
a, b = (json.load(open(f"{sys.argv[1]}/fa3h2h-{n}/results.json")) for n in ("plain", "gpus-all"))
va = {o["scenario_id"]: o["status"] for o in a["outcomes"]}; vb = {o["scenario_id"]: o["status"] for o in b["outcomes"]}
wall = lambda r: sum((o.get("placement") or {}).get("wall_s") or 0 for o in r["outcomes"])
print("same verdicts:", va == vb, "| placements:", sorted({(o.get("placement") or {}).get("gpu_uuid") for o in b["outcomes"]}),
      f"| scenario wall sums: plain {wall(a):.1f} s, --gpus all {wall(b):.1f} s")
PY
    ;;
  hopper)
    dir=/tmp/scaleout-hopper; args=(--out "$dir")
    [ -d "$OUT/hopper" ] && [ ! -d "$dir" ] && cp -r "$OUT/hopper" "$dir"
    [ -f "$dir/results.json" ] && args=(--resume "$dir")
    SOLBENCH_TRACE="$OUT/trace-hopper.txt" timeout -s INT -k 20 "${BUDGET:-540}" \
      python3 -m solbench run "$SEED" --suite hopper --baselines vllm-fa3 --policy "${POLICY:-round_budget_ms=30}" "${args[@]}" --json > /dev/null 2>> "$OUT/hopper.log"
    mkdir -p "$OUT/hopper" && cp "$dir/results.json" "$OUT/hopper/results.json"
    python3 benchmarks/trace_summary.py "$OUT/trace-hopper.txt" | tail -8
    python3 benchmarks/scaling.py --suite hopper --measured "$dir/results.json" --runs "$dir/results.json" | tail -12 ;;
  *)
    sed -n '2,9p' "$0"; exit 2 ;;
esac
