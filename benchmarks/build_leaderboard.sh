#!/usr/bin/env bash
# Rebuild the committed H200 leaderboard from the recorded runs under baselines/h200/: the seed (each run's
# candidate) and every baseline library timed in it are the entries (solbench/leaderboard/recorded.py; a
# library timed in several runs of a suite enters once, from the run timing the most libraries); print
# the boards and export the static page to reports/leaderboard-h200/. Needs no GPU.
#
#   bash benchmarks/build_leaderboard.sh [SUITE]      (default: every recorded suite)
set -euo pipefail
cd "$(dirname "$0")/.."
only=(); [ $# -gt 0 ] && only=(--suite "$1")
python3 -m solbench leaderboard show --recorded --arch h200 "${only[@]}"
python3 -m solbench leaderboard export --recorded --arch h200 "${only[@]}" --html reports/leaderboard-h200
