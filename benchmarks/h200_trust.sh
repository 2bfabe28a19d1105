#!/usr/bin/env bash
# The trust boundary's GPU acceptance (issue 18), in phases that each fit one device call.
# Run from the repository root on the GPU machine; results land in $OUT (or ./trust-out).
#
#   bash benchmarks/h200_trust.sh accept       # one call (~500 s): corpus, then honest real rtx3080-mask (150 s a
#        run, 330 s in all), then the Python host on smoke with its sandbox words, /dev/shm and SysV segments after
#   bash benchmarks/h200_trust.sh smoke        # the native runner: builds, CUPTI, the seed on smoke through it
#   bash benchmarks/h200_trust.sh corpus       # every .cu cheat of reference_kernels/adversarial gets its status
#   bash benchmarks/h200_trust.sh aa [FLAGS]   # the seed through the native runner vs the Python host (A/A)
#   bash benchmarks/h200_trust.sh honest S..   # the honest examples vs the seed, and the seed alone, pass smoke and S..
#        through the native runner (no false positives)
#   bash benchmarks/h200_trust.sh diag FILE..  # each candidate through both runners, with its CUPTI numbers
#   bash benchmarks/h200_trust.sh loop [SUITE]  # the native runner's loop cost a call, its CUPTI records taken once
#        a round (the default) and before and after every call (SOLBENCH_RUNNER_TAKE=call): the seed against
#        itself, native vs native, with each side's unexplained ms per call, the A/A geomean and the flags
#   bash benchmarks/h200_trust.sh clock [FILTER] [BASELINES]  # the seed through the native runner beside Python-hosted
#        libraries only (--seed none), on the hopper scenarios where its ~1-2 ms calls once read as hidden_work
#        (default wl127-sink, vllm-fa3), with each implementation's unexplained ms per call (SOLBENCH_TRACE)
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
out="${OUT:-trust-out}"
mkdir -p "$out"
seed=reference_kernels/seed_attention.cu
solbench() { python3 -m solbench "$@"; }

prebuild() {  # every .cu in parallel into the build cache, so the tests only load them
  for f in "$@"; do solbench build "$f" --arch h200 > "/tmp/build-$(basename "$f").log" 2>&1 & done
  wait
}

case "${1:-}" in
  accept)
    t0=$(date +%s)
    bash "$0" corpus 2>&1 | tail -45
    echo "corpus done at $(( $(date +%s) - t0 )) s"
    HONEST_BUDGET=150 timeout 330 bash "$0" honest real rtx3080-mask 2>&1 | tail -30
    echo "honest done at $(( $(date +%s) - t0 )) s"
    solbench run reference_kernels/torch_attention.py --suite smoke --baselines none --quick --out /tmp/py-smoke \
      > /tmp/py-smoke.log 2>&1
    echo "python host smoke: exit $?"; grep -E "^suite|passed|FAILED" /tmp/py-smoke.log | head -3
    python3 -c "import json; d=json.load(open('/tmp/py-smoke/results.json')); print(d['outcomes'][0]['measurements']['candidate']['telemetry'].get('sandbox'))"
    ls -la /dev/shm | head; ipcs -m 2>/dev/null | head
    echo "all done at $(( $(date +%s) - t0 )) s" ;;
  smoke)
    python3 -c "from solbench.build.native import build_runner, cupti_library; print('runner', build_runner('h200')); print('cupti', cupti_library())"
    solbench run "$seed" --suite smoke --baselines none --seed none --quick --runner native --json --out /tmp/native-smoke \
      > "$out/native-smoke.json" 2> "$out/native-smoke.log"
    echo "exit $?"; tail -3 "$out/native-smoke.log"
    python3 - "$out/native-smoke.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print({k: d.get(k) for k in ("ok", "exit_code", "error", "status_counts")})
for row in d.get("failed", [])[:12]:
    print(row["scenario"], row["status"], (row["reason"] or "")[:160])
