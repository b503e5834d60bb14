// ChatTemplate: runs a model's `tokenizer.chat_template` (a Jinja2 template) the way Hugging Face's
// `apply_chat_template` does, on a Jinja subset implemented in src/jinja_*.{h,cpp} (supported
// constructs and known differences: docs/chat-template.md). Parse once, render many times.
//
//   QWENRT_ASSIGN_OR_RETURN(ChatTemplate tmpl, ChatTemplate::Parse(source));
//   QWENRT_ASSIGN_OR_RETURN(std::string prompt, tmpl.RenderChat(messages, nullptr, true, std::nullopt));
//
// Thread safety: a parsed ChatTemplate is immutable; any thread may render with it concurrently.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace qwenrt {

namespace jinja {
struct Template;
}

class ChatTemplate {
 public:
  // Parses a template source. Syntax errors and unsupported tags: InvalidArgument whose message
  // names the line and column ("template syntax error at line 3, column 7: ...").
  static StatusOr<ChatTemplate> Parse(std::string source);

  // Renders with `context` (a JSON object) as the template's variables; the globals
  // `raise_exception`, `namespace`, `range`, `dict` and `strftime_now` are always available.
  // Errors (InvalidArgument): the template's own `raise_exception(msg)` gives exactly `msg`;
  // other runtime errors read "template error at line L, column C: <what>".
  StatusOr<std::string> Render(const nlohmann::ordered_json& context) const;

  // The usual chat context, as `apply_chat_template` builds it: `messages`, `tools` (null when
  // absent), `add_generation_prompt`, `enable_thinking` (left undefined when nullopt, which
  // Qwen's template reads as true), `bos_token`/`eos_token` (empty unless `extra` sets them),
  // plus every key of `extra` (a JSON object or null; its keys win). Tool-call `arguments`
  // given as a JSON string (OpenAI wire format) are parsed into an object first, as llama.cpp does.
  StatusOr<std::string> RenderChat(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                   bool add_generation_prompt, std::optional<bool> enable_thinking,
                                   const nlohmann::ordered_json& extra = nullptr) const;

  const std::string& source() const { return *source_; }

 private:
  ChatTemplate(std::shared_ptr<const jinja::Template> tmpl, std::shared_ptr<const std::string> source)
      : tmpl_(std::move(tmpl)), source_(std::move(source)) {}

  std::shared_ptr<const jinja::Template> tmpl_;
  std::shared_ptr<const std::string> source_;
};

}  // namespace qwenrt
