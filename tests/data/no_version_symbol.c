/* An entry point but no solbench_abi_version (header's symbol suppressed): the loader must refuse it. */
#define SOLBENCH_NO_VERSION_SYMBOL
#include "solbench_attention.h"

int solbench_attention_forward(const SolbenchAttentionParams* p) { return p == 0; }
