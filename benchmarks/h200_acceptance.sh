#!/usr/bin/env bash
# The GPU acceptance checks of the issues, in phases that each fit one device call (< 10 minutes).
# Run from the repository root on the GPU machine; results land in $OUT (or ./acceptance-out).
#
#   bash benchmarks/h200_acceptance.sh seed       # the seed vs the fp32 reference on six suites (quick policy)
#   bash benchmarks/h200_acceptance.sh gpu-tests  # every @gpu test except the baselines'
#   bash benchmarks/h200_acceptance.sh timing [ab_experiment.py flags]  # A/A and planted 2 % over hopper, within BUDGET
#   bash benchmarks/h200_acceptance.sh calibrate  # measured ceilings into $OUT/h200.toml (copy to roofline/measured/)
#   bash benchmarks/h200_acceptance.sh gates      # the seed against its own recorded run; a planted 5 % slowdown on paged KV
#   bash benchmarks/h200_acceptance.sh baselines  # baselines vs the reference, the FA3 probe (after staging wheels)
#   bash benchmarks/h200_acceptance.sh verify     # after staging: availability, the probe, the isolation tests
#   bash benchmarks/h200_acceptance.sh budget [S]  # seed + installed baselines on suite S (hopper) under the current
#        error budget; prints each implementation's worst error ratio to the emulated seed (benchmarks/budget_ratios.py)
#   bash benchmarks/h200_acceptance.sh numerics [FILTER]  # the numerics cheats of the Python corpus (and the honest
#        dense scaffold they share) on the hopper scenarios whose id contains FILTER (default: split-KV decode's
#        d64 variants, rows of 68k keys: peaked, fp16, sinks; its fp16 high-logit variant for no_max_subtraction)
#   bash benchmarks/h200_acceptance.sh record S.. # the seed + every available baseline on suites S.., into baselines/h200/
#        (TAG=flashinfer BASELINES=flashinfer-fa2,flashinfer-fa3: only those, into baselines/h200/S+flashinfer.json)
#
# RETRY_ERRORS=1: a resumed recording evaluates again the scenarios where the candidate crashed, ran out of
# memory or timed out, or a library failed in any way (its adapter may have been fixed since).
# BUDGET (seconds, default 540) bounds a phase that records: each run gets what is left and is stopped with
# SIGINT in time to copy its partial results.json to $OUT; the next call resumes from baselines/h200/S.json.
# FlashInfer kernels prebuilt without a GPU (benchmarks/prebuild_flashinfer.py) load from .fi-aot when the
# call carries it (carry [".fi-aot"]) instead of JIT-compiling for a minute each. `hopper`'s 34 modules (~65 MiB)
# are over the 64 MiB a call carries: pack them, `tar -cJf .fi-aot.tar.xz .fi-aot` (about a third), and carry
# [".fi-aot.tar.xz"]; the folder is unpacked here.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
[ ! -d .fi-aot ] && [ -f .fi-aot.tar.xz ] && tar -xJf .fi-aot.tar.xz
[ -d .fi-aot ] && export PYTHONPATH="$PWD/.fi-aot:$PYTHONPATH"
# torch.compile (Flex: minutes per feature mix) and Triton keep their on-disk caches in .compile-cache; with
# KEEP_COMPILE_CACHE=1 a phase packs it into $OUT/compile-cache.tgz.partNN (15 MiB pieces: the device sends
# back no file over 16 MiB). Here, `cat compile-cache.tgz.part* > .compile-cache.tgz` and carry
# [".compile-cache.tgz"] in a later call (the unpacked folder is over the carry limit): it is unpacked
# below, so the same feature mixes load instead of compiling again.
mkdir -p .compile-cache
[ -f .compile-cache.tgz ] && tar -xzf .compile-cache.tgz
export TORCHINDUCTOR_CACHE_DIR="$PWD/.compile-cache/inductor" TRITON_CACHE_DIR="$PWD/.compile-cache/triton"
out="${OUT:-acceptance-out}"
mkdir -p "$out"
seed=reference_kernels/seed_attention.cu
solbench() { python3 -m solbench "$@"; }
deadline=$((SECONDS + ${BUDGET:-540}))
[ "${KEEP_COMPILE_CACHE:-0}" = 1 ] && trap 'tar -cz .compile-cache | split -b 15M -d - "$out/compile-cache.tgz.part" && ls -la "$out"/compile-cache.tgz.part*' EXIT
# Recorded baseline runs: a shorter warm-up and launcher A/B, so 7 implementations over 182 scenarios fit
# the GPU budget; the results record it. Rounds of 5 samples, at least 4 (the defaults before rounds alternated their order), so
# the partly recorded hopper run can be resumed: --resume refuses any other policy.
RECORD_POLICY="${RECORD_POLICY:-warmup_ms=30,launcher_budget_ms=60,max_time_s=4,round_samples=5,min_rounds=4}"

