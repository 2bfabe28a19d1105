"""CudaOps: the CUDA operations `solbench.sandbox.timing.Timer` orders (events, L2 flush, launch cover, device
synchronisation, graph capture, persisting-L2 checks). The only module that touches torch.cuda timing state.

Everything is on the current stream of one device; times are in ms.
"""

from __future__ import annotations

from typing import Protocol

from solbench.core.errors import ConfigError


class DeviceOps(Protocol):
    """What `Timer` needs from a device; `CudaOps` is the real one, the tests pass a simulated one."""

    def event(self): ...
    def record(self, event) -> None: ...
    def elapsed_ms(self, a, b) -> float: ...
    def flush(self) -> None: ...
    def cover(self, ms: float) -> None: ...
    def observe_cover(self, requested_ms: float, actual_ms: float) -> None: ...
    def wait_stream(self) -> None: ...
    def wait_device(self) -> None: ...
    def on_device(self): ...
    def persisting_l2_set(self) -> bool: ...
    def capture(self, call): ...
    def describe(self) -> dict: ...

_FALLBACK_FLUSH_BYTES = 256 << 20
"""Flush size when the device reports no L2 size (some virtualised GPUs)."""


class CudaOps:
    """Operations on one CUDA device; `notes` receives one line per thing done or impossible."""

    def __init__(self, device: str, cold_l2: bool, notes: list[str], flush: str = "write"):
        """flush='write' overwrites the buffer (the recorded method); 'read' sums it instead, which evicts
        the same lines but leaves them clean, so no write-back of flush data lands in the timed kernel;
        'both' writes it and then reads it (TimingPolicy.l2_flush)."""
        from solbench.core.policy import L2_FLUSH_METHODS

        if flush not in L2_FLUSH_METHODS:
            raise ConfigError(f"CudaOps: flush must be one of {', '.join(L2_FLUSH_METHODS)}, got {flush!r}")
        import torch

        if not torch.cuda.is_available():
            raise ConfigError("Timer: device 'cuda' requested but torch sees no CUDA device")
        self.torch = torch
        dev = torch.device(device)
        self.index = dev.index if dev.index is not None else torch.cuda.current_device()
        self.notes = notes
        props = torch.cuda.get_device_properties(self.index)
        self.gpu_name = props.name
        self.l2_bytes = int(getattr(props, "L2_cache_size", 0) or 0)
        self._buf = None
        self._fill = 0
        self._mode = flush
        with torch.cuda.device(self.index):
            if cold_l2:
                nbytes = 2 * self.l2_bytes if self.l2_bytes else _FALLBACK_FLUSH_BYTES
                self._buf = torch.zeros(nbytes // 4, dtype=torch.int32, device=f"cuda:{self.index}")
                self._sink = torch.zeros((), dtype=torch.int64, device=f"cuda:{self.index}")
                done = {"read": "read", "write": "written", "both": "written then read"}[flush]
                notes.append(f"L2 flush: {nbytes} bytes {done} before every "
                             f"timed iteration (device reports L2 = {self.l2_bytes} bytes)")
            else:
                notes.append("L2 flush: off (policy.cold_l2 is False)")
            self._rt, self._persisting_ok = self._reset_persisting_l2()
            self._cycles_per_ms = self._calibrate_cover()

    # ---------------------------------------------------------------- what Timer calls

    def event(self):
        return self.torch.cuda.Event(enable_timing=True)

    def record(self, event) -> None:
        event.record(self.torch.cuda.current_stream(self.index))

    def elapsed_ms(self, a, b) -> float:
        return float(a.elapsed_time(b))

    def flush(self) -> None:
        """Write every byte of a buffer of 2x L2 (the value alternates, so every line really changes), or
        read it all in the 'read' mode, or both in that order."""
        if self._buf is None:
            return
        if self._mode != "read":
            self._fill ^= 1
            self._buf.fill_(self._fill + 1)
        if self._mode != "write":
            self.torch.sum(self._buf, 0, dtype=self.torch.int64, out=self._sink)

    def cover(self, ms: float) -> None:
        """Spin kernel of about `ms` on the stream (torch.cuda._sleep counts SM clock cycles)."""
        if self._cycles_per_ms:
            self.torch.cuda._sleep(max(1, int(ms * self._cycles_per_ms)))

    def observe_cover(self, requested_ms: float, actual_ms: float) -> None:
        """Track the SM clock: a cover that took longer or shorter than asked rescales the next one."""
        if self._cycles_per_ms and requested_ms > 0.02 and actual_ms > 0.02:
            observed = requested_ms * self._cycles_per_ms / actual_ms
            self._cycles_per_ms = 0.8 * self._cycles_per_ms + 0.2 * observed

    def wait_stream(self) -> None:
        self.torch.cuda.current_stream(self.index).synchronize()

    def wait_device(self) -> None:
        self.torch.cuda.synchronize(self.index)

    def on_device(self):
        return self.torch.cuda.device(self.index)

    def persisting_l2_set(self) -> bool:
        """True if a persisting-L2 carve-out is set now (a candidate set one); it is then reset to 0."""
        if not self._persisting_ok:
            return False
        try:
            if self._rt.persisting_l2_limit() == 0:
                return False
            self._rt.set_persisting_l2_limit(0)
            self._rt.reset_persisting_l2()
        except RuntimeError:
            self._rt.clear_last_error()
            return False
        self.notes.append("a persisting-L2 carve-out was found set during timing and reset")
        return True

    def capture(self, call):
        """CUDA graph of one call, captured per the torch docs: warm up on a side stream first (lazy init,
        workspaces, allocator growth), then capture. Returns (replay, release); raises if capture fails."""
        torch = self.torch
        current = torch.cuda.current_stream(self.index)
        side = torch.cuda.Stream(self.index)
        side.wait_stream(current)
        with torch.cuda.stream(side):
            for _ in range(3):
                call()
        current.wait_stream(side)
        torch.cuda.synchronize(self.index)
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                call()
        except BaseException:
            self._recover()
            raise
        return graph.replay, graph.reset

    def describe(self) -> dict:
        return {"gpu": self.gpu_name, "l2_bytes": self.l2_bytes, "flush": self._mode,
                "flush_bytes": 0 if self._buf is None else self._buf.numel() * 4,
                "cover": "torch.cuda._sleep" if self._cycles_per_ms else "off",
                "persisting_l2_control": self._rt.source if self._persisting_ok else None}

    # ---------------------------------------------------------------- setup helpers

    def _reset_persisting_l2(self):
        """Limit 0 + reset persisting lines: a carve-out would keep a kernel's inputs warm through the flush.
        Returns (runtime or None, whether the reset worked)."""
        from solbench.gpu import cudart

        try:
            rt = cudart.load()
        except cudart.RuntimeUnavailable as exc:
            self.notes.append(f"persisting-L2 reset impossible: {exc}")
            return None, False
        try:
            rt.set_persisting_l2_limit(0)
            rt.reset_persisting_l2()
        except (RuntimeError, AttributeError) as exc:
            rt.clear_last_error()
            self.notes.append(f"persisting-L2 reset failed via {rt.source}: {exc}")
            return rt, False
        self.notes.append(f"persisting-L2 carve-out set to 0 and persisting lines reset (via {rt.source})")
        return rt, True

    def _calibrate_cover(self) -> float:
        """SM cycles per ms for torch.cuda._sleep, measured after ~20 ms of spinning so clocks have ramped."""
        torch = self.torch
        if not hasattr(torch.cuda, "_sleep"):
            self.notes.append("launch cover: off (torch.cuda._sleep missing); launcher gaps may be timed")
            return 0.0
        a, b = self.event(), self.event()
        rate = 1.0e6  # cycles per ms at 1 GHz, first guess
        for _ in range(4):
            self.record(a)
            torch.cuda._sleep(int(5.0 * rate))
            self.record(b)
            torch.cuda.synchronize(self.index)
            rate = 5.0 * rate / max(float(a.elapsed_time(b)), 1e-3)
        self.notes.append(f"launch cover: torch.cuda._sleep, {rate / 1e3:.0f} cycles/us at calibration")
        return rate

    def _recover(self) -> None:
        """After a failed capture: drain the device and clear the pending error so torch's next launch check
        does not report it."""
        try:
            self.torch.cuda.synchronize(self.index)
        except Exception:  # the capture error itself may surface here once
            pass
        if self._rt is not None:
            self._rt.clear_last_error()
