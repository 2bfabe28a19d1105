"""The supervisor's shared tensors, each in a device allocation of its own (solbench.gpu.device_memory), and
how workers get them (solbench.gpu.ipc: a file descriptor of the allocation passed over a Unix socket, and a
token naming it), on a CPU: a fake libcuda (tests/fake_driver.py) whose "device" memory is host memory. A
worker reaches exactly the allocations whose fds it was sent; they are freed once the supervisor dropped
them and every worker they were lent to let go of them or is gone; no fd is left open on either side.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import socket

import pytest

torch = pytest.importorskip("torch")
from fake_driver import install, worker_main  # noqa: E402

from solbench.core.policy import QUICK  # noqa: E402
from solbench.core.scenario import MaskSpec, Scenario  # noqa: E402
from solbench.core.tensors import CANARY, GUARD_BYTES, INPUT_FIELDS, guard_damage  # noqa: E402
from solbench.gpu import device_memory, driver, ipc  # noqa: E402
from solbench.sandbox.impls import ImplSpec  # noqa: E402
from solbench.supervisor import inputs as inputs_mod  # noqa: E402

EVERYTHING = Scenario(q_lens=(3, 5), kv_lens=(9, 16), heads_q=4, heads_kv=2, head_dim_qk=16, head_dim_v=16,
                      dtype="fp8_e4m3", descale="per_head", kv_layout="paged", page_size=4, sinks=True,
                      mask=MaskSpec(0.3, "iid", seed=1))
"""Every optional tensor present: page table, sinks, mask bits, three descales."""
TENSORS = INPUT_FIELDS + ("out", "lse")


@pytest.fixture
def fake(monkeypatch):
    """A fake driver, and the supervisor's input functions taking their GPU path on it. At the end nothing
    the test allocated may be left: every allocation was freed once nothing held it, and no file descriptor
    of one is open."""
    lib = install(monkeypatch)
    monkeypatch.setattr(inputs_mod, "_on_gpu", lambda device: True)
    yield lib
    gc.collect()
    assert not [a for a in device_memory.live() if a.ptr in lib.allocated], "allocations left behind"
    assert not lib.handles and not lib.reserved, "handles or address ranges never released"
    assert not lib.loose_fds(), "a file descriptor of an allocation left open"
    assert lib.depth == 0, "a context pushed and never popped"


def _tensors(inp):
    return {name: getattr(inp, name) for name in TENSORS if getattr(inp, name) is not None}


def test_every_shared_tensor_has_an_allocation_of_its_own_and_a_token_inside_it(fake):
    inp = inputs_mod.make_inputs(EVERYTHING, trial=0, device="cpu")
    tensors = _tensors(inp)
    assert set(tensors) == set(TENSORS)  # the scenario has every optional tensor
    allocations = {name: device_memory.allocation_of(t) for name, t in tensors.items()}
    assert all(allocations.values())
    assert len({a.ptr for a in allocations.values()}) == len(tensors)  # none shares an allocation
    exports = ipc.Exports()
    for i, (name, t) in enumerate(tensors.items()):
        a, nbytes = allocations[name], t.numel() * t.element_size()
        assert a.size % device_memory.IPC_GRANULE == 0 and a.size >= a.nbytes
        assert t.data_ptr() % 256 == 0  # the alignment kernels expect (out and lse after 4 KiB of guard)
        tok = ipc.parse(ipc.token(t, exports))
        # one fd per allocation, in order; the size the worker maps is the allocation's
        assert (tok.index, tok.serial, tok.size) == (i, a.serial, a.size)
        # the token's offset lies in the tensor's own allocation: guards before an output, nothing before an input
        assert tok.offset == (GUARD_BYTES if name in ("out", "lse") else 0)
        assert tok.offset + nbytes + (GUARD_BYTES if name in ("out", "lse") else 0) == a.nbytes
    assert ipc.parse(ipc.token(tensors["q"], exports)).index == 0  # named again: the same fd
    assert len(exports.fds) == len(tensors) == len(set(fake.exported))
    assert len({a.serial for a in allocations.values()}) == len(tensors)
    exports.close()
    # what a worker gets is what the supervisor made: a copy of its own for the candidate, fresh outputs only
    # for a comparator, and the same contents
    mine, theirs = inputs_mod.clone_inputs(inp), inputs_mod.with_outputs(inp)
    mine_ptrs = {device_memory.allocation_of(t).ptr for t in _tensors(mine).values()}
    assert not mine_ptrs & {a.ptr for a in allocations.values()}
    assert device_memory.allocation_of(theirs.q) is allocations["q"]
    assert device_memory.allocation_of(theirs.out) is not allocations["out"]
    assert all(torch.equal(getattr(mine, n).view(torch.uint8), getattr(inp, n).view(torch.uint8)) for n in INPUT_FIELDS
               if getattr(inp, n) is not None)
    # the guards are the canary, and a write past the end of an output is seen
    assert guard_damage(mine.out) == 0
    whole = torch.empty(0, dtype=torch.uint8).set_(mine.out.untyped_storage())
    assert whole.numel() == device_memory.allocation_of(mine.out).nbytes and int(whole[0]) == CANARY
    whole[-1] = 0
    assert guard_damage(mine.out) == 1
    # the rounding's slack, mapped by a worker too, is zeroed: never what memory freed before held
    for a in allocations.values():
        assert (a.ptr + a.nbytes, 0, a.size - a.nbytes) in fake.memsets
    # the footprint counts allocations as the driver makes them
    assert inputs_mod.footprint_bytes(inp) == sum(a.size for a in allocations.values())


def test_a_tensor_not_in_an_allocation_of_its_own_gets_no_token(fake):
    exports = ipc.Exports()
    with pytest.raises(ipc.IpcError, match="not in an allocation of its own"):
        ipc.token(torch.zeros(4), exports)
    assert ipc.token(None, exports) == ipc.NULL_TOKEN and not exports.fds
    for bad in ("ab" * 64 + ":0", "fd:1:2:3", "fd:-1:2:3:4", "fd:a:2:3:4", "own:0:4"):
        with pytest.raises(ipc.IpcError, match="not a tensor token"):
            ipc.parse(bad)


def test_an_allocation_is_freed_once_no_tensor_is_over_it(fake):
    t = device_memory.empty((4, 8), torch.bfloat16)
    ptr = device_memory.allocation_of(t).ptr
    view = t[1:]
    del t
    gc.collect()
    assert ptr not in fake.freed  # a view still holds it
    assert device_memory.allocation_of(view).ptr == ptr
    del view
    gc.collect()
    assert fake.freed.count(ptr) == 1 and ptr not in fake.memory


def test_a_lent_allocation_waits_for_its_worker(fake):
    holder = device_memory.new_holder()
    t = device_memory.empty((16,), torch.float32)
    ptr = device_memory.allocation_of(t).ptr
    mark = device_memory.loan_mark(holder)  # taken before the request that sends it (a prepare)
    exports = ipc.Exports()
    ipc.token(t, exports, holder)
    exports.close()
    del t
    gc.collect()
    assert ptr not in fake.freed and device_memory.lent_to(holder) == 1  # dropped, still mapped by the worker
    device_memory.returned(holder, mark)  # the prepare's reply: what was lent before it is let go of, not this
    assert ptr not in fake.freed
    device_memory.returned(holder, device_memory.loan_mark(holder))  # the next release's reply
    assert fake.freed == [ptr] and device_memory.lent_to(holder) == 0
    # a worker that is gone holds nothing, whenever the supervisor drops what it was lent
    u = device_memory.empty((16,), torch.float32)
    ipc.token(u, exports, holder)
    exports.close()
    device_memory.returned(holder)
    uptr = device_memory.allocation_of(u).ptr
    del u
    gc.collect()
    assert fake.freed == [ptr, uptr]


def _deliver(data: bytes, exports: ipc.Exports):
    """What a worker in this very process would receive: its own copies of the fds (the supervisor's are
    closed, as ipc.send closes them once sent), and the message unpickled with them."""
    theirs = [os.dup(fd) for fd in exports.fds]
    exports.close()
    return ipc.loads(data, theirs)


def test_python_workers_map_by_token_and_close_on_release(fake, monkeypatch):
    """The worker's command is pickled with tokens (no torch IPC) and comes with one fd per allocation,
    unpickling maps each allocation once and closes every fd, the worker's tensors are the supervisor's
    memory, and release (or the next prepare) unmaps them."""
    from solbench.sandbox import worker as worker_mod

    holder = device_memory.new_holder()
    inp = inputs_mod.make_inputs(EVERYTHING, trial=0, device="cpu")
    copies = [inputs_mod.clone_inputs(inp) for _ in range(2)]
    data, exports = ipc.dumps(("prepare", {"check": inp, "rotation": copies}), holder)
    assert b"torch.multiprocessing" not in data and b"rebuild_cuda" not in data
    assert device_memory.lent_to(holder) == 3 * len(_tensors(inp)) == len(exports.fds)
    cmd, payload = _deliver(data, exports)
    assert not fake.loose_fds()  # neither the supervisor's fds nor the worker's are open once it mapped
    opened = device_memory.take_opened()
    assert len(opened) == 3 * len(_tensors(inp)) == len(fake.opened) == len(fake.imported)
    sent = payload["check"]
    assert sent.out.dtype == inp.out.dtype and sent.out.shape == inp.out.shape and sent.scenario == inp.scenario
    sent.out.fill_(0)  # the worker writes its output: the supervisor sees it in its own memory
    assert torch.equal(inp.out.float(), torch.zeros_like(inp.out.float())) and guard_damage(inp.out) == 0
    assert torch.equal(sent.k.view(torch.uint8), inp.k.view(torch.uint8))
    assert sent.k.data_ptr() != inp.k.data_ptr()  # a mapping of its own, at an address of its own

    # the worker's side: prepare keeps what the payload mapped and unmaps the scenario before; release unmaps all
    state = object.__new__(worker_mod._WorkerState)
    state.device, state.mapped, state.impl = "cuda", [], type("I", (), {"bind": lambda self, i: (lambda: None)})()
    monkeypatch.setattr(state, "_release_memory", lambda: None, raising=False)
    for mapping in opened:  # as if the payload had just been received
        device_memory._opened.append(mapping)
    state.prepare(payload)
    assert state.mapped == opened and not fake.closed
    again = _deliver(*ipc.dumps(("prepare", {"check": copies[0], "rotation": []}), holder))[1]
    state.prepare(again)  # copies[0] again: open already (the same mapping, its new fd closed unused)
    kept = {m.serial for m in state.mapped}
    assert kept == {device_memory.allocation_of(t).serial for t in _tensors(copies[0]).values()}
    assert len(fake.opened) == len(opened) and not fake.loose_fds()
    assert len(fake.closed) == len(opened) - len(kept)
    state.release()
    assert len(fake.closed) == len(opened) and all(m.closed for m in opened) and not fake.mapped
    del payload, again, sent, state, opened
    device_memory.returned(holder)


def test_a_worker_maps_only_what_came_with_its_message(fake):
    """A token that names an fd its message did not bring, an fd number made up (one the worker holds that is
    no allocation's, one it does not hold), or the fd of one allocation given as another's, map nothing:
    each fails with an error that says so, and every fd that came is closed all the same."""
    t, other = device_memory.empty_bytes(100), device_memory.empty_bytes(100)
    a = device_memory.allocation_of(t)
    holder = device_memory.new_holder()
    data, exports = ipc.dumps(("x", t), holder)
    with pytest.raises(ipc.IpcError, match="names file descriptor #0, but its message came with 0"):
        ipc.loads(data, [])  # the fd never came
    forged = data.replace(b"fd:0:", b"fd:1:")
    with pytest.raises(ipc.IpcError, match="names file descriptor #1, but its message came with 1"):
        _deliver(forged, exports)  # a token for a second fd: there is none
    assert not fake.loose_fds() and not fake.opened
    with open(os.devnull) as not_an_allocation:
        with pytest.raises(driver.DriverError, match="cuMemImportFromShareableHandle failed"):
            device_memory.open_mapping(not_an_allocation.fileno(), a.serial, a.size, 100)
    unused = max(os.listdir("/proc/self/fd"), key=int)
    with pytest.raises(driver.DriverError, match="cuMemImportFromShareableHandle failed"):
        device_memory.open_mapping(int(unused) + 100, a.serial, a.size, 100)
    assert not fake.opened and not fake.handles.keys() - fake.created
    # the supervisor's allocations are not reachable by fd number: it holds none of them between messages
    assert not fake.loose_fds()
    device_memory.returned(holder)
    del t, other


def test_the_fds_go_over_the_socket_and_only_the_workers_copies_remain(fake):
    """ipc.send and ipc.receive over a socketpair (a spawn Pipe is one): the fds arrive in the tokens' order,
    in batches past FD_BATCH, the sender closes its own once sent and the receiver its own once mapped."""
    holder = device_memory.new_holder()
    tensors = [device_memory.empty_bytes(64) for _ in range(ipc.FD_BATCH + 6)]
    ours, theirs = multiprocessing.Pipe()
    try:
        ipc.send(ours, ("prepare", tensors), holder)
        assert not fake.loose_fds()  # nothing exported is left with the supervisor
        fds = ipc.recv_fds(theirs.fileno())
        assert len(fds) == len(tensors) and len(fake.loose_fds()) == len(tensors)
        cmd, got = ipc.loads(theirs.recv_bytes(), fds)
        assert not fake.loose_fds() and len(fake.opened) == len(tensors)
        got[-1][:4] = torch.tensor([1, 2, 3, 4], dtype=torch.uint8)
        assert tensors[-1][:4].tolist() == [1, 2, 3, 4]
        ipc.send(ours, ("release", None), holder)  # no tensor: one empty batch
        assert ipc.receive(theirs) == ("release", None)
        for mapping in device_memory.take_opened():
            mapping.close()
        del got
    finally:
        ours.close()
        theirs.close()
        device_memory.returned(holder)
    a, b = socket.socketpair()
    with a, b:
        a.close()
        with pytest.raises(EOFError):
            ipc.recv_fds(b.fileno())


def test_cpu_tensors_travel_as_the_fd_of_their_shared_memory(fake):
    """A CPU tensor that is no allocation of device_memory's goes as the fd of its storage's shared memory, beside
    the message, as an allocation's does: not the way torch.multiprocessing sends it, from a listener in the
    supervisor that unpickles what a client sends (issue 39, class 1). Views of one storage still share it."""
    import fcntl
    from multiprocessing import resource_sharer

    t = ipc.sealed_cpu(torch.arange(6.0))
    data, exports = ipc.dumps(("x", t, t[2:], torch.empty(2, 0)), device_memory.new_holder())
    assert len(exports.fds) == 1 and b"torch.multiprocessing" not in data and b"DupFd" not in data
    _, back, view, empty = _deliver(data, exports)  # an empty tensor has no memory, and no fd
    assert torch.equal(back, t) and torch.equal(view, t[2:]) and empty.shape == (2, 0) and not fake.opened
    back[3] = 30.0  # the worker's write lands in the supervisor's memory, and in the other view
    assert t[3] == 30.0 and view[1] == 30.0
    assert resource_sharer._resource_sharer._address is None  # no listener started for it
    # The worker cannot shrink what it was sent: torch's /dev/shm file could be, and the supervisor's next read
    # of the tensor was a SIGBUS that ended the run.
    theirs = back.untyped_storage()._share_fd_cpu_()[0]
    with pytest.raises(PermissionError):
        os.ftruncate(theirs, 0)
    with pytest.raises(PermissionError):
        fcntl.fcntl(theirs, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE)  # no seal added either (F_SEAL_SEAL)
    with pytest.raises(ipc.IpcError, match="sealed_cpu"):
        ipc.dumps(torch.arange(3.0).share_memory_(), 0)  # torch's own shared memory is not sent


def _fake_worker(tmp_path, fails_on: str, how: str = "exit"):
    """A Worker handle (device 'cuda': tensors go by token) on a process of tests/fake_driver.py."""
    from solbench.supervisor.python_worker import Worker

    ctx = multiprocessing.get_context("spawn")
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=worker_main, args=(theirs, fails_on, how), daemon=True)
    proc.start()
    theirs.close()
    worker = Worker(ImplSpec("candidate", "python", "fake.py"), "cuda", QUICK, tmp_path / "w.log")
    worker._proc, worker._conn = proc, ours
    return worker


@pytest.mark.slow
@pytest.mark.parametrize("how, says", [("exit", "worker died"), ("error", "planted")])
@pytest.mark.parametrize("drop_first", [True, False], ids=["dropped-then-killed", "killed-then-dropped"])
def test_a_worker_killed_mid_scenario_leaves_nothing_allocated(fake, tmp_path, drop_first, how, says):
    """A worker that dies in the middle of a check (os._exit: no reply, no release), or reports an error there
    and is killed for it (never asked to let go first), holds nothing once it is gone; what the supervisor
    lent it is freed when the supervisor drops the scenario, in either order."""
    from solbench.supervisor.python_worker import WorkerFailure

    worker = _fake_worker(tmp_path, fails_on="check", how=how)
    inp = inputs_mod.make_inputs(EVERYTHING, trial=0, device="cpu")
    copies = [inputs_mod.clone_inputs(inp)]
    made = [device_memory.allocation_of(t).ptr for i in (inp, *copies) for t in _tensors(i).values()]
    try:
        assert worker.request("prepare", {"check": inp, "rotation": copies}, 60.0) == {"writes_lse": True}
        assert device_memory.lent_to(worker._holder) == len(made)
        if drop_first:
            del inp, copies
            gc.collect()
            assert not set(made) & set(fake.freed)  # the worker may still map them: they wait
        with pytest.raises(WorkerFailure, match=says):
            worker.request("check", {"keep": False}, 60.0)
        assert not worker.running and device_memory.lent_to(worker._holder) == 0
    finally:
        worker.stop(kill=True)
    if not drop_first:
        assert not set(made) & set(fake.freed)  # the supervisor still holds the scenario
        del inp, copies
    gc.collect()
    assert sorted(fake.freed) == sorted(made) and not fake.memory


def test_a_worker_that_lets_go_frees_the_scenario_it_held(fake, tmp_path):
    """The next prepare's reply says the worker unmapped the scenario before: the supervisor frees it then,
    not before (it dropped it first)."""
    worker = _fake_worker(tmp_path, fails_on="never")
    first = inputs_mod.make_inputs(EVERYTHING, trial=0, device="cpu")
    first_ptrs = [device_memory.allocation_of(t).ptr for t in _tensors(first).values()]
    try:
        worker.request("prepare", {"check": first, "rotation": []}, 60.0)
        del first
        gc.collect()
        assert not set(first_ptrs) & set(fake.freed)
        second = inputs_mod.make_inputs(EVERYTHING, trial=1, device="cpu")
        worker.request("prepare", {"check": second, "rotation": []}, 60.0)
        assert set(first_ptrs) <= set(fake.freed) and device_memory.lent_to(worker._holder) == len(first_ptrs)
        worker.request("release", None, 60.0)
        assert device_memory.lent_to(worker._holder) == 0
        del second
    finally:
        worker.stop(kill=True)


def test_the_native_runner_tokens_are_lent_until_it_lets_go(fake, tmp_path, monkeypatch):
    """The runner's 'copy' lines name each tensor by the index of its allocation's fd, which goes ahead of
    them on the runner's fd socket, and its offset; the supervisor keeps none of those fds; what the lines
    name stays allocated until the runner's next prepare or release has been answered."""
    from solbench.supervisor.native_worker import _FIELDS, NativeWorker

    sent = []
    worker = NativeWorker(ImplSpec("candidate", "cu", "x.so", runner="native"), "cuda", QUICK, tmp_path / "r.log")
    monkeypatch.setattr(NativeWorker, "running", property(lambda self: True))
    monkeypatch.setattr(worker, "_ask", lambda line, timeout_s: sent.append(line))
    worker._fds, runner_end = socket.socketpair()
    inp = inputs_mod.make_inputs(EVERYTHING, trial=0, device="cpu")
    worker.request("prepare", {"check": inp, "rotation": [inputs_mod.clone_inputs(inp)]}, 60.0)
    assert not fake.loose_fds()  # the supervisor closed every fd it sent
    fds = ipc.recv_fds(runner_end.fileno())  # what the runner takes off its socket first
    prepare, *lines = sent[0].splitlines()
    assert prepare == "prepare 2" and len(lines) == 2
    tokens = dict(zip(_FIELDS, lines[0].split()[2:]))
    for name, text in tokens.items():
        t = getattr(inp, name)
        assert (text == ipc.NULL_TOKEN) == (t is None)
        if t is not None:
            a = device_memory.allocation_of(t)
            tok = ipc.parse(text)
            assert (tok.serial, tok.size) == (a.serial, a.size) and t.data_ptr() == a.ptr + tok.offset
            assert os.path.samestat(os.fstat(fds[tok.index]), os.fstat(fake.handles[a.handle]))  # its own fd
    assert len(fds) == 2 * len(_tensors(inp))
    for fd in fds:
        os.close(fd)
    ptrs = [device_memory.allocation_of(t).ptr for t in _tensors(inp).values()]
    del inp, t
    gc.collect()
    assert not set(ptrs) & set(fake.freed)
    worker.request("release", None, 60.0)
    gc.collect()
    assert set(ptrs) <= set(fake.freed)
    worker._fds.close()
    runner_end.close()


def test_out_of_device_memory_is_torch_s_error(fake, monkeypatch):
    """The supervisor records a scenario whose inputs do not fit as a machine error: the allocation raises
    the OutOfMemoryError torch would, after torch's cache had its chance to give memory back."""
    emptied = []
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: emptied.append(1))
    fake.capacity_bytes = 3 * device_memory.IPC_GRANULE
    kept = device_memory.empty_bytes(2 * device_memory.IPC_GRANULE)
    with pytest.raises(torch.OutOfMemoryError, match="out of memory"):
        device_memory.empty_bytes(device_memory.IPC_GRANULE + 1)
    assert emptied == [1]
    del kept


def test_a_worker_that_never_reads_its_socket_costs_a_timeout_not_a_blocked_supervisor(monkeypatch):
    """A worker that answers but never reads its fd socket blocked the supervisor's send
    for good once the socket's buffer was full; now the send gives up after SEND_TIMEOUT_S (an OSError the
    worker handles turn into that worker's failure)."""
    import socket

    from solbench.gpu import ipc

    monkeypatch.setattr(ipc, "SEND_TIMEOUT_S", 0.2)
    ours, theirs = socket.socketpair()
    read_end, write_end = os.pipe()
    try:
        with pytest.raises(OSError):  # TimeoutError here; ETOOMANYREFS first where the user's in-flight cap bites
            for _ in range(100_000):
                ipc.send_fds(ours.fileno(), [read_end])
    finally:
        for closable in (ours, theirs):
            closable.close()
        os.close(read_end)
        os.close(write_end)
