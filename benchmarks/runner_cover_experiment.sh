#!/usr/bin/env bash
# Issue 18's runner A/A, one device call (~5 minutes): does the native runner's launch cover explain why it timed
# the seed 0.7 % slower than the Python host on `real` (p95 2.5 %, +13 % on an 80 us decode; session 2026-12-03f)?
# The same A/A (native vs Python host, native vs native) with the cover as it is, then with
# SOLBENCH_RUNNER_SPAN_COVER=1 (solbench/sandbox/native/runner.cu: the cover sized from the spin's launch to the
# call's return, its clock rate from CUPTI's record of the spin). If the second shows no bias beyond the A/A
# noise and no false flag, make it the runner's only behaviour.
#   bash benchmarks/runner_cover_experiment.sh [OUT]
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
out=${1:-${OUT:-reports/runner-cover}}
mkdir -p "$out"
for mode in events span; do
  if [ "$mode" = span ]; then export SOLBENCH_RUNNER_SPAN_COVER=1; else unset SOLBENCH_RUNNER_SPAN_COVER; fi
  echo "== cover: $mode"
  timeout -s INT "${BUDGET:-280}" python3 benchmarks/ab_experiment.py --runners --runner-pairs native-python,native-native \
    --suite "${SUITE:-real}" --skip-planted --out "/tmp/cover-$mode" 2>&1 | grep -v -i warn | tail -6 | tee "$out/aa-$mode.txt"
  for d in /tmp/cover-"$mode"/*/; do [ -f "$d/results.json" ] && gzip -c "$d/results.json" > "$out/$mode-$(basename "$d").json.gz"; done
done
# Per iteration on the 80 us decode that showed +13 %, in both modes: what the cover was asked, what the spin ran
# (events, and CUPTI's record in span mode), what it held, the call's launch time and the event time.
for mode in events span; do
  if [ "$mode" = span ]; then export SOLBENCH_RUNNER_SPAN_COVER=1; else unset SOLBENCH_RUNNER_SPAN_COVER; fi
  SOLBENCH_RUNNER_TRACE=1 timeout 120 python3 -m solbench run reference_kernels/seed_attention.cu --suite real \
    --filter decode-n64-tq64-tkv297044-L35c06b-hq64-hkv8-d64 --baselines none --runner native --seed-runner python \
    --out "/tmp/cover-trace-$mode" > /dev/null 2>&1
  python3 - "/tmp/cover-trace-$mode" "$mode" <<'PY' | tee -a "$out/trace-decode.txt"
import glob, json, re, statistics, sys
run, mode = sys.argv[1:]
rows = [dict(re.findall(r"(cover asked|spin|held|device|launch) ([\d.]+)", line))
        for f in glob.glob(f"{run}/worker-candidate*.log") for line in open(f) if line.startswith("iteration")]
med = {k: statistics.median(float(r[k]) for r in rows if k in r) for k in ("cover asked", "spin", "held", "launch", "device")}
o = json.load(open(f"{run}/results.json"))["outcomes"][0]
print(mode, o["status"], "seed ratio %.4f" % statistics.median(o["ratios"]["seed"]), len(rows), "iterations; medians ms:",
      " ".join(f"{k} {v:.4f}" for k, v in med.items()))
PY
done
