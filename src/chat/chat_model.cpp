// ChatModel construction and prompt rendering (see chat_model.h).
#include "chat/chat_model.h"

#include "base/guard_alloc.h"

namespace qwenrt {

StatusOr<std::shared_ptr<const ChatModel>> ChatModel::Create(
    std::shared_ptr<const Model> model, const jinja::TemplateLimits& template_limits) {
  if (model == nullptr) return InvalidArgument("ChatModel: model is null");
  std::shared_ptr<ChatModel> m(new ChatModel());
  QWENRT_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, Tokenizer::FromGguf(model->gguf()));
  m->tokenizer_ = std::move(tok);
  if (const gguf::Value* v = model->gguf().Find("tokenizer.chat_template"); v != nullptr) {
    // AsString() of a non-string is empty: parsing it would accept an empty template silently.
    StatusOr<ChatTemplate> t =
        v->type() == gguf::ValueType::STRING
            ? ChatTemplate::Parse(std::string(v->AsString()), template_limits)
            : StatusOr<ChatTemplate>(BadFormat("tokenizer.chat_template is a {}, not a string",
                                               gguf::ValueTypeName(v->type())));
    if (t.ok()) {
      m->chat_template_ = std::make_unique<const ChatTemplate>(std::move(t).value());
    } else {
      m->template_error_ = t.status().message();
    }
  }
  if (const gguf::Value* v = model->gguf().Find("general.name"); v != nullptr)
    m->name_ = std::string(v->AsString());
  for (const gguf::TensorInfo& t : model->gguf().tensors()) {
    uint64_t n = 1;
    for (int d = 0; d < t.n_dims; ++d) n *= static_cast<uint64_t>(t.ne[d]);
    m->n_params_ += n;
    m->weight_bytes_ += t.nbytes;
  }
  m->model_ = std::move(model);
  return std::shared_ptr<const ChatModel>(std::move(m));
}

StatusOr<std::shared_ptr<const TokenTrie>> ChatModel::token_trie() const {
  std::lock_guard<std::mutex> lock(trie_mu_);
  if (trie_ == nullptr) {
    QWENRT_ASSIGN_OR_RETURN(trie_, TokenTrie::Build(*tokenizer_));
  }
  return trie_;
}

StatusOr<std::string> ChatModel::Render(const ChatRequest& request) const {
  if (chat_template_ == nullptr) {
    if (!template_error_.empty())
      return Unsupported("the model's chat template cannot be used: {}", template_error_);
    return Unsupported("the model has no chat template (tokenizer.chat_template)");
  }
  QWENRT_RETURN_IF_ERROR(CheckRequestDepth(request));
  const auto render = [&]() -> StatusOr<std::string> {
    QWENRT_ASSIGN_OR_RETURN(
        jinja::Value messages,
        MessagesValue(request.messages, chat_template_->limits().max_value_depth));
    return chat_template_->RenderChat(std::move(messages), request.tools,
                                      request.add_generation_prompt, request.enable_thinking);
  };
  return GuardAlloc(render, "out of memory while building the chat template's messages");
}

}  // namespace qwenrt
