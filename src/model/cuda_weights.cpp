// The upload of a Model's weights to the GPU and the check that every weight maps (cuda_weights.h).
#ifdef QWENRT_HAVE_CUDA

#include "model/cuda_weights.h"

#include <vector>

#include "model/model.h"
#include "ops/quant.h"

namespace qwenrt {

StatusOr<std::shared_ptr<const CudaWeights>> CudaWeights::Upload(const Model& model) {
  const gguf::File& f = model.gguf();
  if (f.split_count() > 1) {
    return Unsupported(
        "CUDA backend: split GGUF files ({} parts) are not supported (the upload maps one data "
        "section); merge them with llama-gguf-split --merge or use the CPU backend",
        f.split_count());
  }
  // Every tensor the GPU multiplies by must have a mat-vec kernel (an untied token_embd is decoded
  // on the host, any type). Refuse up front, naming the first that has none, rather than fail
  // mid-forward.
  const bool tied = f.FindTensor("output.weight") == nullptr;
  for (const gguf::TensorInfo& t : f.tensors()) {
    if (t.name == "token_embd.weight" && !tied) continue;
    if (!cuda::HasMatMulKernel(t.type)) {
      return Unsupported(
          "CUDA backend: tensor '{}' has type {}, which the CUDA mat-vec does not implement "
          "(use the CPU backend)",
          t.name, gguf::TypeName(t.type));
    }
  }
  auto w = std::shared_ptr<CudaWeights>(new CudaWeights());
  w->host_base_ = f.bytes() + f.data_offset();
  w->size_ = static_cast<size_t>(f.size() - f.data_offset());
  QWENRT_RETURN_IF_ERROR(w->data_.Allocate(w->size_));
  QWENRT_RETURN_IF_ERROR(cuda::CopyToDevice(w->data_.u8(), w->host_base_, w->size_, nullptr));
  const ModelConfig& c = model.config();
  if (c.rope_pair_uses_pos.size() > 0) {
    std::vector<uint8_t> pairs(c.rope_pair_uses_pos.begin(), c.rope_pair_uses_pos.end());
    QWENRT_RETURN_IF_ERROR(w->rope_pairs_.Allocate(pairs.size()));
    QWENRT_RETURN_IF_ERROR(
        cuda::CopyToDevice(w->rope_pairs_.u8(), pairs.data(), pairs.size(), nullptr));
  }
  QWENRT_RETURN_IF_ERROR(cuda::StreamSynchronize(nullptr));
  QWENRT_RETURN_IF_ERROR(w->CheckMapped(model));
  return std::shared_ptr<const CudaWeights>(std::move(w));
}

Status CudaWeights::CheckMapped(const Model& model) const {
  const Weights& w = model.weights();
  const ModelConfig& c = model.config();
  auto mat = [&](const WeightMatrix& m) {
    return m.rows == 0 || Map(m.data, static_cast<size_t>(m.rows - 1) * m.row_bytes +
                                          static_cast<size_t>(RowBytes(m.type, m.cols))) != nullptr;
  };
  auto experts = [&](const ExpertMatrices& e) {
    return e.n_expert == 0 || mat(e.Expert(e.n_expert - 1));
  };
  auto vec = [&](const float* p, int64_t n) {
    return p == nullptr || Map(p, static_cast<size_t>(n) * sizeof(float)) != nullptr;
  };
  bool ok = mat(w.token_embd) && mat(w.output) && vec(w.output_norm, c.n_embd);
  for (int64_t l = 0; l < c.n_layer && ok; ++l) {
    const LayerWeights& lw = w.layers[l];
    ok = vec(lw.attn_norm, c.n_embd) && vec(lw.post_attention_norm, c.n_embd);
    if (c.recurrent[l]) {
      const GatedDeltaWeights& g = lw.gdn;
      ok = ok && mat(g.qkv) && mat(g.gate) && mat(g.alpha) && mat(g.beta) && mat(g.out) &&
           vec(g.conv1d, c.conv_channels() * c.conv_kernel) && vec(g.dt_bias, c.ssm_hv) &&
           vec(g.ssm_a, c.ssm_hv) && vec(g.norm, c.ssm_dv);
    } else {
      const AttentionWeights& a = lw.attn;
      ok = ok && mat(a.q) && mat(a.k) && mat(a.v) && mat(a.o) && vec(a.q_norm, c.head_dim) &&
           vec(a.k_norm, c.head_dim);
    }
    if (c.moe) {
      const MoeWeights& m = lw.moe;
      ok = ok && mat(m.router) && experts(m.gate) && experts(m.up) && experts(m.down) &&
           mat(m.shexp_gate_inp) && mat(m.shexp_gate) && mat(m.shexp_up) && mat(m.shexp_down);
    } else {
      ok = ok && mat(lw.ffn.gate) && mat(lw.ffn.up) && mat(lw.ffn.down);
    }
  }
  if (!ok) return InternalError("CUDA forward: a weight lies outside the GGUF data section");
  return OkStatus();
}

}  // namespace qwenrt

#endif  // QWENRT_HAVE_CUDA
