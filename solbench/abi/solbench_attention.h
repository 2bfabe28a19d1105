/*
 * solbench_attention.h -- the C ABI between solbench and a CUDA attention-forward candidate.
 *
 * A candidate is one .cu file built into a shared library that exports
 *
 *     int    solbench_attention_forward(const SolbenchAttentionParams* p);       required
 *     size_t solbench_attention_workspace_size(const SolbenchAttentionParams* p); optional
 *     const int32_t solbench_abi_version;       defined by including this header
 *
 * Including this header defines `solbench_abi_version` (a weak symbol, so several translation
 * units may include it); the loader refuses a library whose value differs from its own. Kernel code
 * needs nothing but the CUDA runtime: no torch, no Python.
 *
 * ---------------------------------------------------------------------------------------------
 * TENSORS (all device pointers, at least 16-byte aligned, dense, row-major; element strides are
 * implied by these shapes -- they are exactly the tensors of solbench/supervisor/inputs.py):
 *
 *   q            [total_q, heads_q, head_dim_qk]          dtype
 *   k            contiguous: [total_kv, heads_kv, head_dim_qk]
 *                paged:      [num_pages, page_size, heads_kv, head_dim_qk]   dtype
 *   v            like k with head_dim_v                                      dtype
 *   out          [total_q, heads_q, head_dim_v]   bf16 for SOLBENCH_DTYPE_FP8_E4M3, else dtype
 *   lse          [total_q, heads_q] fp32, natural log; may be NULL (then do not write it)
 *   cu_seqlens_q [batch + 1] int32: rows of sequence b are cu_seqlens_q[b] .. cu_seqlens_q[b+1]-1
 *   cu_seqlens_kv[batch + 1] int32: same for k/v rows when contiguous (still filled when paged)
 *   kv_lens      [batch] int32: keys of sequence b
 *   page_table   [batch, page_table_stride] int32, NULL when contiguous: key j of sequence b lives
 *                in page page_table[b * page_table_stride + j / page_size], slot j % page_size.
 *                Pages are deliberately not in order; entries past a sequence's pages are unused.
 *   sinks        [heads_q] fp32 or NULL
 *   mask_bits    [heads_q, total_q, mask_row_words] 32-bit words or NULL: key j of a query row is
 *                visible iff bit (j % 32) of word (j / 32) is set (bits past kv_len are 0)
 *   q/k/v_descale fp32, NULL unless fp8: [1] (per_tensor) or [heads_kv] (per_head); query head h
 *                uses q_descale[h / (heads_q / heads_kv)] (one factor per KV-head group)
 *   workspace    workspace_bytes bytes of device memory (NULL/0 when no size function exported)
 *
 * SEMANTICS (the fp32 reference solbench.reference is their executable definition):
 *   - Query i of sequence b sits on the bottom-right aligned diagonal d = i + kv_len - q_len.
 *   - causal: key j visible only if j <= d (window_right is then treated as 0).
 *   - window_left >= 0: only if j >= d - window_left; window_right >= 0: only if
 *     j <= d + window_right; -1 = unbounded on that side.
 *   - mask_bits, when given, is ANDed with the above.
 *   - GQA/MQA: query head h reads KV head h / (heads_q / heads_kv).
 *   - s = softmax_scale * (q . k) (with descales: q*q_descale . k*k_descale); softcap > 0 replaces
 *     s by softcap * tanh(s / softcap) BEFORE masking; v is multiplied by v_descale.
 *   - sinks: sink[h] joins the softmax denominator only:
 *         out = sum_j e^{s_j} v_j / (sum_j e^{s_j} + e^{sink[h]})
 *     and lse = log(sum_j e^{s_j}) EXCLUDES the sink.
 *   - A row with nothing visible (q_len > 0, kv_len == 0, or everything masked) writes out = 0 and
 *     lse = -inf; never NaN. Sequences with q_len == 0 or kv_len == 0 occur in ragged batches.
 *   - Every element of out (and lse when non-NULL) must be written: the harness poisons them
 *     before each call and fails a kernel that leaves poison behind.
 *   - Accumulate in fp32.
 *
 * STREAM: all device work must be ordered on `stream` (a cudaStream_t); the harness's timing
 * events are recorded there. Work on other streams must be joined back to `stream` before the
 * function returns. Do not synchronize the device.
 *
 * RETURN: SOLBENCH_OK, or one of the SOLBENCH_ERR_* codes (SOLBENCH_ERR_UNSUPPORTED marks a
 * scenario the kernel does not implement; it is reported as such, never as a speed-up).
 */
#ifndef SOLBENCH_ATTENTION_H
#define SOLBENCH_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#define SOLBENCH_ABI_VERSION 1

/* dtype of q, k, v */
#define SOLBENCH_DTYPE_BF16 0
#define SOLBENCH_DTYPE_FP16 1
#define SOLBENCH_DTYPE_FP8_E4M3 2 /* out is bf16 */

