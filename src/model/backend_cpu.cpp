// The CPU backend: threaded matmuls with quantized activations (cpu::MatMul), the chunked delta
// rule for prefill and the recurrent one for decode, and threaded attention/norm/conv.
#include <new>
#include <vector>

#include "model/backend.h"
#include "ops/cpu/ops.h"

namespace qwenrt {

std::unique_ptr<Backend> MakeRefBackend();  // ref/backend_ref.cpp

namespace {

class CpuBackend final : public Backend {
 public:
  CpuBackend(ThreadPool& pool, const BackendOptions& options) : pool_(pool), options_(options) {}

  Status Reserve(int64_t n_kv) override {
    const size_t need = static_cast<size_t>(pool_.size()) * static_cast<size_t>(n_kv);
    try {
      if (scores_.size() < need) scores_.resize(need);
    } catch (const std::bad_alloc&) {
      return OutOfMemory("out of memory for attention scores over {} positions", n_kv);
    }
    return OkStatus();
  }
  void MatMul(const WeightMatrix& w, const float* x, float* y, int64_t T) override {
    cpu::MatMul(w, x, y, T, pool_);
  }
  void RmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps) override {
    cpu::RmsNorm(x, w, y, rows, n, eps, pool_);
  }
  void Attention(const AttentionShape& s, const float* q, const float* k, const float* v,
                 float* out) override {
    cpu::Attention(s, q, k, v, out, scores_.data(), pool_);
  }
  void RoundAttentionInputs(float* q, int64_t nq, float* k, float* v, int64_t nkv) override {
    cpu::RoundToF16(q, nq);
    cpu::RoundToF16(k, nkv);
    cpu::RoundToF16(v, nkv);
  }
  void CausalConvSilu(const CausalConvShape& s, const float* x, const float* w, float* state,
                      float* y) override {
    cpu::CausalConvSilu(s, x, w, state, y, pool_);
  }
  void GatedDelta(const GatedDeltaShape& s, const float* q, const float* k, const float* v,
                  const float* g, const float* beta, float* state, float* out) override {
    if (s.T >= options_.gdn_chunk_min_tokens) {
      cpu::GatedDeltaChunk(s, q, k, v, g, beta, state, out, pool_);
    } else {
      cpu::GatedDeltaRecurrent(s, q, k, v, g, beta, state, out, pool_);
    }
  }

 private:
  ThreadPool& pool_;
  BackendOptions options_;
  std::vector<float> scores_;  // [threads, n_past + T]
};

}  // namespace

const char* BackendName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kRef: return "ref";
    case BackendKind::kCpu: return "cpu";
    case BackendKind::kCuda: return "cuda";
  }
  return "?";
}

StatusOr<std::unique_ptr<Backend>> MakeBackend(BackendKind kind, ThreadPool* pool,
                                               const BackendOptions& options) {
  switch (kind) {
    case BackendKind::kRef:
      return MakeRefBackend();
    case BackendKind::kCpu:
      if (pool == nullptr) return InvalidArgument("the CPU backend needs a ThreadPool");
      return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(*pool, options));
    case BackendKind::kCuda:
      return Unsupported("the CUDA backend is not available in this build");
  }
  return InvalidArgument("unknown backend kind {}", static_cast<int>(kind));
}

}  // namespace qwenrt
