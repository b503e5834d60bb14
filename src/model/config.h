// ModelConfig: the hyperparameters of a `qwen35` / `qwen35moe` GGUF file, read from its metadata
// with llama.cpp's exact-type rules and every consistency check of docs/spec/qwen35-architecture.md
// (§2), plus the layer schedule (which trunk layers are gated delta nets). Tensors are checked in
// weights.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "ops/rope.h"
#include "qwenrt/gguf.hpp"

namespace qwenrt {

struct ModelConfig {
  std::string arch;  // "qwen35" (dense FFN) or "qwen35moe" (routed experts + shared expert)
  bool moe = false;
  int64_t n_embd = 0;       // E
  int64_t n_layer = 0;      // L: trunk layers that are run (= n_layer_all - n_nextn)
  int64_t n_layer_all = 0;  // block_count: trunk + MTP blocks
  int64_t n_nextn = 0;      // MTP (NextN) blocks appended after the trunk; loaded, never run
  int64_t n_head = 0;       // H
  int64_t n_head_kv = 0;    // Hkv
  int64_t head_dim = 0;     // Dh (key_length == value_length)
  int64_t rope_dims = 0;    // R: rotated dims per head (NEOX pairing i <-> i + R/2)
  int32_t rope_sections[4] = {0, 0, 0, 0};  // IMROPE sections (t, h, w, extra)
  float rope_base = 10000.0f;
  float rope_freq_scale = 1.0f;  // 1 / rope.scaling.factor for "linear" and "yarn" scaling
  Yarn rope_yarn;                // rope.scaling.type "yarn" (ops/rope.h); ext_factor 0 = off
  float eps = 1e-6f;             // every RMSNorm and the GDN L2 norm
  int64_t n_ctx_train = 0;
  int64_t conv_kernel = 0;    // Kc
  int64_t ssm_hk = 0;         // Hk: GDN key/query heads
  int64_t ssm_hv = 0;         // Hv: GDN value heads
  int64_t ssm_dk = 0;         // Dk
  int64_t ssm_dv = 0;         // Dv = inner_size / Hv
  int64_t n_ff = 0;           // F: dense FFN width (0 for MoE files that omit it)
  int64_t n_expert = 0;       // X
  int64_t n_expert_used = 0;  // k
  int64_t n_ff_exp = 0;       // Fe
  int64_t n_ff_shexp = 0;     // Fs
  int64_t n_vocab = 0;        // V: length of tokenizer.ggml.tokens

  std::vector<bool> recurrent;  // [L]: true = gated delta net, false = full attention
  std::vector<int>
      kind_index;  // [L]: index of layer l among the layers of its kind (GDN or attention)
  // [R/2]: whether rotary pair i is rotated by the token position (IMROPE with text positions
  // (p, p, p, 0): pairs that fall in the "extra" section see position 0, i.e. are not rotated).
  std::vector<bool> rope_pair_uses_pos;

  int64_t conv_channels() const { return 2 * ssm_hk * ssm_dk + ssm_hv * ssm_dv; }  // C
  int64_t n_gdn_layers() const;
  bool yarn() const { return rope_yarn.ext_factor != 0.0f; }
  int64_t n_attn_layers() const { return n_layer - n_gdn_layers(); }
};

// Reads and validates the configuration. Errors: BadFormat naming the key and the offending values
// (missing required key, wrong value type, wrong array length, failed consistency check, unknown
// tokenizer pre-type), Unsupported (unknown architecture, unknown rope scaling, split files).
StatusOr<ModelConfig> ConfigFromGguf(const gguf::File& file);

}  // namespace qwenrt
