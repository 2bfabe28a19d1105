"""On a GPU: every tensor the supervisor shares is an allocation of its own, a worker that maps one reaches
nothing beyond it, a worker can map only what it was sent (a file descriptor; there is no handle to
forge), and a worker that dies holding a scenario leaves nothing allocated in the supervisor.
benchmarks/h200_ipc_check.sh runs this file and prints a table of it.
"""

import gc
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from solbench.core.model import Status  # noqa: E402
from solbench.core.policy import QUICK  # noqa: E402
from solbench.core.scenario import Scenario  # noqa: E402
from solbench.core.suites import load_suite  # noqa: E402
from solbench.core.tensors import INPUT_FIELDS  # noqa: E402
from solbench.gpu import device_memory, driver, ipc  # noqa: E402
from solbench.sandbox.impls import ImplSpec  # noqa: E402
from solbench.supervisor.inputs import clone_inputs, make_inputs, with_outputs  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")]
ROOT = Path(__file__).resolve().parents[1]
TENSORS = INPUT_FIELDS + ("out", "lse")
CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
"""Another process that imports this checkout's solbench."""
SLACK_BYTES = 64 << 20
"""What the device's free memory may differ by from its start (the driver's own bookkeeping); a leaked
scenario of test_a_python_worker_that_exits_mid_check_leaks_nothing is over 1 GiB."""


def _settle() -> None:
    gc.collect()
    torch.cuda.synchronize()
    # cuBLAS keeps a workspace per handle in torch's allocator (32 MiB on sm90), made by the supervisor's first
    # fp32 reference matmul: on the H200 it was the smoke test's only "leak" (memory_allocated 33554432 after).
    getattr(torch._C, "_cuda_clearCublasWorkspaces", lambda: None)()  # a CUDA build has it
    torch.cuda.empty_cache()


def _free_bytes() -> int:
    drv = driver.load()
    with drv.context(torch.cuda.current_device()):
        return drv.mem_info()[0]


def _free_again(start: int, within_s: float = 20.0) -> int:
    """The free bytes once they are back within SLACK_BYTES of `start` (a killed worker's context goes
    with its process, a moment after it was reaped), or as they are when `within_s` ran out."""
    deadline = time.monotonic() + within_s
    while True:
        _settle()
        free = _free_bytes()
        if free >= start - SLACK_BYTES or time.monotonic() > deadline:
            return free
        time.sleep(0.5)


def _child(script: str, tensors, *args, **popen):
    """A Python child process that receives the tensors' fds as a worker does (over a Unix socket, SCM_RIGHTS)
    and gets argv [SOCKET_FD, TOKEN..., *args] (and in $EXPORTED_FDS the numbers the fds had here); the fds
    are sent and closed here once it started."""
    ours, theirs = socket.socketpair()
    exports = ipc.Exports()
    try:
        tokens = [ipc.token(t, exports) for t in tensors]
        env = {**CHILD_ENV, "EXPORTED_FDS": ",".join(map(str, exports.fds))}
        argv = [sys.executable, "-c", script, str(theirs.fileno()), *tokens, *map(str, args)]
        proc = subprocess.Popen(argv, pass_fds=(theirs.fileno(),), text=True, env=env, **popen)
        ipc.send_fds(ours.fileno(), exports.fds)
    finally:
        exports.close()
        theirs.close()
    proc.fd_socket = ours  # kept open until the child is gone
    return proc


