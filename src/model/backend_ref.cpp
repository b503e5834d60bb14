// The reference backend: every op scalar and single-threaded, matmuls on dequantized f32 weights.
#include <new>
#include <vector>

#include "model/backend.h"

namespace qwenrt {
namespace {

class RefBackend final : public Backend {
 public:
  Status Reserve(int64_t n_kv) override {
    try {
      if (scores_.size() < static_cast<size_t>(n_kv)) scores_.resize(static_cast<size_t>(n_kv));
    } catch (const std::bad_alloc&) {
      return OutOfMemory("out of memory for attention scores over {} positions", n_kv);
    }
    return OkStatus();
  }
  void MatMul(const WeightMatrix& w, const float* x, float* y, int64_t T) override {
    ref::MatMul(w, x, y, T);
  }
  void RmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps) override {
    ref::RmsNorm(x, w, y, rows, n, eps);
  }
  void Attention(const AttentionShape& s, const float* q, const float* k, const float* v,
                 float* out) override {
    ref::Attention(s, q, k, v, out, scores_.data());
  }
  void RoundAttentionInputs(float*, int64_t, float*, float*, int64_t) override {}
  void CausalConvSilu(const CausalConvShape& s, const float* x, const float* w, float* state,
                      float* y) override {
    ref::CausalConvSilu(s, x, w, state, y);
  }
  void GatedDelta(const GatedDeltaShape& s, const float* q, const float* k, const float* v,
                  const float* g, const float* beta, float* state, float* out) override {
    ref::GatedDelta(s, q, k, v, g, beta, state, out);
  }

 private:
  std::vector<float> scores_;  // [n_past + T]
};

}  // namespace

std::unique_ptr<Backend> MakeRefBackend() { return std::make_unique<RefBackend>(); }

}  // namespace qwenrt
