// seed_attention.cu -- solbench's seed kernel: slow, general, obviously correct.
//
// Every scenario solbench can express runs here: bf16 / fp16 / fp8 e4m3 (per-tensor or per-head
// descales), contiguous or paged KV, ragged batches with empty sequences, GQA/MQA, bottom-right
// causal, sliding window, softcap, sinks, custom bitmask, any head dim that is a multiple of 8 up
// to 512. It is the first yardstick every candidate is compared with, so it favours clarity over
// speed: fp32 CUDA-core math, no tensor cores, no async copies.
//
// Work split: one CTA (128 threads) per (tile of BQ "rows", KV head, sequence). A row is one
// (query token, query head of this KV head's group) pair, so the query heads that share a KV head
// share every K/V tile staged in shared memory (GQA decode uses G rows instead of 1).
// For each key tile of BK keys inside the tile's visible interval:
//   1. stage K and V (converted to fp32) into shared memory;
//   2. S = Q K^T, each thread a TM x TN block of scores; softcap, then mask to -inf;
//   3. online softmax: one thread per row updates the running max m and sum l, turns S into P;
//   4. O = alpha * O + P V, each thread a TM x DC block of O in registers.
// Finally O / (l + sink term) is written as bf16/fp16 and LSE = m + log(l) (sink excluded).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "solbench_attention.h"

#define UNROLL _Pragma("unroll")  // loops over register arrays need constant indices

namespace {

constexpr int kThreads = 128;
constexpr int kRowGroups = 16;  // threads along rows: thread owns rows ty, ty + 16, ...
constexpr int kColGroups = 8;   // threads along keys / value columns: tx, tx + 8, ...
static_assert(kRowGroups * kColGroups == kThreads, "thread grid");

// Eight consecutive q/k/v elements starting at element `offset`, converted to fp32.
// Head dims are multiples of 8 and tensors 16-byte aligned, so one vector load suffices.
__device__ void load8(const void* base, long long offset, int dtype, float out[8]) {
    if (dtype == SOLBENCH_DTYPE_FP8_E4M3) {
        uint2 raw = *reinterpret_cast<const uint2*>(static_cast<const uint8_t*>(base) + offset);
        const __nv_fp8_e4m3* e = reinterpret_cast<const __nv_fp8_e4m3*>(&raw);
        for (int i = 0; i < 8; ++i) out[i] = float(e[i]);
    } else {
        uint4 raw = *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(base) + offset);
        if (dtype == SOLBENCH_DTYPE_BF16) {
            const __nv_bfloat16* e = reinterpret_cast<const __nv_bfloat16*>(&raw);
            for (int i = 0; i < 8; ++i) out[i] = __bfloat162float(e[i]);
        } else {
            const __half* e = reinterpret_cast<const __half*>(&raw);
            for (int i = 0; i < 8; ++i) out[i] = __half2float(e[i]);
        }
    }
}

__device__ float descale_for(const float* descale, int mode, int kv_head) {
    if (mode == SOLBENCH_DESCALE_NONE) return 1.0f;
    return mode == SOLBENCH_DESCALE_PER_HEAD ? descale[kv_head] : descale[0];
}

// Keys [lo, hi) that query token `tok` sees from causal + window alone (bottom-right aligned).
__device__ void visible_interval(const SolbenchAttentionParams& p, int tok, int q_len, int kv_len, int* lo, int* hi) {
    int diag = tok + kv_len - q_len;
    int right = p.causal ? 0 : p.window_right;
    *lo = p.window_left >= 0 ? max(0, diag - p.window_left) : 0;
    *hi = right >= 0 ? min(kv_len, diag + right + 1) : kv_len;
}

// Element offset of key `key`'s row (for KV head kvh) in the k or v tensor, paged or contiguous.
__device__ long long kv_row_offset(const SolbenchAttentionParams& p, int b, int key, int kvh, int head_dim) {
    long long token;
    if (p.page_size > 0) {
        int page = p.page_table[(long long)b * p.page_table_stride + key / p.page_size];
        token = (long long)page * p.page_size + key % p.page_size;
    } else {
        token = (long long)p.cu_seqlens_kv[b] + key;
    }
    return (token * p.heads_kv + kvh) * head_dim;
}

