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
#include <vector>

#include "base/status.h"
#include "model/config.h"
#include "model/packed_weights.h"
#include "model/weight_pages.h"
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
  // Pack the matrices whose type has a packed layout (Q2_K .. Q6_K, Q4_0 .. Q5_1, Q8_0, IQ4_NL,
  // IQ4_XS, MXFP4; ops/packed.h HasPackedLayout) into the row-interleaved layout of the CPU
  // matmul's register tiles (routed MoE experts, the embedding table and a head tied to it stay as
  // they are), taken per type where this CPU's packed kernel is the faster one
  // (cpu::PackedKernelFast: Q4_K / Q6_K on the avx512 and avx2 levels, the others with AVX-512
  // VNNI); the CUDA pass never reads it. In place for a mapped file: the packed rows replace the
  // file's rows in memory (the mapped pages that hold only packed matrices are released, and read
  // from the file again only by what still reads file-layout rows: the reference backend, the CUDA
  // upload), so resident weights stay about the file's size (Q4_K records are 2.8% larger). A file
  // read into memory (read_file, LoadFromMemory) keeps its copy beside the packed one. Costs a pass
  // over the matrices at load. Measured (docs/performance.md): on the avx512 level prefill ~2x and
  // decode faster; on the avx2 level prefill +57% but decode -39%. Default: on where it is faster
  // for both (PackWeightsByDefault: the AVX-512 VNNI level).
  bool pack_weights = PackWeightsByDefault();
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
  // Bytes of the file's mapped pages given back because they hold only packed matrices (0 when
  // nothing was packed, or for a file read into memory).
  size_t released_bytes() const { return released_bytes_; }
  // The weights this Model keeps in memory: every tensor's data bytes, less released_bytes(), plus
  // packed_bytes(). About the file's size for a mapped file, packed or not.
  size_t resident_weight_bytes() const;
  // The weights on the GPU (cuda_weights.h): uploaded by the first call, which every CUDA context
  // makes when it is created; later calls share that copy. A failed upload is not kept (the next
  // call tries again). Errors: UNSUPPORTED (built without CUDA), DEVICE, INTERNAL. Any thread.
  StatusOr<std::shared_ptr<const CudaWeights>> cuda_weights() const;

  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

 private:
  explicit Model(gguf::File file) : file_(std::move(file)) {}
  static StatusOr<std::shared_ptr<const Model>> Build(gguf::File file, const LoadOptions& options);
  // After PackWeights: finds packed_pages_ and gives them back (released_bytes_).
  void ReleasePackedPages();

  gguf::File file_;
  std::optional<gguf::File> mtp_file_;  // ModelLoadOptions::mtp_path / mtp_image: weights_.mtp's
  ModelConfig config_;
  Weights weights_;
  PackedWeights packed_;                 // the buffers weights_' packed pointers point into
  std::vector<PageRange> packed_pages_;  // the file's pages that hold only packed matrices
  size_t released_bytes_ = 0;            // of packed_pages_, given back at load
  std::string fingerprint_;
  mutable std::mutex cuda_mu_;                               // guards cuda_weights_
  mutable std::shared_ptr<const CudaWeights> cuda_weights_;  // set by the first cuda_weights()
};

}  // namespace qwenrt
