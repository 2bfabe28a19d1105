#!/usr/bin/env bash
# The GPU checks of the supervisor's shared memory (tests/test_ipc_gpu.py) in one device call of under 4
# minutes: every shared tensor is a driver allocation of its own (cuMemCreate, exported as a POSIX fd), a
# worker that maps one reaches nothing past it, a child cannot open an allocation it was not sent (fd numbers
# near its own, /proc/<supervisor>/fd/N), a mapping kept past the supervisor's free never sees later tensors,
# and a worker that dies mid-check (os._exit) leaves nothing allocated, alone and in a smoke run beside the
# seed (native runner, which maps the fds it is sent). Then benchmarks/ipc_handle_probe.py: legacy handles
# forged (for exported and never-exported memory) and the fd path, one line each, OPENED or refused.
# Run from the repository root on the GPU machine; the log and JUnit XML land in $OUT (or ./ipc-out).
#
#   bash benchmarks/h200_ipc_check.sh          # prints a pass/fail table; exit status 0 when all passed
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
out="${OUT:-ipc-out}"
mkdir -p "$out"
started=$SECONDS

# The native runner and the seed into the build cache side by side, so the smoke run only loads them.
python3 -c "from solbench.build.native import build_runner; print(build_runner('h200'))" > "$out/build-runner.log" 2>&1 &
python3 -m solbench build reference_kernels/seed_attention.cu --arch h200 > "$out/build-seed.log" 2>&1 &
wait
echo "builds: $((SECONDS - started)) s (logs in $out/build-*.log)"

# What an allocation of its own costs: a copy of a smoke scenario's inputs made and freed (cuMemCreate and
# its mapping, the slack's memset, the copy, unmap and release), per copy and per tensor.
timeout 60 python3 - <<'PY' 2>&1 | tail -2
import gc, time
import torch
from solbench.core.suites import load_suite
from solbench.gpu import device_memory
from solbench.supervisor.inputs import clone_inputs, make_inputs
inp = make_inputs(load_suite("smoke").scenarios[0], device="cuda")
tensors = sum(1 for v in vars(inp).values() if isinstance(v, torch.Tensor))
clone_inputs(inp); gc.collect(); torch.cuda.synchronize()
start, reps = time.perf_counter(), 20
for _ in range(reps):
    copy = clone_inputs(inp)
    del copy
torch.cuda.synchronize()
ms = (time.perf_counter() - start) * 1e3 / reps
print(f"own allocations: {ms:.2f} ms per copy of {tensors} tensors made and freed ({ms / tensors * 1e3:.0f} us a tensor); "
      f"live after: {len(device_memory.live()) - tensors}")
PY

timeout 150 python3 -m pytest -q -m gpu tests/test_ipc_gpu.py -p no:cacheprovider --junitxml="$out/ipc.xml" \
  > "$out/ipc.log" 2>&1
rc=$?
[ "$rc" = 124 ] && echo "pytest ran out of its 150 s"

python3 - "$out/ipc.xml" <<'PY'
import sys
import xml.etree.ElementTree as ET

try:
    cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
except (OSError, ET.ParseError) as exc:
    sys.exit(f"no JUnit report: {exc}")
print(f"{'test (tests/test_ipc_gpu.py)':<76} {'result':<7} {'s':>6}")
for case in cases:
    bad = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
    result = {None: "PASS", "failure": "FAIL", "error": "ERROR", "skipped": "SKIP"}[None if bad is None else bad.tag]
    print(f"{case.get('name')[:76]:<76} {result:<7} {float(case.get('time', 0)):6.1f}")
    if bad is not None:
        lines = (bad.get("message") or "").splitlines() or ["(no message)"]
        print("    " + lines[0][:200])
PY
tail -3 "$out/ipc.log"

# The probe: its last lines answer each question (OPENED / refused); status 1 when the fd path let a child in.
timeout 120 python3 benchmarks/ipc_handle_probe.py > "$out/probe.log" 2>&1
probe=$?
grep -E "^(legacy|\(a\)|\(b\))" "$out/probe.log" || tail -5 "$out/probe.log"
echo "total: $((SECONDS - started)) s, pytest exit status $rc, probe exit status $probe"
[ "$rc" = 0 ] && exit "$probe"
exit "$rc"
