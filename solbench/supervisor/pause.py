"""The candidate's process sleeps while it is not being asked anything: a candidate left
running between its own requests can watch for the comparators' rounds (/proc/<sibling>/task/*/stat) and load
the CPU, or the GPU, just then; on a CPU it got a ratio of 1.82 over the seed with the seed's own code. The
supervisor stops the candidate's process group (SIGSTOP, which the candidate cannot catch or block) as soon as
it has its reply, waits until every thread of it has stopped, and continues it (SIGCONT) right before the next
request. Trusted comparators run freely. Nothing timed is affected: a worker times its calls after it has read
a request.

A stop can be undone from inside: any SIGCONT the kernel sends the process wakes it, and a POSIX timer, F_SETSIG,
a death signal or mq_notify can be made to send one (the filter cannot read a timer's sigevent). So
each hold is checked when the next request comes, whatever woke it: no thread stopped at the hold may have been
scheduled since (the kernel's count of its runs, /proc/<pid>/task/<tid>/schedstat), none may be awake, come,
or go unless it was dead or in an uninterruptible wait, and the threads the stop found in an uninterruptible
wait may only have finished it (in the same syscall, within 1 ms of CPU all together). A thread woken for a moment, that launches GPU work and stops itself
again, is seen by its count. Each count is read after the thread's syscall line, which the kernel
gives only once the thread is off its CPU: one seen stopped while still switching out is counted whole.
`Hold.release` says what ran; the worker then fails the scenario as `tampered`.

Every implementation's process is held alike, the comparators' too (unjudged: they are trusted). A process
woken from a stop starts its next request with its threads rescheduled and its caches cold; held on one side
only, that cost the candidate alone (an identical Python candidate scored 0.87-0.91x its own code on a CPU).
SOLBENCH_NO_PAUSE=1 leaves every worker running (for a debugger attached to the candidate)."""

from __future__ import annotations

import os
import signal
import time

RAN_S = 0.001
"""CPU time the threads of a held group that the stop found in an uninterruptible wait may spend finishing it,
in the same syscall (a stopped thread may not run at all). Where the kernel keeps no run counts (no
/proc/<pid>/task/<tid>/schedstat), every thread is judged by its CPU time alone, which comes in ticks of
10 ms: RAN_TICKS_S then."""
RAN_TICKS_S = 0.03
SETTLE_S = 0.5
"""How long a hold waits for the group's threads to take the stop (a thread takes it when it next runs, which
on a loaded host can be ms away). The clock check does not count this wait (python_worker.last_request_ms,
native_worker._round)."""
STOPPED = "TtZXDI"
"""Thread states that run no code of the candidate's: stopped, traced, dead, or in an uninterruptible (or idle)
wait (it stops when that ends, before it returns to the candidate's code, unless a SIGCONT came meanwhile)."""


def wanted(spec) -> bool:
    """Whether this implementation's process is held between requests: every one's (see the module's doc)."""
    return not os.environ.get("SOLBENCH_NO_PAUSE")


class Hold:
    """One worker's process group, stopped from each reply to the next request; `judged`: whether what ran while
    it was stopped fails it (the candidate's), or it is only stopped and continued (a trusted comparator's)."""

    def __init__(self, judged: bool = True):
        self.judged = judged
        self._pgid: int | None = None
        self._seen: dict[str, tuple] | None = None

    def hold(self, pgid: int | None) -> None:
        """Stop the group `pgid` leads (each worker leads its own; None: nothing to hold), wait until its threads
        have taken the stop, and note each one's state, run count, CPU time and syscall. The group is signalled
        even when its leader is gone: what the candidate left in it stops too."""
        self._pgid, self._seen = pgid, None
        if pgid is None or not _signal_group(pgid, signal.SIGSTOP):
            return
        deadline = time.monotonic() + SETTLE_S
        while awake(seen := threads(group(pgid))) and time.monotonic() < deadline:
            time.sleep(0.0002)
        self._seen = seen

    def release(self) -> str | None:
        """Continue the group; what of it ran while it was held (see the module's doc), else None."""
        pgid, before = self._pgid, self._seen
        self._pgid = self._seen = None
        if pgid is None or before is None:
            return None
        why = ran(before, threads(group(pgid))) if self.judged else ""
        _signal_group(pgid, signal.SIGCONT)
        if why:
            return (f"the candidate's processes ran while they were stopped between requests ({why}): something "
                    f"sent them SIGCONT (a timer, F_SETSIG, a death signal)")
        return None


