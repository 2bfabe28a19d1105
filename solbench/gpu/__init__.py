"""The CUDA edge: runtime and driver calls, the device memory shared with workers and its IPC tokens, events
and flushes, telemetry, environment, calibration."""
