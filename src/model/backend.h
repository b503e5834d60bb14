// Backend: every op forward.cpp calls, one implementation per BackendKind. kRef runs the scalar
// reference ops (src/ops/ref/), kCpu the threaded/SIMD ones (src/ops/cpu/); the CUDA pass
// (forward_cuda.cpp) calls the same names in the same order on device buffers. The math and
// shapes of each op are in its family header (src/ops/*.h) and in docs/engine.md, "Op names".
//
// Fused ops are bit for bit their reference composition on every backend: AddRmsNorm == Add then
// RmsNorm; GatedRmsNorm == RmsNorm then SwiGlu(z, .); GdnSplit == copies, L2Norm, q scaling and
// GdnGates; MatMulMulti == one MatMul per matrix (tests/ops_backend_test.cpp). Element-wise and
// per-row ops compute each element the same way whatever T is, so a prefill equals the same tokens
// decoded one at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/config.h"
#include "ops/activations.h"
#include "ops/attention.h"
#include "ops/conv.h"
#include "ops/embed.h"
#include "ops/gated_delta.h"
#include "ops/gdn_split.h"
#include "ops/matmul.h"
#include "ops/moe.h"
#include "ops/norm.h"
#include "ops/rope.h"

namespace qwenrt {

enum class BackendKind { kRef, kCpu, kCuda };
const char* BackendName(BackendKind kind);

class Backend {
 public:
  virtual ~Backend() = default;
  // Sizes the backend's own scratch for attention over up to `n_kv` cached positions, `group`
  // query heads per KV head, heads `head_dim` wide, before a forward pass touches any state.
  // Error: OutOfMemory.
  virtual Status Reserve(int64_t n_kv, int64_t group, int64_t head_dim) = 0;
  // Bytes of that scratch held now (BackendScratchFloats of the largest Reserve so far).
  virtual size_t scratch_bytes() const = 0;

  // --- embedding, norms, projections ---
  // x[t] = dequantized table row tokens[t].  tokens: [T] in [0, table.rows); x: [T, table.cols]
  virtual void Embed(const WeightMatrix& table, const int32_t* tokens, int64_t T, float* x) = 0;
  // y = RmsNorm(x) * w.  x, y: [rows, n] (may alias); w: [n]
  virtual void RmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t n,
                       float eps) = 0;
  // The same over rows `x_stride` floats apart (the query rows of the joint q/gate projection).
  virtual void RmsNormRows(const float* x, int64_t x_stride, const float* w, float* y, int64_t rows,
                           int64_t n, float eps) = 0;
  // x += mix; y = RmsNorm(x) * w.  x, mix, y: [rows, n]; y aliases neither
  virtual void AddRmsNorm(float* x, const float* mix, const float* w, float* y, int64_t rows,
                          int64_t n, float eps) = 0;
  // y = RmsNorm(x) * w * silu(z).  x, z, y: [rows, n] (y may alias x)
  virtual void GatedRmsNorm(const float* x, const float* w, const float* z, float* y, int64_t rows,
                            int64_t n, float eps) = 0;
  // y[T, rows] = x[T, cols] * W^T
  virtual void MatMul(const WeightMatrix& w, const float* x, float* y, int64_t T) = 0;
  // ys[i][T, ws[i].rows] = x[T, cols] * W_i^T for n <= kMaxMatMulMulti matrices sharing cols.
  virtual void MatMulMulti(const WeightMatrix* ws, int n, const float* x, float* const* ys,
                           int64_t T) = 0;

  // --- gated delta net ---
  // Causal conv + SiLU (conv.h): x: [T, C]; w: [C, Kc]; state: [C, Kc-1] updated; y: [T, C]
  virtual void CausalConvSilu(const CausalConvShape& s, const float* x, const float* w,
                              float* state, float* y) = 0;
  // conv [T, C] -> q, k [T, Hk, Dk] (L2-normed, q scaled), v [T, Hv, Dv]; alpha -> g, beta ->
  // sigmoid(beta) in place [T, Hv] (gdn_split.h).
  virtual void GdnSplit(const GatedDeltaShape& s, const float* conv, float eps, float q_scale,
                        float* q, float* k, float* v, float* alpha, float* beta, const float* ssm_a,
                        const float* dt_bias) = 0;
  // The delta rule over T tokens (gated_delta.h for the shapes); state updated in place.
  virtual void GatedDelta(const GatedDeltaShape& s, const float* q, const float* k, const float* v,
                          const float* g, const float* beta, float* state, float* out) = 0;