PY
    head -c 1500 /tmp/native-smoke/worker-candidate.log; echo
    python3 -m pytest -q -m gpu tests/test_native_runner.py tests/test_seed_gpu.py tests/test_hidden_reads.py -x 2>&1 | tail -3 ;;
  corpus)
    # a vendor BLAS for dlopens_cublas.cu to load (the toolkit's, or torch's wheel's)
    cublas=$(find / -name 'libcublas.so*' -not -path '/proc/*' 2>/dev/null | head -1)
    export SOLBENCH_ADVERSARY_CUBLAS="$cublas"
    echo "cublas for the dlopen cheat: ${cublas:-none found}"
    prebuild reference_kernels/adversarial/*.cu reference_kernels/examples/*.cu
    timeout 420 python3 -m pytest -q -m gpu tests/test_trust_gpu.py ${K:+-k "$K"} --basetemp=/tmp/corpus-pytest 2>&1 \
      | tee "$out/corpus.log" | tail -25
    for f in /tmp/corpus-pytest/*/results.json; do
      python3 - "$f" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for o in d["outcomes"][:2]:
    m = o.get("measurements", {}).get("candidate") or {}
    t = m.get("telemetry", {})
    count = {k: (t.get("cupti") or {}).get(k) for k in ("launches", "unrecorded", "foreign_launches", "dropped_records")}
    runner = t.get("runner") or {}
    print(sys.argv[1].split("/")[3][:50], o["status"], (o.get("reason") or "")[:100], m.get("flags"), count,
          "launcher", {k: (t.get("launcher") or {}).get(k) for k in ("unrecorded", "graph_error")},
          "cupti", runner.get("cupti"), "count", runner.get("launch_count"), (t.get("sandbox") or "")[-90:])
PY
    done 2>&1 | head -40 ;;
  diag)  # FILES: the cheats to run through both runners, with each one's measurement telemetry
    shift
    python3 - <<'PY'
import os, subprocess
from solbench.build.native import build_runner, cupti_library
from solbench.build.nvcc import build
so = build("reference_kernels/seed_attention.cu", "h200").so_path
env = dict(os.environ, SOLBENCH_CUPTI_LIB=cupti_library() or "")
p = subprocess.run([str(build_runner("h200")), f"so={so}", "cupti=1"], input="quit\n", capture_output=True,
                   text=True, env=env, timeout=60)
print("runner says:", p.stdout[:1500], "| stderr:", p.stderr[-800:], "| rc", p.returncode)
PY
    grep -rl "cupti_activity.h" /usr/local/cuda*/include /usr/local/cuda*/extras 2>/dev/null | head -3
    for f in "$@"; do
      for r in ${RUNNERS:-native python}; do
        solbench run "$f" --suite smoke --baselines none --seed none --quick --runner "$r" --max-scenarios 3 \
          --out "/tmp/diag-$r-$(basename "$f")" > /dev/null 2>&1
        python3 - "/tmp/diag-$r-$(basename "$f")/results.json" "$r" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for o in d["outcomes"]:
    m = o.get("measurements", {}).get("candidate") or {}
    t = m.get("telemetry", {})
    print(sys.argv[2], o["scenario_id"][:40], o["status"], (o.get("reason") or "")[:90], m.get("flags"),
          "device_ms", [round(x, 4) for x in m.get("samples_ms", [])[:8]],
          json.dumps(t.get("kernels"))[:200], t.get("stray_kernels"), json.dumps(t.get("cupti")))
