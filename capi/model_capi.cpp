// C ABI shims for `qwenrt_model`: load (file / memory, progress), free, info, end-of-generation
// test, tokenize and detokenize. Chat rendering is in chat_capi.cpp.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "guard.h"
#include "handle_registry.h"
#include "handles.h"
#include "params.h"
#include "qwenrt/qwenrt.h"
#include "session/memory_estimate.h"
#include "session/session.h"
#include "validate.h"

namespace qwenrt::capi {

namespace {

constexpr const char* kModelParams = "qwenrt_model_params";

Status ReadModelParams(const qwenrt_model_params* in, qwenrt_model_params* out) {
  constexpr size_t v2 = kModelParamsV1Size + 1;  // any struct larger than ABI 1's has them all
  return ReadParams(in, DefaultModelParams(), out,
                    {QWENRT_FIELD(qwenrt_model_params, check_tensors),
                     QWENRT_FIELD(qwenrt_model_params, progress_callback),
                     QWENRT_FIELD(qwenrt_model_params, progress_user_data),
                     QWENRT_FIELD_SINCE(qwenrt_model_params, read_file, v2),
                     QWENRT_FIELD_SINCE(qwenrt_model_params, pack_weights, v2),
                     QWENRT_FIELD_SINCE(qwenrt_model_params, template_max_bytes, v2),
                     QWENRT_FIELD_SINCE(qwenrt_model_params, template_max_cost, v2),
                     QWENRT_FIELD_SINCE(qwenrt_model_params, template_max_output_bytes, v2),
                     QWENRT_FIELD_SINCE(qwenrt_model_params, template_max_value_depth, v2)},
                    "params", kModelParams);
}

// The deprecated qwenrt_model_options (NULL: none): read up to their struct_size, their fields
// replace the params' load options.
Status ApplyModelOptions(const qwenrt_model_options* in, qwenrt_model_params* p) {
  if (in == nullptr) return OkStatus();
  qwenrt_model_options defaults{};
  defaults.struct_size = sizeof defaults;
  qwenrt_model_options o;
  QWENRT_RETURN_IF_ERROR(ReadParams(in, defaults, &o,
                                    {QWENRT_FIELD(qwenrt_model_options, read_file),
                                     QWENRT_FIELD(qwenrt_model_options, pack_weights),
                                     QWENRT_FIELD(qwenrt_model_options, template_max_bytes),
                                     QWENRT_FIELD(qwenrt_model_options, template_max_cost),
                                     QWENRT_FIELD(qwenrt_model_options, template_max_output_bytes),
                                     QWENRT_FIELD(qwenrt_model_options, template_max_value_depth)},
                                    "options", "qwenrt_model_options"));
  p->read_file = o.read_file;
  p->pack_weights = o.pack_weights;
  p->template_max_bytes = o.template_max_bytes;
  p->template_max_cost = o.template_max_cost;
  p->template_max_output_bytes = o.template_max_output_bytes;
  p->template_max_value_depth = o.template_max_value_depth;
  return OkStatus();
}

// The template limits the params set (0 keeps each default).
StatusOr<jinja::TemplateLimits> ToTemplateLimits(const qwenrt_model_params& p) {
  jinja::TemplateLimits l;
  const auto size = [](uint64_t v) { return static_cast<size_t>(std::min<uint64_t>(v, SIZE_MAX)); };
  if (p.template_max_bytes != 0) l.max_template_bytes = size(p.template_max_bytes);
  if (p.template_max_cost != 0) l.max_cost = p.template_max_cost;
  if (p.template_max_output_bytes != 0) l.max_output_bytes = size(p.template_max_output_bytes);
  if (p.template_max_value_depth < 0) {
    return InvalidArgument("params->template_max_value_depth is {} (0 keeps the default)",
                           p.template_max_value_depth);
  }
  if (p.template_max_value_depth != 0) l.max_value_depth = p.template_max_value_depth;
  return l;
}

Model::LoadOptions ToLoadOptions(const qwenrt_model_params& p) {
  Model::LoadOptions o;
  o.check_tensors = p.check_tensors;
  o.read_file = p.read_file;
  o.pack_weights = p.pack_weights;
  if (p.progress_callback != nullptr) {
    qwenrt_progress_callback cb = p.progress_callback;
    void* user = p.progress_user_data;
    o.progress = [cb, user](float f) { return cb(f, user); };
  }
  return o;
}

// Wraps a loaded model in a registered handle.
Status Publish(StatusOr<std::shared_ptr<const Model>> loaded, const jinja::TemplateLimits& limits,
               qwenrt_model** out_model) {
  if (!loaded.ok()) return loaded.status();
  QWENRT_ASSIGN_OR_RETURN(std::shared_ptr<const ChatModel> chat_model,
                          ChatModel::Create(std::move(loaded).value(), limits));
  auto handle = std::make_unique<qwenrt_model>();
  handle->model = std::move(chat_model);
  RegisterHandle(handle.get(), HandleKind::kModel);
  *out_model = handle.release();
  return OkStatus();
}

const ChatModel& B(const qwenrt_model* m) { return *m->model; }

// Where a model comes from: a file (mapped or read) or the caller's bytes.
struct Source {
  bool file = false;
  const char* path = nullptr;
  const void* data = nullptr;
  size_t size = 0;
};

// Every load; `options` only from the deprecated _ex functions.
Status LoadModel(const Source& src, const qwenrt_model_params* params,
                 const qwenrt_model_options* options, qwenrt_model** out_model) {
  if (out_model == nullptr) return InvalidArgument("out_model is NULL");
  *out_model = nullptr;
  if (src.file && src.path == nullptr) return InvalidArgument("path is NULL");
  if (!src.file && src.data == nullptr) return InvalidArgument("data is NULL");
  if (!src.file && src.size == 0) return InvalidArgument("size is 0");
  qwenrt_model_params p;
  QWENRT_RETURN_IF_ERROR(ReadModelParams(params, &p));
  QWENRT_RETURN_IF_ERROR(ApplyModelOptions(options, &p));
  QWENRT_ASSIGN_OR_RETURN(const jinja::TemplateLimits limits, ToTemplateLimits(p));
  if (src.file) return Publish(Model::Load(src.path, ToLoadOptions(p)), limits, out_model);
  return Publish(Model::LoadFromMemory(src.data, src.size, ToLoadOptions(p)), limits, out_model);
}

}  // namespace
}  // namespace qwenrt::capi

