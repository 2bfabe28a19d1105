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