record() {  # record SUITE...: seed as candidate + every available baseline, resuming baselines/h200/SUITE.json
  [ -n "${TAG:-}" ] && [ -z "${BASELINES:-}" ] && { echo "record: TAG=$TAG needs BASELINES (the libraries of that run)"; return 2; }
  for s in "$@"; do
    left=$((deadline - SECONDS))
    [ "$left" -lt 60 ] && { echo "== $s: no time left (resume it next call)"; continue; }
    name="$s${TAG:++$TAG}"  # TAG=flashinfer BASELINES=flashinfer-fa2,flashinfer-fa3: a run of more libraries, SUITE+TAG.json
    dir="/tmp/rec-$name"; args=(--out "$dir")
    [ -n "${BASELINES:-}" ] && args+=(--baselines "$BASELINES")
    if [ -f "baselines/h200/$name.json" ] && [ ! -f "$dir/results.json" ]; then
      mkdir -p "$dir"; cp "baselines/h200/$name.json" "$dir/results.json"
    fi
    policy="$RECORD_POLICY"
    if [ -f "$dir/results.json" ]; then  # resume with the recorded run's own baselines, whatever is installed now
      names=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(','.join(n for n in d['candidate']['implementations'] if n not in ('candidate', 'seed')) or 'none')" "$dir/results.json")
      # and its own policy (--resume refuses another): runs begun before a default changed keep theirs
      policy=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(','.join(f'{k}={v}' for k, v in d['policy'].items() if k != 'method'))" "$dir/results.json")
      args=(--resume "$dir" --baselines "$names")
      [ "${RETRY_ERRORS:-0}" = 1 ] && args+=(--retry-errors)  # again where something crashed / ran out of memory
    fi
    echo "== record $name (${left} s left)"
    SOLBENCH_TRACE="$out/trace-record.txt" timeout -s INT -k 20 $((left - 30)) python3 -m solbench run "$seed" --suite "$s" --seed none \
      --policy "$policy" "${args[@]}" >> "$out/log-record.txt" 2>&1
    rc=$?
    grep -s "^\[flex\] bind" "$dir/worker-flex.log" >> "$out/log-record.txt"  # Flex compile time per scenario
    echo "   exit $rc after $((SECONDS - (deadline - left))) s"
    [ "$rc" -eq 2 ] && { echo "   refused (see $out/log-record.txt): nothing new for $name"; continue; }
    copy="$out/${name/+/_}.json"  # SUITE_TAG.json: the device machine does not send back a name with '+' in it
    [ -f "$dir/results.json" ] && cp "$dir/results.json" "$copy" && \
      python3 benchmarks/recorded_summary.py "$copy" --focus sq16384
  done
  [ -f "$out/trace-record.txt" ] && python3 benchmarks/trace_summary.py "$out/trace-record.txt"
}

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
    # Interrupted experiments resume from /tmp/ab/<label>/ (or from ab/<label>/ carried back in the tree).
    shift
    [ -d ab ] && [ ! -d /tmp/ab ] && cp -r ab /tmp/ab
    left=$((deadline - SECONDS - 30))
    [ "$left" -lt 60 ] && { echo "timing: no time left (BUDGET)"; exit 0; }
    SOLBENCH_TRACE="$out/trace-ab.txt" timeout -s INT -k 20 "$left" python3 benchmarks/ab_experiment.py --suite hopper \
      --out /tmp/ab "$@" 2>&1 | grep -v -i warn | tail -8 | tee "$out/ab.txt"
    [ -f "$out/trace-ab.txt" ] && python3 benchmarks/trace_summary.py "$out/trace-ab.txt"
    for d in /tmp/ab/*/; do [ -f "$d/results.json" ] && cp "$d/results.json" "$out/ab-$(basename "$d").json"; done ;;
  calibrate)
    solbench calibrate --out "$out/h200.toml" 2>&1 | tail -25 ;;
  gates)
    # BASE: the seed's own recorded run (baselines/h200/real.json, made by `record real`), else a fresh one.
    base=baselines/h200/real.json
    if [ ! -f "$base" ]; then
      solbench run "$seed" --suite real --baselines none --seed none --policy "$RECORD_POLICY" --out /tmp/gate-base > /dev/null 2>&1
      base=/tmp/gate-base/results.json
    fi
    solbench run "$seed" --suite real --baselines none --seed none --policy "$RECORD_POLICY" --out /tmp/gate-again > /dev/null 2>&1
    solbench run benchmarks/planted_slowdown.cu --flag=-DSLOWDOWN=0.05 --flag=-DSLOWDOWN_PAGED_ONLY \
      --suite real --baselines none --seed none --policy "$RECORD_POLICY" --out /tmp/gate-slow > /dev/null 2>&1
    echo "== seed against its own recorded run $base (expect PASS)"
    solbench check /tmp/gate-again/results.json --against "$base" | tail -4
    echo "== planted 5 % slowdown on paged scenarios (expect FAIL on exactly the paged ones)"
    solbench check /tmp/gate-slow/results.json --against "$base" --json > "$out/gate-slow.json"
    solbench check /tmp/gate-slow/results.json --against "$base" | tail -30
    cp /tmp/gate-again/results.json "$out/gate-again.json"; cp /tmp/gate-slow/results.json "$out/gate-slow-results.json" ;;
  baselines)
    python3 -m pytest -q -m gpu --timeout 300 tests/test_baselines_gpu.py 2>&1 | tee "$out/baselines-gpu.log" | tail -15
    python3 benchmarks/baselines_probe.py 2>&1 | tee "$out/baselines-probe.txt" | tail -25 ;;
  verify)
    solbench baselines --suite hopper 2>&1 | tail -15
    timeout 200 python3 benchmarks/baselines_probe.py --baselines "${PROBE:-fa3,fa4,cudnn,torch-cudnn,sdpa-flash}" \
      2>&1 | grep -v -i warn | tee "$out/probe.txt" | tail -22
    timeout 200 python3 -m pytest -q -m gpu --timeout 90 tests/ --ignore=tests/test_baselines_gpu.py -k "not calibrate" \
      2>&1 | tee "$out/gpu-tests.log" | tail -6 ;;
  budget)
    s="${2:-hopper}"; left=$((deadline - SECONDS - 30))
    [ -f "/tmp/budget-$s/results.json" ] && resume=(--resume "/tmp/budget-$s") || resume=(--out "/tmp/budget-$s")
    timeout -s INT -k 20 "$left" python3 -m solbench run "$seed" --suite "$s" --seed none --quick "${resume[@]}" \
      > "$out/log-budget-$s.txt" 2>&1
    echo "   exit $? (a stopped run resumes on the next call)"
    cp "/tmp/budget-$s/results.json" "$out/budget-$s.json"
    python3 benchmarks/budget_ratios.py "$out/budget-$s.json" | tee "$out/budget-ratios-$s.txt" ;;
  numerics)
    regime=splitkvdecode-n8-tq8-tkv548864-L9f7f39
    for c in _dense fp16_accumulation ignores_sinks skips_blocks no_max_subtraction; do
      f="${2:-$regime-hq64-hkv8-d64}"
      [ "$c" = no_max_subtraction ] && f="${2:-$regime-hq32-hkv8-d128-fp16}"
      python3 -m solbench run "reference_kernels/adversarial/python/$c.py" --suite hopper --filter "$f" --baselines none \
        --seed none --quick --json --out "/tmp/numerics-$c" > "/tmp/numerics-$c.json" 2> "/tmp/numerics-$c.log"
      python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], d.get('status_counts'), [(r['scenario'].split('page64-')[-1], r['status']) for r in d.get('failed', [])])" \
        "/tmp/numerics-$c.json" "$c" 2>&1 | tail -1 | tee -a "$out/numerics.txt"
    done ;;
  record)
    shift; record "$@" ;;
  *)
    sed -n '2,10p' "$0"; exit 2 ;;
esac