def test_every_token_maps_exactly_its_own_allocation():
    """For every tensor of every smoke scenario (and the candidate's copy, and a comparator's outputs), the
    driver's mapping around the tensor is the one solbench made for it alone: its base is the allocation's,
    its size that tensor's rounded size, aligned to the granule, and its token names that allocation."""
    drv = driver.load()
    seen = set()
    for sc in load_suite("smoke").scenarios:
        inp = make_inputs(sc, trial=0, device="cuda")
        exports = ipc.Exports()
        for copy in (inp, clone_inputs(inp), with_outputs(inp)):
            for name in TENSORS:
                t = getattr(copy, name)
                if t is None:
                    continue
                a = device_memory.allocation_of(t)
                tok = ipc.parse(ipc.token(t, exports))
                with drv.context(a.ordinal):
                    base, size = drv.address_range(t.data_ptr())
                granule = device_memory.granule(a.ordinal)
                assert (base, size) == (a.ptr, device_memory.rounded(a.nbytes, granule)) == (a.ptr, tok.size), (sc.id, name)
                assert base % granule == 0 and base + tok.offset == t.data_ptr(), (sc.id, name)
                assert tok.offset + t.numel() * t.element_size() <= a.nbytes, (sc.id, name)
                seen.add((base, tok.serial))
        exports.close()
        del inp, copy, t
    assert len({serial for _, serial in seen}) == len(seen)  # one serial per allocation


_RECEIVE = r"""
import os, sys, torch
from solbench.gpu import device_memory, driver, ipc
torch.zeros(1 << 16, dtype=torch.uint8, device="cuda").sum(dtype=torch.int64).item()  # context, cache: no VA later
fds = ipc.recv_fds(int(sys.argv[1]))
tok = ipc.parse(sys.argv[2])
m = device_memory.open_mapping(fds[tok.index], tok.serial, tok.size, tok.size)
for fd in fds:
    os.close(fd)
"""

_PAST_THE_END = _RECEIVE + r"""
nbytes = int(sys.argv[3])
drv = driver.load()
with drv.context(torch.cuda.current_device()):
    base, length = drv.address_range(m.ptr)
print("RANGE", m.ptr - base, length, flush=True)
print("INSIDE", m.tensor()[:nbytes].sum(dtype=torch.int64).item(), flush=True)
class Wider:  # the mapping's bytes and 64 KiB past them
    __cuda_array_interface__ = {"shape": (tok.size + (1 << 16),), "typestr": "|u1", "data": (m.ptr, False),
                                "version": 3, "strides": None, "stream": None}
try:
    print("READ", torch.as_tensor(Wider(), device="cuda")[tok.size:].sum(dtype=torch.int64).item(), flush=True)
except Exception as exc:
    print("FAULT", str(exc).splitlines()[0], flush=True)
"""


