"""The CUDA edge: runtime calls, events and flushes, telemetry, environment, calibration."""
