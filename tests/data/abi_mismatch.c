/* A library built against a future ABI: the loader must refuse it, naming both versions. */
#include <stdint.h>

const int32_t solbench_abi_version = 999;
int solbench_attention_forward(const void* params) { return params == 0; }
