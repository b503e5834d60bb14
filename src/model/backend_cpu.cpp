// The CPU backend: threaded matmuls with quantized activations (cpu::MatMul), the chunked delta
// rule for prefill and the recurrent one for decode, threaded attention and conv, and every
// element-wise / per-row op split over the pool (bit-identical to its ref:: op).
#include <new>
#include <vector>

#include "model/backend.h"

namespace qwenrt {

std::unique_ptr<Backend> MakeRefBackend();  // backend_ref.cpp

namespace {

class CpuBackend final : public Backend {
 public:
  CpuBackend(ThreadPool& pool, const BackendOptions& options) : pool_(pool), options_(options) {}

  Status Reserve(int64_t n_kv, int64_t group, int64_t head_dim) override {
    return GrowBackendScratch(scratch_, BackendKind::kCpu, n_kv, group, head_dim, pool_.size());
  }
  size_t scratch_bytes() const override { return scratch_.capacity() * sizeof(float); }
  void Embed(const WeightMatrix& table, const int32_t* tokens, int64_t T, float* x) override {
    cpu::Embed(table, tokens, T, x, pool_);
  }
  void RmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t n,
               float eps) override {
    cpu::RmsNorm(x, w, y, rows, n, eps, pool_);
  }
  void RmsNormRows(const float* x, int64_t x_stride, const float* w, float* y, int64_t rows,
                   int64_t n, float eps) override {
    cpu::RmsNormRows(x, x_stride, w, y, rows, n, eps, pool_);
  }
  void AddRmsNorm(float* x, const float* mix, const float* w, float* y, int64_t rows, int64_t n,
                  float eps) override {
    cpu::AddRmsNorm(x, mix, w, y, rows, n, eps, pool_);
  }
  void GatedRmsNorm(const float* x, const float* w, const float* z, float* y, int64_t rows,
                    int64_t n, float eps) override {
    cpu::GatedRmsNorm(x, w, z, y, rows, n, eps, pool_);
  }
  void MatMul(const WeightMatrix& w, const float* x, float* y, int64_t T) override {
    cpu::MatMul(w, x, y, T, pool_);
  }
  void MatMulMulti(const WeightMatrix* ws, int n, const float* x, float* const* ys,
                   int64_t T) override {
    cpu::MatMulMulti(ws, n, x, ys, T, pool_);
  }

  void CausalConvSilu(const CausalConvShape& s, const float* x, const float* w, float* state,
                      float* y) override {
    cpu::CausalConvSilu(s, x, w, state, y, pool_);
  }
  void GdnSplit(const GatedDeltaShape& s, const float* conv, float eps, float q_scale, float* q,
                float* k, float* v, float* alpha, float* beta, const float* ssm_a,
                const float* dt_bias) override {
    cpu::GdnSplit(s, conv, eps, q_scale, q, k, v, alpha, beta, ssm_a, dt_bias, pool_);
  }
  void GatedDelta(const GatedDeltaShape& s, const float* q, const float* k, const float* v,
                  const float* g, const float* beta, float* state, float* out) override {
    if (s.T >= options_.gdn_chunk_min_tokens) {
      cpu::GatedDeltaChunk(s, q, k, v, g, beta, state, out, pool_);
    } else {
      cpu::GatedDeltaRecurrent(s, q, k, v, g, beta, state, out, pool_);
    }
  }

  void Rope(float* x, int64_t T, int64_t heads, int64_t Dh, int64_t pos0,
            const RopeParams& p) override {
    cpu::Rope(x, T, heads, Dh, pos0, p, pool_);
  }
  void RoundAttentionInputs(float* q, int64_t nq, float* k, float* v, int64_t nkv) override {
    cpu::RoundToF16(q, nq);
    cpu::RoundToF16(k, nkv);
    cpu::RoundToF16(v, nkv);
  }
  void Attention(const AttentionShape& s, const float* q, const KvView& k, const KvView& v,
                 float* out) override {
    cpu::Attention(s, q, k, v, out, scratch_.data(), pool_);
  }
  void MulSigmoid(float* x, const float* gate, int64_t rows, int64_t n,
                  int64_t gate_stride) override {
    cpu::MulSigmoid(x, gate, rows, n, gate_stride, pool_);
  }

  void SwiGlu(const float* gate, float* up, int64_t n) override { cpu::SwiGlu(gate, up, n, pool_); }
  void Add(float* x, const float* y, int64_t n) override { cpu::Add(x, y, n, pool_); }

  // Routing and grouping are a few hundred scalar steps per token: the reference loops.
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
    cpu::MoeGather(src, slots, n, K, E, dst, pool_);
  }
  void MoeScatter(const float* src, const int32_t* slots, int64_t n, int64_t E,
                  float* dst) override {
    cpu::MoeScatter(src, slots, n, E, dst, pool_);
  }
  void MoeCombine(const float* yslot, const float* weights, int64_t T, int64_t K, int64_t E,
                  float* mix) override {
    cpu::MoeCombine(yslot, weights, T, K, E, mix, pool_);
  }
  void AddSigmoidGated(float* mix, const float* y, const float* gate, int64_t T,
                       int64_t E) override {
    cpu::AddSigmoidGated(mix, y, gate, T, E, pool_);
  }

 private:
  ThreadPool& pool_;
  BackendOptions options_;
  std::vector<float> scratch_;  // AttentionScratchFloats(n_kv, H / Hkv, Dh, threads)
};

}  // namespace

const char* BackendName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kRef:
      return "ref";
    case BackendKind::kCpu:
      return "cpu";
    case BackendKind::kCuda:
      return "cuda";
  }
  return "?";
}

Status GrowBackendScratch(std::vector<float>& scratch, BackendKind kind, int64_t n_kv,
                          int64_t group, int64_t head_dim, int threads) {
  const size_t need =
      static_cast<size_t>(BackendScratchFloats(kind, n_kv, group, head_dim, threads));
  if (scratch.size() >= need) return OkStatus();
  try {
    std::vector<float>().swap(scratch);
    scratch.resize(need);
  } catch (const std::bad_alloc&) {
    return OutOfMemory("out of memory for attention scratch over {} positions", n_kv);
  }
  return OkStatus();
}

int64_t BackendScratchFloats(BackendKind kind, int64_t n_kv, int64_t group, int64_t head_dim,
                             int threads) {
  switch (kind) {
    case BackendKind::kRef:
      return n_kv;
    case BackendKind::kCpu:
      return cpu::AttentionScratchFloats(n_kv, group, head_dim, threads);
    case BackendKind::kCuda:
      return 0;
  }
  return 0;
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
