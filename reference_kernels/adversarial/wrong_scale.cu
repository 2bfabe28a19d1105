// wrong_scale.cu -- the seed with softmax_scale 3% too large: plausible outputs, wrong numbers.
// The harness must report every scenario wrong (LSE off by ~3% of the logits; out beyond tolerance).
#define solbench_attention_forward seed_attention_forward  // reuse the seed under another name
#include "../seed_attention.cu"
#undef solbench_attention_forward

extern "C" SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p) {
    SolbenchAttentionParams wrong = *p;
    wrong.softmax_scale = p->softmax_scale * 1.03f;
    return seed_attention_forward(&wrong);
}
