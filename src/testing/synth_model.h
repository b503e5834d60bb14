// Synthetic Qwen3.5 (`qwen35`, dense) models: random weights in the exact GGUF layout, tensor
// order, types (Q4_K_M rules) and metadata keys of the fixture models, at the real shapes, so
// benchmarks can run at 0.8B / 4B size without downloading weights. The tokenizer (tokens, merges,
// types, chat template) is taken from a small fixture GGUF and padded with filler tokens to the
// real vocabulary size, with the Qwen special tokens at their real ids. Used by `qwenrt-cli synth`.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "base/thread_pool.h"

namespace qwenrt {

struct SynthShape {
  std::string name;
  int64_t n_embd, n_layer, n_head, n_head_kv, head_dim;  // D, L, H, Hkv, Dh
  int64_t ssm_hk, ssm_hv, ssm_dk, ssm_dv, conv_kernel;   // Hk, Hv, Dk, Dv, Kc
  int64_t n_ff, n_vocab;                                 // F, V
  int64_t rope_dims;
  int32_t rope_sections[4];
  int64_t full_attention_interval;
};

// "tiny" (the tiny-s1 fixture shape), "0.8b", "4b"; false for an unknown name.
bool FindSynthShape(const std::string& name, SynthShape* shape);

struct SynthOptions {
  SynthShape shape;
  uint64_t seed = 1;
  // One MTP (next-n) block after the trunk, blk.L, with the real tensor names and shapes
  // (attention + dense FFN of a full-attention layer, nextn.eh_proj / enorm / hnorm /
  // shared_head_norm); block_count = L + 1, nextn_predict_layers = 1. docs/mtp.md.
  bool mtp = false;
  std::string
      vocab_from;  // GGUF whose tokenizer.* keys are copied (e.g. tests/data/tiny-s1-q4km.gguf)
};

// Writes the model to `path`. Deterministic for a given (shape, seed, vocab file) whatever the pool
// size. Errors: InvalidArgument (bad shape), Io / BadFormat (vocab file, output), OutOfMemory.
Status WriteSynthModel(const SynthOptions& options, const std::string& path, ThreadPool& pool);

}  // namespace qwenrt