PY
      done
    done ;;
  aa)
    shift
    timeout -s INT "${AA_BUDGET:-540}" python3 benchmarks/ab_experiment.py --runners --suite "${SUITE:-real}" --out /tmp/ab-runners \
      --skip-planted "$@" 2>&1 | grep -v -i warn | tail -12 | tee "$out/aa-runners.txt"
    for d in /tmp/ab-runners/*/; do [ -f "$d/results.json" ] && cp "$d/results.json" "$out/$(basename "$d").json"; done ;;
  honest)  # each honest example against the seed on smoke and on every suite S.., then the seed alone on S..
    shift
    for s in smoke "$@"; do
      for f in reference_kernels/examples/retiled_seed.cu reference_kernels/examples/workspace_seed.cu reference_kernels/examples/graph_seed.cu; do
        name="$(basename "$f" .cu)-$s"
        timeout -s INT "${HONEST_BUDGET:-300}" python3 -m solbench run "$f" --suite "$s" --baselines none --quick \
          --runner native --json --out "/tmp/honest-$name" > "$out/honest-$name.json" 2> "/tmp/honest-$name.log"
        echo "== $(basename "$f") vs the seed on $s: exit $?"
        python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d.get('status_counts'), [(s['comparator'], s['geomean'], s['ci95']) for s in d.get('scores', [])], [(r['scenario'], r['status'], (r.get('reason') or '')[:120]) for r in d.get('failed', [])][:6])" "$out/honest-$name.json" 2>&1 | tail -1
      done
    done
    for s in "$@"; do
      timeout -s INT "${HONEST_BUDGET:-300}" python3 -m solbench run "$seed" --suite "$s" --baselines none --seed none --quick --runner native --out "/tmp/honest-$s" \
        > "/tmp/honest-$s.log" 2>&1
      echo "== the seed alone on $s: exit $?"; grep -E "^suite|FAILED|passed" "/tmp/honest-$s.log" | head -4
      cp "/tmp/honest-$s/results.json" "$out/honest-seed-$s.json"
    done ;;
  loop)
    for take in round call; do
      [ "$take" = call ] && export SOLBENCH_RUNNER_TAKE=call || unset SOLBENCH_RUNNER_TAKE
      SOLBENCH_RUNNER_TRACE=1 SOLBENCH_TRACE="$out/trace-loop-$take.txt" solbench run "$seed" --suite "${2:-real}" \
        --runner native --quick --json --out "/tmp/loop-$take" > "$out/loop-$take.json" 2> "/tmp/loop-$take.log"
      python3 - "$out/loop-$take.json" "/tmp/loop-$take/results.json" "$take" <<'PY'
import json, statistics, sys
s, d = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
flags = sorted({f for o in d["outcomes"] for m in o.get("measurements", {}).values() for f in m.get("flags", [])})
print(f"take {sys.argv[3]}: {s.get('status_counts')} scores {[(x['comparator'], x['geomean'], x['ci95']) for x in s.get('scores', [])]} flags {flags}")
for r in s.get("failed", [])[:6]:
    print("  ", r["scenario"][:60], r["status"], (r["reason"] or "")[:140])
PY
      python3 benchmarks/trace_summary.py "$out/trace-loop-$take.txt" | grep "^clock:"
      grep -h "^round:" /tmp/loop-$take/worker-candidate*.log | sort | uniq -c | sort -rn | head -3
      grep -h "^iteration margins" /tmp/loop-$take/worker-candidate*.log | awk '{print $5, $12}' | sort -n | head -2
    done ;;
  clock)
    SOLBENCH_TRACE="$out/trace-clock.txt" solbench run "$seed" --suite hopper --filter "${2:-wl127-sink}" \
      --baselines "${3:-vllm-fa3}" --seed none --policy "warmup_ms=30,launcher_budget_ms=60,max_time_s=4,round_samples=5,min_rounds=4" \
      --json --out /tmp/clock > "$out/clock.json" 2> /tmp/clock.log
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('clock:', d.get('status_counts'), [(r['scenario'], r['status']) for r in d.get('failed', [])])" "$out/clock.json"
    grep "solbench clock" "$out/trace-clock.txt" | tail -16
    python3 benchmarks/trace_summary.py "$out/trace-clock.txt" | grep "^clock:" ;;  # sets NATIVE_BETWEEN_CAP_MS
  *)
    sed -n '2,10p' "$0"; exit 2 ;;
esac
