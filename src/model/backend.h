// Backend: the ops forward.cpp calls, one implementation per BackendKind. kRef runs the scalar
// reference ops (src/ref/), kCpu the threaded/SIMD ones (src/cpu/). Ops not listed here are cheap
// element-wise steps that both paths take from src/ops/ref/ops.h.
#pragma once

#include <cstdint>
#include <memory>

#include "ops/conv.h"
#include "ops/gated_delta.h"
#include "ops/matmul.h"
#include "ops/ref/ops.h"
#include "base/status.h"
#include "base/thread_pool.h"

namespace qwenrt {

enum class BackendKind { kRef, kCpu, kCuda };
const char* BackendName(BackendKind kind);

class Backend {
 public:
  virtual ~Backend() = default;
  // Sizes the backend's own scratch for attention over up to `n_kv` cached positions, before a
  // forward pass touches any state. Error: OutOfMemory.
  virtual Status Reserve(int64_t n_kv) = 0;
  // y[T, rows] = x[T, cols] * W^T
  virtual void MatMul(const WeightMatrix& w, const float* x, float* y, int64_t T) = 0;
  // x, y: [rows, n] (may alias)
  virtual void RmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps) = 0;
  // q: [T, H, Dh]; k, v: [n_past+T, Hkv, Dh]; out: [T, H, Dh]
  virtual void Attention(const AttentionShape& s, const float* q, const float* k, const float* v,
                         float* out) = 0;
  // Precision of the attention inputs before K/V enter the cache: kRef keeps f32; kCpu rounds q, k
  // and v to f16 values, as the peer's CPU path does (F16 KV cache, Q converted to F16 for Q·K;
  // spec §14.2). Storage stays f32 for now. q: [nq]; k, v: [nkv].
  virtual void RoundAttentionInputs(float* q, int64_t nq, float* k, float* v, int64_t nkv) = 0;
  // Causal conv + SiLU (conv.h): x: [T, C]; w: [C, Kc]; state: [C, Kc-1] updated; y: [T, C]
  virtual void CausalConvSilu(const CausalConvShape& s, const float* x, const float* w, float* state,
                              float* y) = 0;
  // The delta rule over T tokens (gated_delta.h for the shapes); state updated in place.
  virtual void GatedDelta(const GatedDeltaShape& s, const float* q, const float* k, const float* v,
                          const float* g, const float* beta, float* state, float* out) = 0;
};

// Options that change how a backend computes (not what).
struct BackendOptions {
  // kCpu: use the chunked delta rule for ubatches of at least this many tokens, the recurrent form
  // below. Set to INT64_MAX for results that do not depend on how a sequence is split into ubatches.
  int64_t gdn_chunk_min_tokens = cpu::kGatedDeltaChunkMinTokens;
};

// kRef ignores `pool`; kCpu requires it. Errors: Unsupported (kCuda), InvalidArgument (no pool).
StatusOr<std::unique_ptr<Backend>> MakeBackend(BackendKind kind, ThreadPool* pool,
                                               const BackendOptions& options);

}  // namespace qwenrt
