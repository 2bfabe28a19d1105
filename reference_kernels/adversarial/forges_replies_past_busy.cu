// forges_replies_past_busy.cu -- forges_replies.cu at a factor of 0.1 instead of 0.55.
// For a round made of 2ba16ef, the explained part of a native round was the runner's "busy_ms" (runner.cu cmd_round,
// native_worker._round "clock"), which this forger leaves alone: wall - busy was only the pipe, so nothing was ever
// unexplained, whatever the other numbers said, at any factor. Since then, beside a trusted native runner (the
// seed) the round is explained by its reported call times alone and this is caught; with none (--seed none) the
// runner's claim counts up to NATIVE_BETWEEN_CAP_MS a call (audit.py), which is this forger's slack
// (tests/test_forgery_cpu.py). Every time of a round reply is scaled by 0.1.
// expect: hidden_work or tampered
#define FORGE_FACTOR 0.1
#include "forges_replies.cu"
