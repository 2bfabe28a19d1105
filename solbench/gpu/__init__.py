"""The CUDA edge: runtime and driver calls, the device memory shared with workers and the file descriptors
it is sent as, events and flushes, telemetry, environment, calibration."""
