// Model: a loaded qwen35 / qwen35moe GGUF file — the mapped bytes, the validated configuration and
// the weight views into them. Immutable after Load; share it as std::shared_ptr<const Model> across
// sessions and threads. Mutable per-sequence state lives in KvCache / RecurrentState. The one thing
// made later is the CUDA backend's copy of the weights (cuda_weights()), owned here so that every
// CUDA context of this Model shares it and it is freed with the Model.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "base/status.h"
#include "model/config.h"
#include "model/packed_weights.h"
#include "model/weights.h"
#include "qwenrt/gguf.hpp"

namespace qwenrt {

class CudaWeights;  // cuda_weights.h

struct ModelLoadOptions {
  // Scan every tensor's data for NaN/Inf (F32/F16/BF16) and non-finite block scales (gguf checklist
  // item 27). Costs one pass over the file.
  bool check_tensors = false;
  // Called with a fraction in [0, 1] as loading proceeds; returning false cancels (-> Cancelled).
  std::function<bool(float)> progress;
  // Load: read the file into memory instead of mapping it. A mapped file that another process
  // truncates kills this process with SIGBUS on the next touch of a lost page; a read one cannot
  // be reached (docs/gguf.md). Costs the file's size in memory and a full read at load.
  bool read_file = false;
  // Keep a row-interleaved copy of the matrices whose type has a packed layout (Q2_K .. Q6_K,
  // Q4_0 .. Q5_1, Q8_0, IQ4_NL, IQ4_XS, MXFP4; ops/packed.h HasPackedLayout) for the CPU matmul's
  // register tiles (routed MoE experts stay as they are). Costs about the
  // matrices' size in memory (the mapped file's pages then stay cold and can be evicted) and a pass
  // over them at load. Taken per type where this CPU's packed kernel is the faster one
  // (cpu::PackedKernelFast: Q4_K / Q6_K on the avx512 and avx2 levels, the others with AVX-512
  // VNNI); the CUDA pass never reads it. Measured (docs/performance.md): on the avx512 level
  // prefill ~2x and decode faster; on the avx2 level prefill +57% but decode -39%. Off by default:
  // a host opts in to the memory.
  bool pack_weights = false;
  // A separate MTP-only GGUF (llama.cpp's converter with --mtp, file name prefix "mtp-") whose MTP
  // (next-n) blocks become this model's draft head (docs/mtp.md), for a trunk file without them.
  // Checked against the trunk (MtpWeightsFromGguf): a mismatch fails the load naming it. Either a
  // path, or an image in memory (copied).
  std::string mtp_path;
  std::span<const uint8_t> mtp_image;
};

class Model {
 public:
  using LoadOptions = ModelLoadOptions;

  // Maps the file and validates it. Errors: Io (cannot open/map), BadFormat (malformed file,
  // inconsistent metadata, wrong tensor shape/type, unknown tensor), Unsupported (architecture,
  // YaRN, MTP-only or split file, tensor type), Cancelled, OutOfMemory. Any thread.
  static StatusOr<std::shared_ptr<const Model>> Load(const std::string& path,
                                                     const LoadOptions& options = {});
  // As Load, from a GGUF image in memory. The bytes are copied, so the caller may free them after
  // the call returns. Any thread.
  static StatusOr<std::shared_ptr<const Model>> LoadFromMemory(const void* data, size_t size,
                                                               const LoadOptions& options = {});

  const ModelConfig& config() const { return config_; }
  const Weights& weights() const { return weights_; }
  const gguf::File& gguf() const {
    return file_;
  }  // tokenizer and chat template are read from here
  // 16 hex digits: 64-bit FNV-1a over the architecture, every tensor's name/shape/type, the
  // tokenizer tokens and merges and the chat template. Identifies "the same model" for saved state.
  const std::string& fingerprint() const { return fingerprint_; }
  // What ModelLoadOptions::pack_weights cost (bytes 0 when nothing was packed).
  size_t packed_bytes() const { return packed_.bytes; }
  double pack_seconds() const { return packed_.seconds; }
  // The weights on the GPU (cuda_weights.h): uploaded by the first call, which every CUDA context
  // makes when it is created; later calls share that copy. A failed upload is not kept (the next
  // call tries again). Errors: UNSUPPORTED (built without CUDA), DEVICE, INTERNAL. Any thread.
  StatusOr<std::shared_ptr<const CudaWeights>> cuda_weights() const;

  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

 private:
  explicit Model(gguf::File file) : file_(std::move(file)) {}
  static StatusOr<std::shared_ptr<const Model>> Build(gguf::File file, const LoadOptions& options);

  gguf::File file_;
  std::optional<gguf::File> mtp_file_;  // ModelLoadOptions::mtp_path / mtp_image: weights_.mtp's
  ModelConfig config_;
  Weights weights_;
  PackedWeights packed_;  // the buffers weights_' packed pointers point into
  std::string fingerprint_;
  mutable std::mutex cuda_mu_;                               // guards cuda_weights_
  mutable std::shared_ptr<const CudaWeights> cuda_weights_;  // set by the first cuda_weights()
};

}  // namespace qwenrt