/* descale_mode */
#define SOLBENCH_DESCALE_NONE 0
#define SOLBENCH_DESCALE_PER_TENSOR 1 /* q/k/v_descale have 1 element */
#define SOLBENCH_DESCALE_PER_HEAD 2   /* q/k/v_descale have heads_kv elements */

/* return codes */
#define SOLBENCH_OK 0
#define SOLBENCH_ERR_INVALID_ARGUMENT 1 /* params inconsistent (a harness bug) */
#define SOLBENCH_ERR_UNSUPPORTED 2      /* a valid scenario this kernel does not implement */
#define SOLBENCH_ERR_CUDA 3             /* a CUDA call or launch failed */
#define SOLBENCH_ERR_WORKSPACE 4        /* workspace missing or too small */

/* Fixed-width fields only; 8-byte fields first, so the layout has no implicit padding on LP64. */
typedef struct SolbenchAttentionParams {
    int32_t abi_version;  /* SOLBENCH_ABI_VERSION the harness filled this with */
    int32_t struct_bytes; /* sizeof(SolbenchAttentionParams) as the harness sees it */

    const void* q;
    const void* k;
    const void* v;
    void* out;
    float* lse; /* may be NULL */
    const int32_t* cu_seqlens_q;
    const int32_t* cu_seqlens_kv;
    const int32_t* kv_lens;
    const int32_t* page_table; /* NULL when contiguous */
    const float* sinks;        /* NULL when no sinks */
    const uint32_t* mask_bits; /* NULL when no custom mask */
    const float* q_descale;    /* NULL unless fp8 */
    const float* k_descale;
    const float* v_descale;
    void* workspace;
    uint64_t workspace_bytes;
    void* stream; /* cudaStream_t */

    int32_t batch;             /* sequences */
    int32_t total_q;           /* query rows, sum of q lengths */
    int32_t total_kv;          /* rows of contiguous k/v (sum of kv_lens); 0 when paged */
    int32_t max_q_len;         /* longest query sequence, tokens */
    int32_t max_kv_len;        /* longest key sequence, tokens */
    int32_t heads_q;
    int32_t heads_kv;          /* divides heads_q */
    int32_t head_dim_qk;       /* multiple of 8 */
    int32_t head_dim_v;        /* multiple of 8 */
    int32_t page_size;         /* tokens per page; 0 = contiguous */
    int32_t num_pages;         /* pages in the k/v pools; 0 when contiguous */
    int32_t page_table_stride; /* int32 elements between page_table rows (= max pages per seq) */
    int32_t mask_row_words;    /* 32-bit words per mask row; 0 when mask_bits is NULL */
    int32_t dtype;             /* SOLBENCH_DTYPE_* */
    int32_t descale_mode;      /* SOLBENCH_DESCALE_* */
    int32_t causal;            /* 0 or 1, bottom-right aligned */
    int32_t window_left;       /* -1 = unbounded */
    int32_t window_right;      /* -1 = unbounded */
    float softmax_scale;       /* multiplier of q . k */
    float softcap;             /* 0 = off */
} SolbenchAttentionParams;

#define SOLBENCH_PARAMS_BYTES 224
#ifdef __cplusplus
static_assert(sizeof(void*) != 8 || sizeof(SolbenchAttentionParams) == SOLBENCH_PARAMS_BYTES,
              "SolbenchAttentionParams layout changed: bump SOLBENCH_ABI_VERSION");
#else
_Static_assert(sizeof(void*) != 8 || sizeof(SolbenchAttentionParams) == SOLBENCH_PARAMS_BYTES,
               "SolbenchAttentionParams layout changed: bump SOLBENCH_ABI_VERSION");
#endif

#ifdef __cplusplus
#define SOLBENCH_EXTERN_C extern "C"
#else
#define SOLBENCH_EXTERN_C
#endif
#define SOLBENCH_EXPORT __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif
/* Enqueue one attention forward on p->stream. Returns SOLBENCH_OK or SOLBENCH_ERR_*. */
SOLBENCH_EXPORT int solbench_attention_forward(const SolbenchAttentionParams* p);
/* Optional: bytes of workspace the call needs (p is filled except workspace*). */
SOLBENCH_EXPORT size_t solbench_attention_workspace_size(const SolbenchAttentionParams* p);
/* Optional: define `SOLBENCH_EXPORT const int solbench_nondeterministic = 1;` when two calls on the same
   inputs may differ in their bits (atomics); otherwise solbench requires bit-identical repeated calls. */
#ifdef __cplusplus
}
#endif

#ifndef SOLBENCH_NO_VERSION_SYMBOL
/* The version this library was compiled against, checked when it is loaded. */
SOLBENCH_EXTERN_C SOLBENCH_EXPORT __attribute__((weak)) const int32_t solbench_abi_version =
    SOLBENCH_ABI_VERSION;
#endif

#endif /* SOLBENCH_ATTENTION_H */
