#!/usr/bin/env bash
# ../shared/device/stage-wheels cuts carry folders of up to 56 MiB; a device call carries the working tree too
# (22 MiB with the recorded runs, 2026-12-03), and 56 + 22 is over the 64 MiB a call takes ("the working tree
# is larger than 64 MiB"). This runs the same script with folders of at most LIMIT_MIB (default 38) and wheel
# pieces of at most 30 MiB: one or two calls more, each of which fits. stage-wheels empties .devwheels first, so
# run ../shared/device/stage-vllm-fa3 after this. It also stages jsonschema (solbench reads results files
# through it; the GPU machine lacks it, and `run --resume` there fails without it) in .devwheels/js: carry it
# in the last call, with `python3 -m pip install -q --no-index --no-deps --target /tmp/site .devwheels/js/*.whl`.
#
#   bash benchmarks/stage_wheels_small.sh fa3 fa4 cudnn        # then one device call per folder it prints
set -euo pipefail
shared="$(cd "$(dirname "$0")/../.." && pwd)/shared/device"
copy=$(mktemp)
trap 'rm -f "$copy"' EXIT
sed -e "s#^here=.*#here=$shared#" -e "s/^LIMIT = .*/LIMIT = ${LIMIT_MIB:-38} * 2**20/" \
    -e "s/^PART = .*/PART = ${PART_MIB:-30} * 2**20/" "$shared/stage-wheels" > "$copy"
grep -q "^LIMIT = ${LIMIT_MIB:-38} " "$copy" && grep -q "^PART = ${PART_MIB:-30} " "$copy" || { echo "stage-wheels changed shape: edit $0" >&2; exit 2; }
bash "$copy" "$@"
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d .devwheels/js jsonschema 2>&1 | grep -v WARN || true
echo ".devwheels/js: $(ls .devwheels/js | wc -l) wheels (jsonschema and what it needs, for Python 3.12)"