using namespace qwenrt;        // NOLINT: shims only
using namespace qwenrt::capi;  // NOLINT

extern "C" {

qwenrt_status qwenrt_model_load(const char* path, const qwenrt_model_params* params,
                                qwenrt_model** out_model) {
  return Guard(__func__, [&]() -> Status {
    return LoadModel({true, path, nullptr, 0}, params, nullptr, out_model);
  });
}

qwenrt_status qwenrt_model_load_ex(const char* path, const qwenrt_model_params* params,
                                   const qwenrt_model_options* options, qwenrt_model** out_model) {
  return Guard(__func__, [&]() -> Status {
    return LoadModel({true, path, nullptr, 0}, params, options, out_model);
  });
}

qwenrt_status qwenrt_model_load_from_memory(const void* data, size_t size,
                                            const qwenrt_model_params* params,
                                            qwenrt_model** out_model) {
  return Guard(__func__, [&]() -> Status {
    return LoadModel({false, nullptr, data, size}, params, nullptr, out_model);
  });
}

qwenrt_status qwenrt_model_load_from_memory_ex(const void* data, size_t size,
                                               const qwenrt_model_params* params,
                                               const qwenrt_model_options* options,
                                               qwenrt_model** out_model) {
  return Guard(__func__, [&]() -> Status {
    return LoadModel({false, nullptr, data, size}, params, options, out_model);
  });
}

void qwenrt_model_free(qwenrt_model* model) {
  GuardValue(__func__, 0, [&]() {
    if (model != nullptr && UnregisterHandle(model, HandleKind::kModel)) delete model;
    return 0;
  });
}

qwenrt_status qwenrt_model_get_info(const qwenrt_model* model, qwenrt_model_info* info) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckHandle(model, HandleKind::kModel, "model"));
    if (info == nullptr) return InvalidArgument("info is NULL");
    const ChatModel& b = B(model);
    const ModelConfig& c = b.model()->config();
    qwenrt_model_info v{};
    v.struct_size = sizeof v;
    v.arch = c.arch.c_str();
    v.name = b.name().c_str();
    v.fingerprint = b.model()->fingerprint().c_str();
    v.n_vocab = static_cast<int32_t>(c.n_vocab);
    v.n_ctx_train = static_cast<int32_t>(c.n_ctx_train);
    v.n_layer = static_cast<int32_t>(c.n_layer);
    v.n_embd = static_cast<int32_t>(c.n_embd);
    v.n_expert = static_cast<int32_t>(c.n_expert);
    v.has_chat_template = b.chat_template() != nullptr;
    v.n_params = b.n_params();
    v.weight_bytes = b.weight_bytes();
    v.eos_token = b.tokenizer().special_ids().eos;
    v.eot_token = b.tokenizer().special_ids().im_end;
    const UnusedTensors& unused = b.model()->weights().unused;
    v.n_files = static_cast<int32_t>(b.model()->gguf().split_count());
    v.n_unused_tensors = static_cast<int32_t>(unused.mtp_tensors + unused.vision_tensors);
    v.unused_bytes = unused.bytes;
    v.unused = unused.summary.c_str();
    return WriteOut(v, info, "info", "qwenrt_model_info");
  });
}

