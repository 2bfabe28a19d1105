// segfault.cu -- dereferences a null host pointer inside the entry point (SIGSEGV in the worker).
// The harness must report a crash for the scenario and carry on with the rest of the run.
#include "solbench_attention.h"

extern "C" int solbench_attention_forward(const SolbenchAttentionParams* p) {
    volatile int* nowhere = nullptr;
    *nowhere = p->batch;
    return SOLBENCH_OK;
}
