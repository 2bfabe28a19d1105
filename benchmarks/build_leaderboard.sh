#!/usr/bin/env bash
# Rebuild the committed H200 leaderboard from the recorded runs under baselines/h200/: the seed (each run's
# candidate) and every baseline library timed in it become entries; then print the boards and export the
# static page to reports/leaderboard-h200/. Needs no GPU.
#
#   bash benchmarks/build_leaderboard.sh [SUITE...]      (default: every recorded suite)
set -euo pipefail
cd "$(dirname "$0")/.."
db="${DB:-/tmp/solbench-leaderboard-h200.sqlite}"
rm -f "$db"
suites=("$@"); [ ${#suites[@]} -eq 0 ] && suites=(fa3-h2h hopper real rtx3080-mask)
impls_of() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join(sorted({k for o in d['outcomes'] for k in o['measurements'] if k != 'candidate'})))" "$1"; }
for s in "${suites[@]}"; do
  run="baselines/h200/$s.json"
  [ -f "$run" ] || { echo "no recorded run $run" >&2; continue; }
  python3 -m solbench leaderboard add "$run" --db "$db" --impl candidate --name seed --author "solbench recorded run" > /dev/null
  # SUITE+TAG.json: more libraries timed beside the seed in a run of their own; their entries join the board
  # (the denominators stay with the run of the most libraries, see solbench/leaderboard/rank.py).
  added=" "
  for r in "$run" baselines/h200/"$s"+*.json; do
    [ -f "$r" ] || continue
    for impl in $(impls_of "$r"); do
      case "$added" in *" $impl "*) echo "$r: $impl is already on the $s board; not added again" >&2; continue ;; esac
      python3 -m solbench leaderboard add "$r" --db "$db" --impl "$impl" --name "$impl" --author "solbench recorded run" > /dev/null
      added="$added$impl "
    done
  done
done
python3 -m solbench leaderboard show --db "$db" --arch h200
python3 -m solbench leaderboard export --db "$db" --arch h200 --html reports/leaderboard-h200
