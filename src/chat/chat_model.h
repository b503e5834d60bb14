// ChatModel: a loaded Model plus the text objects built from its GGUF once (tokenizer, chat
// template) and the facts hosts ask about. Immutable and shared (std::shared_ptr<const ChatModel>)
// by every ChatSession on it, on any threads; the C ABI's `qwenrt_model` is one of these.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"
#include "chat/constraint/token_trie.h"
#include "chat/messages.h"
#include "model/model.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace qwenrt {

class ChatModel {
 public:
  // Builds the tokenizer (errors: BadFormat from the vocabulary) and parses the chat template
  // within `template_limits`, which also bound every render (a template that cannot be parsed is
  // not an error here: Render reports why).
  static StatusOr<std::shared_ptr<const ChatModel>> Create(
      std::shared_ptr<const Model> model,
      const jinja::TemplateLimits& template_limits = jinja::TemplateLimits());

  // The prompt text of `request` through the model's chat template. Errors: Unsupported (no usable
  // template: the reason is in the message), the template's own errors (raise_exception, ...).
  StatusOr<std::string> Render(const ChatRequest& request) const;

  const std::shared_ptr<const Model>& model() const { return model_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  // The vocabulary's byte trie for constraint masks, built on first use (~0.1 s for 248k tokens)
  // and shared by every session. Any thread.
  StatusOr<std::shared_ptr<const TokenTrie>> token_trie() const;
  const ChatTemplate* chat_template() const { return chat_template_.get(); }  // null when unusable
  const std::string& template_error() const { return template_error_; }       // why it is null
  const std::string& name() const { return name_; }                           // general.name or ""
  uint64_t n_params() const { return n_params_; }
  uint64_t weight_bytes() const { return weight_bytes_; }

 private:
  ChatModel() = default;

  std::shared_ptr<const Model> model_;
  std::unique_ptr<const Tokenizer> tokenizer_;
  std::unique_ptr<const ChatTemplate> chat_template_;
  mutable std::mutex trie_mu_;
  mutable std::shared_ptr<const TokenTrie> trie_;  // guarded by trie_mu_
  std::string template_error_;
  std::string name_;
  uint64_t n_params_ = 0;
  uint64_t weight_bytes_ = 0;
};

}  // namespace qwenrt
