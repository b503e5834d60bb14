// The reference backend: every op scalar and single-threaded, matmuls on dequantized f32 weights.
// Each method is the ref:: op of the same name.
#include <vector>

#include "model/backend.h"

namespace qwenrt {
namespace {

class RefBackend final : public Backend {
 public:
  Status Reserve(int64_t n_kv, int64_t group, int64_t head_dim) override {
    return GrowBackendScratch(scores_, BackendKind::kRef, n_kv, group, head_dim, 1);
  }
  size_t scratch_bytes() const override { return scores_.capacity() * sizeof(float); }

  void Embed(const WeightMatrix& table, const int32_t* tokens, int64_t T, float* x) override {
    ref::Embed(table, tokens, T, x);
  }
  void RmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t n,
               float eps) override {
    ref::RmsNorm(x, w, y, rows, n, eps);
  }
  void RmsNormRows(const float* x, int64_t x_stride, const float* w, float* y, int64_t rows,
                   int64_t n, float eps) override {
    ref::RmsNormRows(x, x_stride, w, y, rows, n, eps);
  }
  void AddRmsNorm(float* x, const float* mix, const float* w, float* y, int64_t rows, int64_t n,
                  float eps) override {
    ref::AddRmsNorm(x, mix, w, y, rows, n, eps);
  }
  void GatedRmsNorm(const float* x, const float* w, const float* z, float* y, int64_t rows,
                    int64_t n, float eps) override {
    ref::GatedRmsNorm(x, w, z, y, rows, n, eps);
  }
  void MatMul(const WeightMatrix& w, const float* x, float* y, int64_t T) override {
    ref::MatMul(w, x, y, T);
  }
  void MatMulMulti(const WeightMatrix* ws, int n, const float* x, float* const* ys,
                   int64_t T) override {
    ref::MatMulMulti(ws, n, x, ys, T);
  }

  void CausalConvSilu(const CausalConvShape& s, const float* x, const float* w, float* state,
                      float* y) override {
    ref::CausalConvSilu(s, x, w, state, y);
  }
  void GdnSplit(const GatedDeltaShape& s, const float* conv, float eps, float q_scale, float* q,
                float* k, float* v, float* alpha, float* beta, const float* ssm_a,
                const float* dt_bias) override {
    ref::GdnSplit(s, conv, eps, q_scale, q, k, v, alpha, beta, ssm_a, dt_bias);
  }
  void GatedDelta(const GatedDeltaShape& s, const float* q, const float* k, const float* v,
                  const float* g, const float* beta, float* state, float* out) override {
    ref::GatedDelta(s, q, k, v, g, beta, state, out);
  }

  void Rope(float* x, int64_t T, int64_t heads, int64_t Dh, int64_t pos0,
            const RopeParams& p) override {
    ref::Rope(x, T, heads, Dh, pos0, p);
  }
  void RoundAttentionInputs(float*, int64_t, float*, float*, int64_t) override {}
  void Attention(const AttentionShape& s, const float* q, const KvView& k, const KvView& v,
                 float* out) override {
    ref::Attention(s, q, k, v, out, scores_.data());
  }
  void MulSigmoid(float* x, const float* gate, int64_t rows, int64_t n,
                  int64_t gate_stride) override {
    ref::MulSigmoid(x, gate, rows, n, gate_stride);
  }

  void SwiGlu(const float* gate, float* up, int64_t n) override { ref::SwiGlu(gate, up, n); }
  void Add(float* x, const float* y, int64_t n) override { ref::Add(x, y, n); }

  void MoeRoute(float* logits, int64_t T, int64_t X, int64_t k, int32_t* ids,
                float* weights) override {
    ref::MoeRoute(logits, T, X, k, ids, weights);
  }
  void GroupByExpert(const int32_t* ids, int64_t n, int64_t X, int32_t* slots,
                     int32_t* expert_begin) override {
    ref::GroupByExpert(ids, n, X, slots, expert_begin);
  }
  void MoeGather(const float* src, const int32_t* slots, int64_t n, int64_t K, int64_t E,
                 float* dst) override {
    ref::MoeGather(src, slots, n, K, E, dst);
  }
  void MoeScatter(const float* src, const int32_t* slots, int64_t n, int64_t E,
                  float* dst) override {
    ref::MoeScatter(src, slots, n, E, dst);
  }
  void MoeCombine(const float* yslot, const float* weights, int64_t T, int64_t K, int64_t E,
                  float* mix) override {
    ref::MoeCombine(yslot, weights, T, K, E, mix);
  }
  void AddSigmoidGated(float* mix, const float* y, const float* gate, int64_t T,
                       int64_t E) override {
    ref::AddSigmoidGated(mix, y, gate, T, E);
  }

 private:
  std::vector<float> scores_;  // [n_past + T]
};

}  // namespace

std::unique_ptr<Backend> MakeRefBackend() { return std::make_unique<RefBackend>(); }

}  // namespace qwenrt