def ran(before: dict[str, tuple], now: dict[str, tuple]) -> str:
    """What ran between two looks at a held group's threads ({'pid/tid': (state, runs or None, cpu s, syscall)}):
    '' if nothing did. A thread stopped at the hold may not have run; one in an uninterruptible wait may only
    have finished that wait: its syscall (number, arguments, stack and instruction pointers) must be the one it
    was in, and all of them together may spend RAN_S of CPU (a vfork parent, `D` at the hold, was
    woken by a SIGCONT its child's death sent, ran its own code and stopped itself again within that time).
    One the hold could not stop in SETTLE_S ran."""
    woke, cpu, ticks_only = [], 0.0, False
    for tid, (state, runs, cpu_s, call) in before.items():
        if tid not in now:
            if state not in "DIZX":
                woke.append(f"{tid} ended")  # a stopped thread cannot end without running
            continue
        state_now, runs_now, cpu_now, call_now = now[tid]
        if state_now not in STOPPED:
            woke.append(f"{tid} awake ({state_now})")
        elif state not in STOPPED:
            woke.append(f"{tid} did not stop in {SETTLE_S:g} s ({state})")
        elif state in "Tt" and runs is not None and runs_now != runs:
            woke.append(f"{tid} ran {runs_now - runs} time(s)")
        elif state in "DI" and (call is None or call_now is None):
            woke.append(f"{tid} was in an uninterruptible wait whose syscall could not be read (ptrace access to "
                        f"/proc/<pid>/syscall: Yama's ptrace_scope, or a process made undumpable)")
        elif state in "DI" and call_now != call:
            woke.append(f"{tid} left its uninterruptible wait")
        else:  # in an uninterruptible wait when held, or no run counts kept: its CPU time
            cpu += max(0.0, cpu_now - cpu_s)
            ticks_only |= runs is None
    woke += [f"{tid} started" for tid in now if tid not in before]
    if cpu > (RAN_TICKS_S if ticks_only else RAN_S):
        woke.append(f"{cpu * 1e3:.1f} ms of CPU time")
    return ", ".join(woke[:4]) + (f" and {len(woke) - 4} more" if len(woke) > 4 else "")


def awake(seen: dict[str, tuple]) -> list[str]:
    """The threads of a look (threads()) that may run the candidate's code."""
    return [tid for tid, (state, *_) in seen.items() if state not in STOPPED]


def group(pgid: int) -> list[int]:
    """The processes in group `pgid` solbench can find: its leader and the leader's descendants, and this
    process's children in it (orphans re-parented to the subreaper)."""
    todo, seen, out = [pgid, *_children(os.getpid())], set(), []
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        fields = stat_fields(pid)
        if fields is not None and fields[2] == str(pgid):
            out.append(pid)
            todo.extend(_children(pid))
    return out


def threads(pids: list[int]) -> dict[str, tuple]:
    """{'pid/tid': (state, how many times the scheduler ran it or None, CPU seconds, its syscall line or None)}
    for every thread of processes `pids`. The run count and the CPU time in ns come from schedstat; without it,
    from stat's ticks. The syscall line (None if unreadable) is read for threads stopped or in an uninterruptible
    wait."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid in pids:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            path = f"{pid}/task/{tid}"
            fields = stat_fields(path)
            if fields is None:
                continue
            state, call = fields[0], None
            if state in "DItT":
                # first: the kernel answers only once the thread is off its CPU (wait_task_inactive), so a thread
                # seen stopped while still switching out is counted whole below; 'running': it woke meanwhile
                call = _read(f"/proc/{path}/syscall")
                state = "R" if call == b"running\n" else state
            sched = _schedstat(path)
            if sched is None:
                out[f"{pid}/{tid}"] = (state, None, (int(fields[11]) + int(fields[12])) / tick, call)
            else:
                out[f"{pid}/{tid}"] = (state, sched[2], sched[0] / 1e9, call)
    return out


def stat_fields(pid: int | str) -> list[str] | None:
    """/proc/<pid>/stat's fields after the name: state, ppid, pgrp, ..., utime at 11; None once it is gone."""
    stat = _read(f"/proc/{pid}/stat")
    return None if stat is None else stat[stat.rindex(b")") + 2:].decode(errors="replace").split()


def _schedstat(path: str) -> list[int] | None:
    """/proc/<path>/schedstat: ns on a CPU, ns waiting for one, times run; None where the kernel keeps none."""
    try:
        values = [int(x) for x in (_read(f"/proc/{path}/schedstat") or b"").split()]
    except ValueError:
        return None
    return values if len(values) == 3 else None


def _read(path: str) -> bytes | None:
    """A small /proc file whole (os calls: a hold reads up to three per thread), None once gone or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)


def _children(pid: int) -> list[int]:
    out = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for task in tasks:
        out.extend(int(x) for x in (_read(f"/proc/{pid}/task/{task}/children") or b"").split())
    return out


def end_group(pgid: int) -> bool:
    """SIGKILL to every process of group `pgid`, its leader alive or not; False when none is left."""
    return _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError, OSError):
        return False  # no process left in it: its next request starts a fresh worker, or stop() reaps it
