// Model loading: parse (gguf.hpp) → config → weight views → optional deep tensor check →
// fingerprint. Everything after the parse only reads the mapped bytes.
#include "model/model.h"

#include <unistd.h>

#include <algorithm>
#include <thread>
#include <unordered_set>

#include "base/guard_alloc.h"
#include "model/cuda_weights.h"
#include "model/gguf_meta.h"
#include "model/gguf_status.h"
#include "ops/packed.h"

namespace qwenrt {
namespace {

class Fnv1a {
 public:
  void Add(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 0x100000001b3ull;
  }
  void Add(std::string_view s) {
    const uint64_t n = s.size();
    Add(&n, sizeof n);  // length-prefixed so that ("ab","c") != ("a","bc")
    Add(s.data(), s.size());
  }
  void Add(int64_t v) { Add(&v, sizeof v); }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xcbf29ce484222325ull;
};

void AddStringArray(Fnv1a& h, const gguf::File& f, const char* key) {
  const gguf::Value* v = f.Find(key);
  if (v == nullptr || v->type() != gguf::ValueType::ARRAY ||
      v->element_type() != gguf::ValueType::STRING) {
    h.Add(int64_t{-1});
    return;
  }
  h.Add(static_cast<int64_t>(v->size()));
  for (size_t i = 0; i < v->size(); ++i) h.Add(v->StringAt(i));
}

std::string Fingerprint(const gguf::File& f, const ModelConfig& c) {
  Fnv1a h;
  h.Add(c.arch);
  h.Add(static_cast<int64_t>(f.tensors().size()));
  for (const gguf::TensorInfo& t : f.tensors()) {
    h.Add(t.name);
    h.Add(static_cast<int64_t>(t.type));
    h.Add(static_cast<int64_t>(t.n_dims));
    for (int d = 0; d < t.n_dims; ++d) h.Add(t.ne[d]);
  }
  AddStringArray(h, f, "tokenizer.ggml.tokens");
  AddStringArray(h, f, "tokenizer.ggml.merges");
  std::string tmpl;
  if (!meta::GetString(f, "tokenizer.chat_template", false, "", &tmpl).ok()) tmpl.clear();
  h.Add(tmpl);
  return fmt::format("{:016x}", h.value());
}

}  // namespace

StatusOr<std::shared_ptr<const Model>> Model::Build(gguf::File file, const LoadOptions& options) {
  auto progress = [&](float x) -> Status {
    if (options.progress && !options.progress(x)) return Cancelled("model load cancelled");
    return OkStatus();
  };
  const auto build = [&]() -> StatusOr<std::shared_ptr<const Model>> {
    QWENRT_RETURN_IF_ERROR(progress(0.1f));
    std::shared_ptr<Model> m(new Model(std::move(file)));
    QWENRT_ASSIGN_OR_RETURN(m->config_, ConfigFromGguf(m->file_));
    QWENRT_ASSIGN_OR_RETURN(m->weights_, WeightsFromGguf(m->file_, m->config_));
    if (!options.mtp_path.empty() || !options.mtp_image.empty()) {
      gguf::Error err;
      if (!options.mtp_path.empty()) {
        m->mtp_file_ = gguf::File::Open(options.mtp_path, &err);
      } else {
        m->mtp_file_ = gguf::File::FromMemory(options.mtp_image.data(), options.mtp_image.size(),
                                              /*copy=*/true, &err);
      }
      const std::string what = options.mtp_path.empty() ? "MTP image" : options.mtp_path;
      if (!m->mtp_file_) return Status(GgufStatus(err).code(), what + ": " + err.ToString());
      auto dc = ConfigFromGguf(*m->mtp_file_);
      if (!dc.ok()) return Status(dc.status().code(), what + ": " + dc.status().message());
      auto mtp = MtpWeightsFromGguf(*m->mtp_file_, *dc, m->file_, m->config_, m->weights_);
      if (!mtp.ok()) return Status(mtp.status().code(), what + ": " + mtp.status().message());
      m->weights_.mtp = std::move(mtp).value();
      // The trunk now has the head: its blocks count as the file's (KV slots, scratch).
      m->config_.n_nextn = dc->n_nextn;
      m->config_.n_layer_all = dc->n_layer_all;
    }
    QWENRT_RETURN_IF_ERROR(progress(0.3f));
    if (options.check_tensors) {  // before packing: it reads every tensor's file-layout bytes
      const auto& tensors = m->file_.tensors();
      for (size_t i = 0; i < tensors.size(); ++i) {
        gguf::Error err;
        if (!gguf::CheckTensorData(tensors[i], &err)) return GgufStatus(err);
        QWENRT_RETURN_IF_ERROR(progress(0.3f + 0.6f * static_cast<float>(i + 1) / tensors.size()));
      }
    }
    if (options.pack_weights && cpu::PackedKernelsFast()) {
      // Each matrix's own pages go as soon as it is packed, so the load never holds the file's
      // and the packed rows of all matrices at once; pages shared by two packed matrices go with
      // the second (ReleasePackedPages, after all of them).
      const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
      QWENRT_RETURN_IF_ERROR(
          PackWeights(&m->weights_, static_cast<int>(std::thread::hardware_concurrency()),
                      &m->packed_, [&](const WeightMatrix& w) {
                        ReleasePages(m->file_, PackedOnlyPages(m->file_, {w.data}, page));
                      }));
      m->ReleasePackedPages();
    }
    m->fingerprint_ = Fingerprint(m->file_, m->config_);
    QWENRT_RETURN_IF_ERROR(progress(1.0f));
    return std::shared_ptr<const Model>(std::move(m));
  };
  return GuardAlloc(build, "out of memory while loading the model");
}

void Model::ReleasePackedPages() {
  std::unordered_set<const uint8_t*> packed;  // data pointers of the packed matrices
  const auto add = [&](const WeightMatrix& w) {
    if (w.packed != nullptr) packed.insert(w.data);
  };
  add(weights_.output);
  for (const LayerWeights& l : weights_.layers) {
    for (const WeightMatrix* w :
         {&l.gdn.qkv, &l.gdn.gate, &l.gdn.alpha, &l.gdn.beta, &l.gdn.out, &l.attn.q, &l.attn.k,
          &l.attn.v, &l.attn.o, &l.ffn.gate, &l.ffn.up, &l.ffn.down, &l.moe.shexp_gate,
          &l.moe.shexp_up, &l.moe.shexp_down}) {
      add(*w);
    }
  }
  if (packed.empty()) return;
  packed_pages_ = PackedOnlyPages(file_, packed, static_cast<size_t>(::sysconf(_SC_PAGESIZE)));
  released_bytes_ = ReleasePages(file_, packed_pages_);
}

size_t Model::resident_weight_bytes() const {
  size_t bytes = 0;
  for (const gguf::TensorInfo& t : file_.tensors()) bytes += t.nbytes;
  return bytes - std::min(bytes, released_bytes_) + packed_.bytes;
}

StatusOr<std::shared_ptr<const Model>> Model::Load(const std::string& path,
                                                   const LoadOptions& options) {
  gguf::Error err;
  std::optional<gguf::File> f;
  QWENRT_RETURN_IF_ERROR(GuardAlloc(
      [&] {
        f = gguf::File::Open(path, &err, gguf::ParseOptions(),
                             options.read_file ? gguf::OpenMode::kRead : gguf::OpenMode::kMap);
      },
      "out of memory while reading '{}'", path));
  if (!f) return GgufStatus(err);
  return Build(std::move(*f), options);
}

StatusOr<std::shared_ptr<const Model>> Model::LoadFromMemory(const void* data, size_t size,
                                                             const LoadOptions& options) {
  if (data == nullptr && size != 0) return InvalidArgument("LoadFromMemory: null data");
  gguf::Error err;
  std::optional<gguf::File> f;
  QWENRT_RETURN_IF_ERROR(
      GuardAlloc([&] { f = gguf::File::FromMemory(data, size, /*copy=*/true, &err); },
                 "out of memory while copying a {}-byte model image", size));
  if (!f) return GgufStatus(err);
  return Build(std::move(*f), options);
}

StatusOr<std::shared_ptr<const CudaWeights>> Model::cuda_weights() const {
  std::lock_guard<std::mutex> lock(cuda_mu_);  // one upload, however many contexts start at once
  if (cuda_weights_ == nullptr) {
    QWENRT_ASSIGN_OR_RETURN(cuda_weights_, CudaWeights::Upload(*this));
    // The upload read the file-layout rows of the packed matrices back in: give them back again.
    ReleasePages(file_, packed_pages_);
  }
  return cuda_weights_;
}

}  // namespace qwenrt
