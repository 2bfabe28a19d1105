// retiled_seed.cu -- an honest kernel with other tiles than the seed's (32 query rows per block where the seed
// takes 64, 16 keys per step where it takes 32): different blocking, different rounding order inside
// each row's sums, the same attention. A harness check that rejects it is a false positive.
// expect: passed
#define solbench_attention_forward seed_attention_forward  // reuse the seed's kernel template
#include "../seed_attention.cu"
#undef solbench_attention_forward

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    int status = validate(p);
    if (status != SOLBENCH_OK) return status;
    int d = max(p->head_dim_qk, p->head_dim_v);
    if (d <= 64) return launch<64, 32, 16>(*p);
    if (d <= 128) return launch<128, 32, 16>(*p);
    return seed_attention_forward(p);
}