template <int D, int BQ, int BK>
struct Tile {
    static constexpr int TM = BQ / kRowGroups;  // rows per thread
    static constexpr int TN = BK / kColGroups;  // keys per thread (scores)
    static constexpr int DC = D / kColGroups;   // output columns per thread
    static constexpr int LD = D + 1;            // odd row stride: no shared-memory bank conflicts
    static constexpr int LP = BK + 1;
    static constexpr size_t smem_bytes =
        sizeof(float) * (BQ * LD + 2 * BK * LD + BQ * LP + 3 * BQ) + sizeof(int) * 3 * BQ;
    static_assert(BQ % kRowGroups == 0 && BK % kColGroups == 0 && D % kColGroups == 0, "tile shape");
    static_assert(32 % BK == 0, "a key tile must sit inside one 32-bit mask word");
};

template <int D, int BQ, int BK>
__global__ void __launch_bounds__(kThreads, 2) seed_attention_kernel(const SolbenchAttentionParams p) {
    using T = Tile<D, BQ, BK>;
    extern __shared__ float smem[];
    float* qs = smem;                   // [BQ][LD]  q * softmax_scale * q_descale * k_descale
    float* ks = qs + BQ * T::LD;        // [BK][LD]
    float* vs = ks + BK * T::LD;        // [BK][LD]
    float* ps = vs + BK * T::LD;        // [BQ][LP]  scores, then probabilities
    float* row_m = ps + BQ * T::LP;     // running max of each row
    float* row_l = row_m + BQ;          // running sum of exp(s - m)
    float* row_alpha = row_l + BQ;      // rescale factor of this tile
    int* row_lo = reinterpret_cast<int*>(row_alpha + BQ);
    int* row_hi = row_lo + BQ;
    uint32_t* row_mask = reinterpret_cast<uint32_t*>(row_hi + BQ);  // mask word of this key tile

    const int tid = threadIdx.x, ty = tid / kColGroups, tx = tid % kColGroups;
    const int b = blockIdx.z, kvh = blockIdx.y;
    const int group = p.heads_q / p.heads_kv;
    const int q_start = p.cu_seqlens_q[b], q_len = p.cu_seqlens_q[b + 1] - q_start;
    const int kv_len = p.kv_lens[b];
    const int row0 = blockIdx.x * BQ;  // rows are (token, head in group), token-major
    if (row0 >= q_len * group) return;
    const int d_qk = p.head_dim_qk, d_v = p.head_dim_v;
    const int out_is_fp16 = p.dtype == SOLBENCH_DTYPE_FP16;

    // Rows -> (token, head); the keys the whole tile can see are [k_lo, k_hi) since lo and hi
    // grow with the token: the first token has the smallest lo, the last the largest hi.
    auto row_token = [&](int r) { return (row0 + r) / group; };
    auto row_head = [&](int r) { return kvh * group + (row0 + r) % group; };
    const int last_tok = min(row_token(BQ - 1), q_len - 1);
    int k_lo, k_hi, unused;
    visible_interval(p, row_token(0), q_len, kv_len, &k_lo, &unused);
    visible_interval(p, last_tok, q_len, kv_len, &unused, &k_hi);

    for (int r = tid; r < BQ; r += kThreads) {
        int lo = 0, hi = 0;
        if (row_token(r) < q_len) visible_interval(p, row_token(r), q_len, kv_len, &lo, &hi);
        row_lo[r] = lo;
        row_hi[r] = hi;
        row_m[r] = -INFINITY;
        row_l[r] = 0.0f;
    }

    // Stage Q once, pre-multiplied so that qs . ks is the final scaled score.
    const float score_mult = p.softmax_scale * descale_for(p.q_descale, p.descale_mode, kvh) *
                             descale_for(p.k_descale, p.descale_mode, kvh);
    // Consecutive threads take consecutive rows: their shared-memory stores hit distinct banks.
    for (int i = tid; i < BQ * (D / 8); i += kThreads) {
        int r = i % BQ, c = (i / BQ) * 8;
        float x[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        if (row_token(r) < q_len && c < d_qk) {
            long long q_row = (long long)q_start + row_token(r);
            load8(p.q, (q_row * p.heads_q + row_head(r)) * d_qk + c, p.dtype, x);
        }
        for (int e = 0; e < 8; ++e) qs[r * T::LD + c + e] = x[e] * score_mult;
    }

    float acc[T::TM][T::DC];
    UNROLL for (int i = 0; i < T::TM; ++i)
        UNROLL for (int j = 0; j < T::DC; ++j) acc[i][j] = 0.0f;

    for (int k0 = (k_lo / BK) * BK; k0 < k_hi; k0 += BK) {
        __syncthreads();  // the previous tile's ks, vs, ps are no longer read
        // 1. Stage K and V rows k0 .. k0+BK-1; keys past kv_len are zeros (P is 0 there too).
        for (int i = tid; i < BK * (D / 8); i += kThreads) {
            int c = i % BK, col = (i / BK) * 8, key = k0 + c;
            float kx[8] = {0, 0, 0, 0, 0, 0, 0, 0}, vx[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            if (key < kv_len && col < d_qk) load8(p.k, kv_row_offset(p, b, key, kvh, d_qk) + col, p.dtype, kx);
            if (key < kv_len && col < d_v) load8(p.v, kv_row_offset(p, b, key, kvh, d_v) + col, p.dtype, vx);
            for (int e = 0; e < 8; ++e) {
                ks[c * T::LD + col + e] = kx[e];
                vs[c * T::LD + col + e] = vx[e];
            }
        }
        for (int r = tid; r < BQ; r += kThreads) {
            uint32_t word = p.mask_bits == nullptr ? 0xffffffffu : 0u;  // no mask: all keys pass
            if (p.mask_bits != nullptr && row_token(r) < q_len && k0 / 32 < p.mask_row_words) {
                long long mrow = (long long)row_head(r) * p.total_q + q_start + row_token(r);
                word = p.mask_bits[mrow * p.mask_row_words + k0 / 32];
            }
            row_mask[r] = word;
        }
        __syncthreads();

        // 2. Scores for rows ty + 16 i and keys tx + 8 j; softcap before masking.
        float s[T::TM][T::TN];
        UNROLL for (int i = 0; i < T::TM; ++i)
            UNROLL for (int j = 0; j < T::TN; ++j) s[i][j] = 0.0f;
#pragma unroll 8
        for (int d = 0; d < d_qk; ++d) {
            float a[T::TM], kk[T::TN];
            UNROLL for (int i = 0; i < T::TM; ++i) a[i] = qs[(ty + kRowGroups * i) * T::LD + d];
            UNROLL for (int j = 0; j < T::TN; ++j) kk[j] = ks[(tx + kColGroups * j) * T::LD + d];
            UNROLL for (int i = 0; i < T::TM; ++i)
                UNROLL for (int j = 0; j < T::TN; ++j) s[i][j] = fmaf(a[i], kk[j], s[i][j]);
        }
        UNROLL for (int i = 0; i < T::TM; ++i) {
            int r = ty + kRowGroups * i;
            UNROLL for (int j = 0; j < T::TN; ++j) {
                int c = tx + kColGroups * j, key = k0 + c;
                float x = s[i][j];
                if (p.softcap > 0.0f) x = p.softcap * tanhf(x / p.softcap);
                bool visible = key >= row_lo[r] && key < row_hi[r] && ((row_mask[r] >> (key % 32)) & 1u);
                ps[r * T::LP + c] = visible ? x : -INFINITY;
            }
        }
        __syncthreads();

        // 3. Online softmax, one thread per row: new max, rescale factor, P = exp(S - m).
        for (int r = tid; r < BQ; r += kThreads) {
            float tile_max = -INFINITY;
            for (int c = 0; c < BK; ++c) tile_max = fmaxf(tile_max, ps[r * T::LP + c]);
            float m_old = row_m[r], m_new = fmaxf(m_old, tile_max);
            float alpha = m_new == -INFINITY ? 1.0f : expf(m_old - m_new);  // exp(-inf) = 0
            float sum = 0.0f;
            for (int c = 0; c < BK; ++c) {
                float x = ps[r * T::LP + c];
                float e = x == -INFINITY ? 0.0f : expf(x - m_new);
                ps[r * T::LP + c] = e;
                sum += e;
            }
            row_m[r] = m_new;
            row_l[r] = row_l[r] * alpha + sum;
            row_alpha[r] = alpha;
        }
        __syncthreads();

        // 4. O = alpha * O + P V for rows ty + 16 i and columns tx + 8 j.
        UNROLL for (int i = 0; i < T::TM; ++i) {
            float alpha = row_alpha[ty + kRowGroups * i];
            UNROLL for (int j = 0; j < T::DC; ++j) acc[i][j] *= alpha;
        }
        for (int c = 0; c < BK; ++c) {
            float pr[T::TM];
            UNROLL for (int i = 0; i < T::TM; ++i) pr[i] = ps[(ty + kRowGroups * i) * T::LP + c];
            UNROLL for (int j = 0; j < T::DC; ++j) {
                float v = vs[c * T::LD + tx + kColGroups * j];
                UNROLL for (int i = 0; i < T::TM; ++i) acc[i][j] = fmaf(pr[i], v, acc[i][j]);
            }
        }
    }
    __syncthreads();

    // Normalise and write. A sink joins the denominator only; an empty row (l = 0) writes 0.
    const float v_descale = descale_for(p.v_descale, p.descale_mode, kvh);
    UNROLL for (int i = 0; i < T::TM; ++i) {
        int r = ty + kRowGroups * i;
        if (row_token(r) >= q_len) continue;
        float m = row_m[r], l = row_l[r], norm = 0.0f;
        if (l > 0.0f) {
            float denom = l;
            if (p.sinks != nullptr) {  // l e^m + e^sink, both terms taken relative to max(m, sink)
                float sink = p.sinks[row_head(r)], top = fmaxf(m, sink);
                denom = l * expf(m - top) + expf(sink - top);
                norm = expf(m - top) / denom;
            } else {
                norm = 1.0f / denom;
            }
        }
        long long out_row = ((long long)q_start + row_token(r)) * p.heads_q + row_head(r);
        UNROLL for (int j = 0; j < T::DC; ++j) {
            int col = tx + kColGroups * j;
            if (col >= d_v) continue;
            float o = acc[i][j] * norm * v_descale;
            if (out_is_fp16) static_cast<__half*>(p.out)[out_row * d_v + col] = __float2half(o);
            else static_cast<__nv_bfloat16*>(p.out)[out_row * d_v + col] = __float2bfloat16(o);
        }
    }
    if (p.lse != nullptr) {
        for (int r = tid; r < BQ; r += kThreads) {
            if (row_token(r) >= q_len) continue;
            long long out_row = ((long long)q_start + row_token(r)) * p.heads_q + row_head(r);
            p.lse[out_row] = row_l[r] > 0.0f ? row_m[r] + logf(row_l[r]) : -INFINITY;
        }
    }
}

template <int D, int BQ, int BK>
int launch(const SolbenchAttentionParams& p) {
    using T = Tile<D, BQ, BK>;
    auto kernel = seed_attention_kernel<D, BQ, BK>;
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)T::smem_bytes) != cudaSuccess)
        return SOLBENCH_ERR_CUDA;
    int group = p.heads_q / p.heads_kv;
    dim3 grid((unsigned)(((long long)p.max_q_len * group + BQ - 1) / BQ), p.heads_kv, p.batch);
    if (grid.x == 0) return SOLBENCH_OK;
    kernel<<<grid, kThreads, T::smem_bytes, static_cast<cudaStream_t>(p.stream)>>>(p);
    return cudaGetLastError() == cudaSuccess ? SOLBENCH_OK : SOLBENCH_ERR_CUDA;
}

