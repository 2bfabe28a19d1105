#!/usr/bin/env bash
# The GPU acceptance checks of the issues, in phases that each fit one device call (< 10 minutes).
# Run from the repository root on the GPU machine; results land in $OUT (or ./acceptance-out).
#
#   bash benchmarks/h200_acceptance.sh seed       # the seed vs the fp32 reference on six suites (quick policy)
#   bash benchmarks/h200_acceptance.sh gpu-tests  # every @gpu test except the baselines'
#   bash benchmarks/h200_acceptance.sh timing     # A/A and a planted 2 % slowdown over hopper (+ fa3 A/A if installed)
#   bash benchmarks/h200_acceptance.sh gates      # the seed against its own recorded run; a planted 5 % slowdown on paged KV
#   bash benchmarks/h200_acceptance.sh baselines  # baselines vs the reference, the FA3 probe (after staging wheels)
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
out="${OUT:-acceptance-out}"
mkdir -p "$out"
seed=reference_kernels/seed_attention.cu
solbench() { python3 -m solbench "$@"; }

case "${1:-}" in
  seed)
    for s in smoke edge rtx3080-mask real fa3-h2h hopper; do
      solbench run "$seed" --suite "$s" --seed none --baselines none --quick --out "/tmp/seed-$s" > "/tmp/seed-$s.log" 2>&1
      grep -E "^suite|^FAILED" "/tmp/seed-$s.log" | head -5
      cp "/tmp/seed-$s/results.json" "$out/seed-$s.json"
    done ;;
  gpu-tests)
    python3 -m pytest -q -m gpu --timeout 120 tests/ --ignore=tests/test_baselines_gpu.py 2>&1 | tee "$out/gpu-tests.log" | tail -15 ;;
  timing)
    fast=()
    python3 -c "import importlib.util as u, sys; sys.exit(0 if u.find_spec('fa3_fwd') or u.find_spec('flash_attn_interface') else 1)" && fast=(--fast fa3)
    python3 benchmarks/ab_experiment.py --suite hopper "${fast[@]}" --out /tmp/ab 2>&1 | grep -v -i warn | tail -8 | tee "$out/ab.txt" ;;
  gates)
    solbench run "$seed" --suite real --baselines none --seed none --out /tmp/gate-base > /dev/null 2>&1
    solbench run "$seed" --suite real --baselines none --seed none --out /tmp/gate-again > /dev/null 2>&1
    solbench run benchmarks/planted_slowdown.cu --flag=-DSLOWDOWN=0.05 --flag=-DSLOWDOWN_PAGED_ONLY \
      --suite real --baselines none --seed none --out /tmp/gate-slow > /dev/null 2>&1
    echo "== seed against its own recorded run (expect PASS)"
    solbench check /tmp/gate-again/results.json --against /tmp/gate-base/results.json | tail -3
    echo "== planted 5 % slowdown on paged scenarios (expect FAIL on exactly the paged ones)"
    solbench check /tmp/gate-slow/results.json --against /tmp/gate-base/results.json --json > "$out/gate-slow.json"
    solbench check /tmp/gate-slow/results.json --against /tmp/gate-base/results.json | tail -20
    cp /tmp/gate-base/results.json "$out/gate-base.json" ;;
  baselines)
    python3 -m pytest -q -m gpu --timeout 300 tests/test_baselines_gpu.py 2>&1 | tee "$out/baselines-gpu.log" | tail -15
    python3 benchmarks/baselines_probe.py 2>&1 | tee "$out/baselines-probe.txt" | tail -25 ;;
  *)
    sed -n '2,10p' "$0"; exit 2 ;;
esac
