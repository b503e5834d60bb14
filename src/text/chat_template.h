// ChatTemplate: runs a model's `tokenizer.chat_template` (a Jinja2 template) the way Hugging Face's
// `apply_chat_template` does, on a Jinja subset implemented in src/text/jinja/ (supported
// constructs, known differences and limits: docs/chat-template.md). Parse once, render many times.
// The template (from the model file) and the context (from the caller) are both untrusted: every
// parse and render is bounded by jinja::TemplateLimits and fails with a Status, never a crash.
//
//   QWENRT_ASSIGN_OR_RETURN(ChatTemplate tmpl, ChatTemplate::Parse(source));
//   QWENRT_ASSIGN_OR_RETURN(std::string prompt, tmpl.RenderChat(messages, nullptr, true,
//   std::nullopt));
//
// Thread safety: a parsed ChatTemplate is immutable; any thread may render with it concurrently.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "text/jinja/jinja_limits.h"
#include "text/jinja/jinja_value.h"
#include "text/json.h"

namespace qwenrt {

namespace jinja {
struct Template;
}

class ChatTemplate {
 public:
  // Parses a template source. Syntax errors and unsupported tags: InvalidArgument whose message
  // names the line and column ("template syntax error at line 3, column 7: ..."). `limits` bound
  // this parse and every later render with this template.
  static StatusOr<ChatTemplate> Parse(
      std::string source, const jinja::TemplateLimits& limits = jinja::TemplateLimits());

  // Renders with `context` (a JSON object) as the template's variables; the globals
  // `raise_exception`, `namespace`, `range`, `dict` and `strftime_now` are always available.
  // Errors (InvalidArgument): the template's own `raise_exception(msg)` gives exactly `msg`;
  // other runtime errors read "template error at line L, column C: <what>"; a limit reached names
  // it (max_cost, max_value_depth, ...; a context nested deeper than max_value_depth is refused
  // before rendering). The result is valid UTF-8 without NUL bytes, so it passes intact through
  // NUL-terminated APIs: invalid UTF-8 the template produced (from bytes in its source or
  // lone-surrogate escapes such as "\udc80") is replaced by U+FFFD, one per bad byte, and a NUL
  // byte anywhere in the result is an InvalidArgument.
  StatusOr<std::string> Render(const Json& context) const;

  // The usual chat context, as `apply_chat_template` builds it: `messages`, `tools` (null when
  // absent), `add_generation_prompt`, `enable_thinking` (left undefined when nullopt, which
  // Qwen's template reads as true), `bos_token`/`eos_token` (empty unless `extra` sets them),
  // plus every key of `extra` (a JSON object or null; its keys win). Tool-call `arguments`
  // given as a JSON string (OpenAI wire format) are parsed into an object first, as llama.cpp does.
  StatusOr<std::string> RenderChat(const Json& messages, const Json& tools,
                                   bool add_generation_prompt, std::optional<bool> enable_thinking,
                                   const Json& extra = nullptr) const;
  // The same with `messages` already a template value (a list of dicts), as the chat engine
  // builds it: no JSON document is made or copied. Tool-call arguments are taken as given.
  StatusOr<std::string> RenderChat(jinja::Value messages, const Json& tools,
                                   bool add_generation_prompt, std::optional<bool> enable_thinking,
                                   const Json& extra = nullptr) const;

  const std::string& source() const { return *source_; }
  const jinja::TemplateLimits& limits() const { return limits_; }

 private:
  ChatTemplate(std::shared_ptr<const jinja::Template> tmpl,
               std::shared_ptr<const std::string> source, const jinja::TemplateLimits& limits)
      : tmpl_(std::move(tmpl)), source_(std::move(source)), limits_(limits) {}
  // Renders with `context` (a dict value) as the template's variables.
  StatusOr<std::string> RenderValue(const jinja::Value& context) const;

  std::shared_ptr<const jinja::Template> tmpl_;
  std::shared_ptr<const std::string> source_;
  jinja::TemplateLimits limits_;
};

}  // namespace qwenrt