qwenrt_status qwenrt_model_estimate_memory(const qwenrt_model* model,
                                           const qwenrt_memory_estimate_params* params,
                                           qwenrt_memory_estimate* out) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckHandle(model, HandleKind::kModel, "model"));
    if (out == nullptr) return InvalidArgument("out is NULL");
    qwenrt_memory_estimate_params p;
    QWENRT_RETURN_IF_ERROR(ReadParams(
        params, DefaultMemoryEstimateParams(), &p,
        {QWENRT_FIELD(qwenrt_memory_estimate_params, n_ctx),
         QWENRT_FIELD(qwenrt_memory_estimate_params, kv_type),
         QWENRT_FIELD(qwenrt_memory_estimate_params, n_sessions),
         QWENRT_FIELD(qwenrt_memory_estimate_params, checkpoint_budget),
         QWENRT_FIELD_SINCE(qwenrt_memory_estimate_params, n_threads, kMemoryEstimateParamsV1Size)},
        "params", "qwenrt_memory_estimate_params"));
    QWENRT_RETURN_IF_ERROR(CheckKvTypeField(p.kv_type, "params->kv_type"));
    if (p.checkpoint_budget > static_cast<uint64_t>(INT64_MAX))
      return InvalidArgument("params->checkpoint_budget is above INT64_MAX");
    if (p.n_threads < 0) return InvalidArgument("params->n_threads is negative");
    MemoryEstimateParams ep;  // the same conversions as qwenrt_session_create's
    ep.context = p.n_ctx;
    // QWENRT_KV_DEFAULT: the CPU's default, the backend AUTO resolves to (backend_choice.h).
    ep.kv_type = p.kv_type == QWENRT_KV_DEFAULT ? DefaultKvType(BackendKind::kCpu)
                                                : static_cast<KvType>(p.kv_type);
    ep.sessions = p.n_sessions;
    ep.checkpoint_budget_bytes =
        p.checkpoint_budget == 0 ? -1 : static_cast<int64_t>(p.checkpoint_budget);
    ep.n_threads = p.n_threads;  // ubatch: the session default, which the C ABI does not change
    QWENRT_ASSIGN_OR_RETURN(MemoryEstimate e, EstimateMemory(*B(model).model(), ep));
    qwenrt_memory_estimate v{};
    v.struct_size = sizeof v;
    v.weights = e.weights;
    v.kv_per_session = e.kv_per_session;
    v.state_per_session = e.state_per_session;
    v.checkpoints_per_session = e.checkpoints_per_session;
    v.working_per_session = e.working_per_session;
    v.per_session = e.per_session;
    v.total = e.total;
    return WriteOut(v, out, "out", "qwenrt_memory_estimate");
  });
}

bool qwenrt_model_token_is_eog(const qwenrt_model* model, int32_t token) {
  return GuardValue(__func__, false, [&]() {
    Status s = CheckHandle(model, HandleKind::kModel, "model");
    if (!s.ok()) {
      Report(__func__, s);
      return false;
    }
    return B(model).tokenizer().IsEog(token);
  });
}

qwenrt_status qwenrt_tokenize(const qwenrt_model* model, const char* text, size_t text_len,
                              bool parse_special, int32_t* tokens, size_t capacity,
                              size_t* n_tokens) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckHandle(model, HandleKind::kModel, "model"));
    if (n_tokens == nullptr) return InvalidArgument("n_tokens is NULL");
    if (text == nullptr && text_len > 0)
      return InvalidArgument("text is NULL but text_len is {}", text_len);
    if (tokens == nullptr && capacity > 0)
      return InvalidArgument("tokens is NULL but capacity is {}", capacity);
    std::string_view sv(text == nullptr ? "" : text, text_len);
    QWENRT_RETURN_IF_ERROR(CheckUtf8(sv, "text"));
    std::vector<int32_t> ids;
    B(model).tokenizer().Encode(
        sv, parse_special ? SpecialTokens::kAll : SpecialTokens::kUserDefined, &ids);
    *n_tokens = ids.size();
    if (ids.size() > capacity) {
      return BufferTooSmall("{} tokens do not fit in capacity {}", ids.size(), capacity);
    }
    if (!ids.empty()) std::memcpy(tokens, ids.data(), ids.size() * sizeof(int32_t));
    return OkStatus();
  });
}

qwenrt_status qwenrt_detokenize(const qwenrt_model* model, const int32_t* tokens, size_t n,
                                bool render_special, char* buf, size_t capacity, size_t* needed) {
  return Guard(__func__, [&]() -> Status {
    QWENRT_RETURN_IF_ERROR(CheckHandle(model, HandleKind::kModel, "model"));
    if (needed == nullptr) return InvalidArgument("needed is NULL");
    if (tokens == nullptr && n > 0) return InvalidArgument("tokens is NULL but n is {}", n);
    if (buf == nullptr && capacity > 0)
      return InvalidArgument("buf is NULL but capacity is {}", capacity);
    const Tokenizer& tok = B(model).tokenizer();
    for (size_t i = 0; i < n; ++i) {
      if (tokens[i] < 0 || tokens[i] >= tok.n_vocab()) {
        return InvalidArgument("tokens[{}] = {} is outside the vocabulary [0, {})", i, tokens[i],
                               tok.n_vocab());
      }
    }
    // Through the streaming decoder so that byte sequences that are not UTF-8 become U+FFFD.
    std::string text;
    StreamDecoder dec(tok, render_special);
    for (size_t i = 0; i < n; ++i) dec.Push(tokens[i], &text);
    dec.Flush(&text);
    return CopyString(text, buf, capacity, needed);
  });
}

}  // extern "C"
