// Weights: typed, validated views of the tensors of a qwen35 / qwen35moe GGUF file (no copies: the
// pointers point into the mapped file). One struct per layer kind, like gemma.cpp's
// LayerWeightsPtrs. Shapes are written as `[rows, cols]` row-major (GGUF ne = {cols, rows}).
// MTP/NextN blocks are bound into Weights::mtp (model/mtp.h runs them as the draft head); the trunk
// forward never reads them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/config.h"
#include "ops/matmul.h"
#include "qwenrt/gguf.hpp"

namespace qwenrt {

// The `n_expert` matrices of a 3-D expert tensor (or one half of the fused gate_up tensor):
// expert e's matrix is `rows` rows starting at data + e * expert_stride.
struct ExpertMatrices {
  gguf::Type type = gguf::Type::F32;
  int64_t cols = 0, rows = 0, n_expert = 0;
  const uint8_t* data = nullptr;
  size_t row_bytes = 0;
  size_t expert_stride = 0;  // bytes between consecutive experts' first rows
  WeightMatrix Expert(int64_t e) const {
    return WeightMatrix{type, cols, rows, data + static_cast<size_t>(e) * expert_stride, row_bytes};
  }
};

struct GatedDeltaWeights {
  WeightMatrix qkv;               // [C, E]  rows: q (Hk*Dk), k (Hk*Dk), v (Hv*Dv, tiled head order)
  WeightMatrix gate;              // [Hv*Dv, E]  z gate
  WeightMatrix alpha;             // [Hv, E]
  WeightMatrix beta;              // [Hv, E]
  WeightMatrix out;               // [E, Hv*Dv]
  const float* conv1d = nullptr;  // [C, Kc] tap 0 = oldest input
  const float* dt_bias = nullptr;  // [Hv]
  const float* ssm_a = nullptr;    // [Hv]  = -exp(A_log)
  const float* norm = nullptr;     // [Dv]  gated RMSNorm weight, used as is
};

struct AttentionWeights {
  WeightMatrix q;                 // [H*2*Dh, E]  per head: Dh query rows then Dh gate rows
  WeightMatrix k;                 // [Hkv*Dh, E]
  WeightMatrix v;                 // [Hkv*Dh, E]
  WeightMatrix o;                 // [E, H*Dh]
  const float* q_norm = nullptr;  // [Dh]
  const float* k_norm = nullptr;  // [Dh]
};

struct DenseFfnWeights {
  WeightMatrix gate;  // [F, E]
  WeightMatrix up;    // [F, E]
  WeightMatrix down;  // [E, F]
};

struct MoeWeights {
  WeightMatrix router;          // [X, E]  F32
  ExpertMatrices gate;          // X x [Fe, E]
  ExpertMatrices up;            // X x [Fe, E]
  ExpertMatrices down;          // X x [E, Fe]
  WeightMatrix shexp_gate_inp;  // [1, E]  F32: one sigmoid gate logit per token
  WeightMatrix shexp_gate;      // [Fs, E]
  WeightMatrix shexp_up;        // [Fs, E]
  WeightMatrix shexp_down;      // [E, Fs]
};

struct LayerWeights {
  const float* attn_norm = nullptr;            // [E]
  const float* post_attention_norm = nullptr;  // [E]  (the pre-FFN norm)
  GatedDeltaWeights gdn;                       // valid when the layer is recurrent
  AttentionWeights attn;                       // valid when the layer is full attention
  DenseFfnWeights ffn;                         // valid for qwen35
  MoeWeights moe;                              // valid for qwen35moe
};

// One MTP (NextN) block, blk.L (qwen35-architecture.md §4.7): the fusion projection of the next
// token's embedding and the trunk's last hidden state, then a full-attention layer exactly like a
// trunk one (so the trunk's layer code runs it), then the shared LM head. docs/mtp.md.
struct MtpWeights {
  LayerWeights layer;                // attn_norm, attn, post_attention_norm, ffn / moe of blk.L
  WeightMatrix eh_proj;              // [E, 2E]: columns [0, E) embedding half, [E, 2E) hidden
  const float* enorm = nullptr;      // [E]  RMSNorm of the next token's embedding
  const float* hnorm = nullptr;      // [E]  RMSNorm of the trunk's post-norm hidden state
  const float* head_norm = nullptr;  // [E]  nextn.shared_head_norm, else output_norm
  WeightMatrix embed;                // [V, E]  nextn.embed_tokens, else token_embd
  WeightMatrix head;                 // [V, E]  nextn.shared_head_head, else output
};

// Tensors the file holds that the text forward never reads: the MTP (NextN) head blocks and
// vision-tower / projector tensors (names starting "v." or "mm.") shipped beside the text model.
struct UnusedTensors {
  int64_t mtp_tensors = 0;     // in blk.L .. blk.(L + n_nextn - 1): run only by the draft head
  int64_t vision_tensors = 0;  // v.* and mm.*
  uint64_t bytes = 0;          // their data bytes
  std::string summary;         // "MTP head: 15 tensors (1 layer); vision tower: 3 tensors", or ""
};

struct Weights {
  WeightMatrix token_embd;             // [V, E]
  const float* output_norm = nullptr;  // [E]
  WeightMatrix output;                 // [V, E]; equals token_embd when the head is tied
  bool tied = false;
  std::vector<LayerWeights> layers;  // [L] trunk layers only
  std::vector<MtpWeights> mtp;       // [n_nextn] MTP blocks blk.L .. (the draft head)
  UnusedTensors unused;
};

// Builds the views and checks every tensor of the file: presence, shape (trailing 1s allowed),
// type by role (norms, conv, ssm vectors and routers must be F32; matrices any supported type),
// no unknown tensors, MTP tensors accounted for (and, with vision-tower tensors, counted in
// Weights::unused), token_embd rows == V. Errors name the tensor and,
// for shapes, both the expected and the actual shape (BadFormat; Unsupported for a type the engine
// cannot use or an MTP-only file).
StatusOr<Weights> WeightsFromGguf(const gguf::File& file, const ModelConfig& config);

// The MTP blocks of a separate MTP-only file (llama.cpp's converter with --mtp: the trunk's
// metadata and tokenizer, token_embd / output_norm / output, and blk.L.* only) for the trunk
// `trunk_config` / `trunk` loaded from a file without them. Checked against the trunk:
// architecture, every shape the block reads (E, heads, head size, rope, FFN / experts, eps), the
// vocabulary (the same tokens) and the layer index (the file's first MTP block must be blk.L, L =
// the trunk's layers); the tensors as WeightsFromGguf checks them, nothing else may be in the file.
// Errors: BadFormat / InvalidArgument naming the mismatch (both values) or the tensor.
StatusOr<std::vector<MtpWeights>> MtpWeightsFromGguf(const gguf::File& mtp_file,
                                                     const ModelConfig& mtp_config,
                                                     const gguf::File& trunk_file,
                                                     const ModelConfig& trunk_config,
                                                     const Weights& trunk);

}  // namespace qwenrt