  // --- full attention ---
  // Rotates each head in place at positions pos0 + t.  x: [T, heads, Dh]
  virtual void Rope(float* x, int64_t T, int64_t heads, int64_t Dh, int64_t pos0,
                    const RopeParams& p) = 0;
  // Precision of the attention inputs before K/V enter the cache: kRef keeps f32; kCpu rounds q, k
  // and v to f16 values, as llama.cpp's CPU path does (F16 KV cache, Q converted to F16 for Q·K;
  // docs/spec/qwen35-architecture.md §14 item 2), so an f16 KV cache (kv_cache.h) stores them
  // exactly. q: [nq]; k, v: [nkv].
  virtual void RoundAttentionInputs(float* q, int64_t nq, float* k, float* v, int64_t nkv) = 0;
  // q: [T, H, Dh]; k, v: views of the cache rows [n_past+T, Hkv, Dh] (kv_view.h); out: [T, H, Dh]
  virtual void Attention(const AttentionShape& s, const float* q, const KvView& k, const KvView& v,
                         float* out) = 0;
  // x[r][c] *= sigmoid(gate[r * gate_stride + c]).  x: [rows, n]
  virtual void MulSigmoid(float* x, const float* gate, int64_t rows, int64_t n,
                          int64_t gate_stride) = 0;

  // --- FFN, residual ---
  // up = silu(gate) * up.  [n]
  virtual void SwiGlu(const float* gate, float* up, int64_t n) = 0;
  // x += y.  [n]
  virtual void Add(float* x, const float* y, int64_t n) = 0;

  // --- mixture of experts (moe.h) ---
  // Router probabilities -> top-k ids and weights.  logits: [T, X] (overwritten); ids, weights: [T,
  // k]
  virtual void MoeRoute(float* logits, int64_t T, int64_t X, int64_t k, int32_t* ids,
                        float* weights) = 0;
  // (token, slot) pairs grouped by expert.  ids, slots: [n]; expert_begin: [X + 1]
  virtual void GroupByExpert(const int32_t* ids, int64_t n, int64_t X, int32_t* slots,
                             int32_t* expert_begin) = 0;
  // dst[i] = src[slots[i] / K].  src: [T, E]; dst: [n, E]
  virtual void MoeGather(const float* src, const int32_t* slots, int64_t n, int64_t K, int64_t E,
                         float* dst) = 0;
  // dst[slots[i]] = src[i].  src: [n, E]; dst: [T*K, E]
  virtual void MoeScatter(const float* src, const int32_t* slots, int64_t n, int64_t E,
                          float* dst) = 0;
  // mix[t] = sum_j weights[t][j] * yslot[t][j], j in order.  yslot: [T, K, E]; mix: [T, E]
  virtual void MoeCombine(const float* yslot, const float* weights, int64_t T, int64_t K, int64_t E,
                          float* mix) = 0;
  // mix[t] += sigmoid(gate[t]) * y[t].  mix, y: [T, E]; gate: [T]
  virtual void AddSigmoidGated(float* mix, const float* y, const float* gate, int64_t T,
                               int64_t E) = 0;
};

// Options that change how a backend computes (not what).
struct BackendOptions {
  // kCpu: use the chunked delta rule for ubatches of at least this many tokens, the recurrent form
  // below. Set to INT64_MAX for results that do not depend on how a sequence is split into
  // ubatches.
  int64_t gdn_chunk_min_tokens = cpu::kGatedDeltaChunkMinTokens;
};

// The floats Reserve(n_kv, group, head_dim) makes a backend of `kind` hold on a pool of `threads`
// (kRef: the scores of one row; kCpu: cpu::AttentionScratchFloats; kCuda: 0, its scratch is on the
// device). The backends size their scratch by it, and the memory estimate counts it, so the two
// cannot drift apart.
int64_t BackendScratchFloats(BackendKind kind, int64_t n_kv, int64_t group, int64_t head_dim,
                             int threads);
// Grows `scratch` to BackendScratchFloats(kind, n_kv, group, head_dim, threads) floats for a
// backend's Reserve: freed, then allocated at exactly that size (the contents need not survive,
// and growing in place would let the vector double, past what the memory estimate counts).
// Error: OutOfMemory, `scratch` then empty or as before.
Status GrowBackendScratch(std::vector<float>& scratch, BackendKind kind, int64_t n_kv,
                          int64_t group, int64_t head_dim, int threads);
// Query heads per KV head of `c`: the `group` ForwardBatch reserves with.
inline int64_t AttentionGroup(const ModelConfig& c) {
  return c.n_head_kv > 0 ? c.n_head / c.n_head_kv : 1;
}

// kRef ignores `pool`; kCpu requires it. Errors: Unsupported (kCuda), InvalidArgument (no pool).
StatusOr<std::unique_ptr<Backend>> MakeBackend(BackendKind kind, ThreadPool* pool,
                                               const BackendOptions& options);

}  // namespace qwenrt