int validate(const SolbenchAttentionParams* p) {
    if (p == nullptr || p->abi_version != SOLBENCH_ABI_VERSION || p->struct_bytes != (int)sizeof(*p))
        return SOLBENCH_ERR_INVALID_ARGUMENT;
    if (!p->q || !p->k || !p->v || !p->out || !p->cu_seqlens_q || !p->kv_lens || p->batch <= 0 ||
        p->heads_q <= 0 || p->heads_kv <= 0 || p->heads_q % p->heads_kv != 0 || p->head_dim_qk % 8 ||
        p->head_dim_v % 8 || p->head_dim_qk <= 0 || p->head_dim_v <= 0 ||
        (p->page_size > 0 ? !p->page_table : !p->cu_seqlens_kv) || (p->mask_bits && p->mask_row_words <= 0))
        return SOLBENCH_ERR_INVALID_ARGUMENT;
    bool fp8 = p->dtype == SOLBENCH_DTYPE_FP8_E4M3;
    if (p->dtype < 0 || p->dtype > SOLBENCH_DTYPE_FP8_E4M3 || fp8 != (p->descale_mode != SOLBENCH_DESCALE_NONE) ||
        (fp8 && (!p->q_descale || !p->k_descale || !p->v_descale)))
        return SOLBENCH_ERR_INVALID_ARGUMENT;
    if (p->head_dim_qk > 512 || p->head_dim_v > 512 || p->heads_kv > 65535 || p->batch > 65535)
        return SOLBENCH_ERR_UNSUPPORTED;
    return SOLBENCH_OK;
}

}  // namespace

extern "C" int solbench_attention_forward(const SolbenchAttentionParams* p) {
    int status = validate(p);
    if (status != SOLBENCH_OK) return status;
    int d = max(p->head_dim_qk, p->head_dim_v);
    // Smaller tiles for wider heads keep shared memory under 99 KiB (sm_86's per-block limit).
    if (d <= 64) return launch<64, 64, 32>(*p);
    if (d <= 128) return launch<128, 64, 32>(*p);
    if (d <= 256) return launch<256, 32, 16>(*p);
    return launch<512, 16, 8>(*p);
}