def test_a_worker_reaches_nothing_past_the_allocation_it_maps():
    """Another process that maps a tensor from the fd it was sent sees a mapping of exactly that allocation's
    size, and a read just past its end faults instead of landing in another tensor of the supervisor's
    (with torch's caching allocator it landed in the rest of a segment of up to GBs)."""
    neighbours = [device_memory.empty_bytes(device_memory.IPC_GRANULE) for _ in range(4)]
    t = device_memory.empty_bytes(1000)
    for n in neighbours:
        n.fill_(0x5A)
    t.fill_(1)
    torch.cuda.synchronize()
    size = device_memory.allocation_of(t).size
    child = _child(_PAST_THE_END, [t], 1000, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = child.communicate(timeout=120)
    lines = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    assert lines.get("RANGE") == f"0 {size}", out + err[-2000:]
    assert lines.get("INSIDE") == "1000", out  # the tensor's 1000 bytes, each 1
    assert "FAULT" in lines, out + err[-2000:]


_KEEPS_ITS_MAPPING = _RECEIVE + r"""
t = m.tensor()
print("MAPPED", int((t == 0x11).sum()), flush=True)
sys.stdin.readline()
try:
    print("AFTER", int((t == 0x11).sum()), int((t == 0x5A).sum()), flush=True)
except Exception as exc:
    print("FAULT", str(exc).splitlines()[0], flush=True)
"""


def test_a_mapping_kept_past_the_supervisors_free_never_sees_its_later_tensors(tmp_path):
    """A hostile worker can say it let go and keep its mappings: the supervisor then frees an allocation the
    worker still maps. What the worker reads there afterwards must never be memory the supervisor
    allocated since (the driver keeps the memory until the last mapping goes)."""
    n = device_memory.IPC_GRANULE
    old = device_memory.empty_bytes(n)
    old.fill_(0x11)
    torch.cuda.synchronize()
    err = tmp_path / "child.err"
    child = _child(_KEEPS_ITS_MAPPING, [old], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err.open("w"))
    try:
        assert child.stdout.readline().split() == ["MAPPED", str(n)], err.read_text()[-2000:]
        ptr = device_memory.allocation_of(old).ptr
        del old  # lent to no one: freed now
        gc.collect()
        assert ptr not in {a.ptr for a in device_memory.live()}
        later = [device_memory.empty_bytes(n) for _ in range(64)]
        for t in later:
            t.fill_(0x5A)
        torch.cuda.synchronize()
        child.stdin.write("\n")
        child.stdin.flush()
        said = child.stdout.readline().split()
    finally:
        child.kill()
        child.wait(30)
    assert said and (said[0] == "FAULT" or (said[0] == "AFTER" and said[2] == "0")), (said, err.read_text()[-2000:])


_TRIES_WHAT_IT_WAS_NOT_SENT = _RECEIVE + r"""
import ctypes
print("GIVEN OPENED", int((m.tensor() == 0x11).sum()), flush=True)
drv = driver.load()
POSIX_FD = driver.MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR

def attempt(label, fd):
    handle = ctypes.c_uint64(0)
    try:
        with drv.context(torch.cuda.current_device()):
            drv.call("cuMemImportFromShareableHandle", ctypes.byref(handle), ctypes.c_void_p(fd), POSIX_FD)
            drv.call("cuMemRelease", handle)
        print(label, "OPENED", flush=True)
    except driver.DriverError as exc:
        print(label, "refused", exc, flush=True)

given = fds[tok.index]  # closed above, as a worker closes it: its number and its neighbours are free or other files
for fd in range(max(0, given - 4), given + 8):
    attempt(f"NEIGHBOUR {fd}", fd)
parent = os.getppid()
numbers = [int(n) for n in (sys.argv[3] + "," + os.environ["EXPORTED_FDS"]).split(",") if n]
numbers += [int(n) for n in os.listdir(f"/proc/{parent}/fd")]
for n in sorted(set(numbers)):
    try:
        fd = os.open(f"/proc/{parent}/fd/{n}", os.O_RDONLY)
    except OSError as exc:
        print(f"PROC {n}", "refused", exc.strerror, flush=True)
        continue
    attempt(f"PROC {n}", fd)
    os.close(fd)
print("DONE", flush=True)
"""


def test_a_child_cannot_open_an_allocation_it_was_not_sent(tmp_path):
    """A child sent one allocation's fd maps it, and nothing else: not through fd numbers near the one it got
    (there is no handle to forge), nor through /proc/<supervisor>/fd/N, neither for the numbers the
    supervisor's exported fds had (closed once sent) nor for any fd the supervisor holds. B was exported for
    another message (and closed), C never exported."""
    sent, b, c = (device_memory.empty_bytes(device_memory.IPC_GRANULE) for _ in range(3))
    sent.fill_(0x11)
    torch.cuda.synchronize()
    other = ipc.Exports()
    ipc.token(b, other)
    b_numbers = list(other.fds)
    other.close()
    child = _child(_TRIES_WHAT_IT_WAS_NOT_SENT, [sent], ",".join(map(str, b_numbers)),
                             stdout=subprocess.PIPE, stderr=(tmp_path / "child.err").open("w"))
    out, _ = child.communicate(timeout=120)
    err = (tmp_path / "child.err").read_text()[-2000:]
    lines = out.splitlines()
    assert f"GIVEN OPENED {device_memory.IPC_GRANULE}" in lines and "DONE" in lines, out + err
    opened = [line for line in lines if line.endswith("OPENED") and not line.startswith("GIVEN")]
    assert not opened, out
    assert any(line.startswith("NEIGHBOUR") for line in lines) and any(line.startswith("PROC") for line in lines)
    del sent, b, c


def test_a_python_worker_that_exits_mid_check_leaks_nothing(tmp_path):
    """Three times, a worker dies (os._exit) in the middle of its check while it maps a scenario of over 1 GiB
    (its copy and a timing copy): once the supervisor drops the scenario, the device has what it had."""
    from solbench.supervisor.python_worker import Worker, WorkerFailure

    exits = tmp_path / "exits.py"
    exits.write_text("import os\n\ndef forward(inputs):\n    os._exit(3)\n")
    worker = Worker(ImplSpec("candidate", "python", str(exits), "exits.py"), "cuda", QUICK, tmp_path / "w.log")
    sc = Scenario(q_lens=(64,), kv_lens=(1 << 18,), heads_q=8, heads_kv=8, head_dim_qk=128, head_dim_v=128)
    make_inputs(sc, trial=0, device="cuda")  # the first allocations' own driver bookkeeping, before the start
    _settle()
    live, allocated, free = len(device_memory.live()), torch.cuda.memory_allocated(), _free_bytes()
    try:
        for trial in range(3):
            check = make_inputs(sc, trial=trial, device="cuda")
            copies = [make_inputs(sc, trial=10 + trial, device="cuda")]
            worker.request("prepare", {"check": check, "rotation": copies}, 120.0)
            with pytest.raises(WorkerFailure, match="worker died"):
                worker.request("check", {"keep": True}, 120.0)
            del check, copies
            _settle()
            assert len(device_memory.live()) == live, f"trial {trial}: allocations left behind"
    finally:
        worker.stop(kill=True)
    assert torch.cuda.memory_allocated() == allocated
    now = _free_again(free)
    assert now >= free - SLACK_BYTES, f"{(free - now) / 2**20:.0f} MiB fewer free than at the start"


EXITS_ON_ONE = """import importlib.util, os

_spec = importlib.util.spec_from_file_location("torch_attention", {reference!r})
_ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_ref)


def forward(inputs):
    if inputs.scenario.heads_q == 8:
        os._exit(3)  # mid-check, holding the scenario's tensors
    _ref.forward(inputs)
"""


def test_smoke_with_a_python_candidate_and_the_seed_leaves_nothing_allocated(tmp_path):
    """The smoke suite with the torch reference as the candidate (a Python worker, tensors by token) and the
    seed (the native runner, tensors by token): every scenario passes but the one where the candidate exits
    mid-check, and when the run is over every allocation made for it is freed."""
    from solbench.supervisor.runner import RunConfig, run

    candidate = tmp_path / "exits_on_one.py"
    candidate.write_text(EXITS_ON_ONE.format(reference=str(ROOT / "reference_kernels" / "torch_attention.py")))
    _settle()
    live, allocated = len(device_memory.live()), torch.cuda.memory_allocated()
    result = run(RunConfig(candidate=str(candidate), suite="smoke", baselines=(), policy=QUICK,
                           out_dir=tmp_path / "run", timeout_s=60))
    exited = [o for o in result.outcomes if o.scenario["heads_q"] == 8]
    others = [o for o in result.outcomes if o.scenario["heads_q"] != 8]
    assert len(exited) == 1 and exited[0].status is Status.RUNTIME_ERROR and "worker died" in exited[0].reason
    assert others and all(o.status is Status.PASSED for o in others), \
        [(o.scenario_id, o.status, o.reason) for o in others if o.status is not Status.PASSED]
    assert all(o.comparators["seed"]["status"] == "passed" for o in result.outcomes)
    _settle()
    assert len(device_memory.live()) == live and torch.cuda.memory_allocated() == allocated
