/* A host-side stand-in for a kernel, for loader tests on machines without a GPU: bound to CPU tensors,
 * it sees host pointers. It keeps a copy of the last params, asks for a workspace, fills out with
 * bf16/fp16 1.0 and lse with the row index, and declines softcap scenarios (SOLBENCH_ERR_UNSUPPORTED). */
#include <string.h>

#include "solbench_attention.h"

SolbenchAttentionParams last_params;
int calls;

size_t solbench_attention_workspace_size(const SolbenchAttentionParams* p) { return 64 + (size_t)p->total_q; }

int solbench_attention_forward(const SolbenchAttentionParams* p) {
    if (p->abi_version != SOLBENCH_ABI_VERSION || p->struct_bytes != (int)sizeof(*p)) return SOLBENCH_ERR_INVALID_ARGUMENT;
    if (p->workspace == NULL || p->workspace_bytes != solbench_attention_workspace_size(p)) return SOLBENCH_ERR_WORKSPACE;
    if (p->softcap > 0.0f) return SOLBENCH_ERR_UNSUPPORTED;
    memcpy(&last_params, p, sizeof(*p));
    calls++;
    uint16_t one = p->dtype == SOLBENCH_DTYPE_FP16 ? 0x3C00 : 0x3F80; /* 1.0 in fp16 / bf16 */
    long n = (long)p->total_q * p->heads_q * p->head_dim_v;
    for (long i = 0; i < n; ++i) ((uint16_t*)p->out)[i] = one;
    if (p->lse != NULL)
        for (long i = 0; i < (long)p->total_q * p->heads_q; ++i) p->lse[i] = (float)(i / p->heads_q);
    memset(p->workspace, 0xab, p->workspace_bytes);
    return SOLBENCH_OK;
}
