// ChatTemplate facade (see chat_template.h): parse with jinja_parser, build the Hugging Face chat
// context, render with jinja_eval. Nothing here throws: JSON work that could throw is guarded.
#include "text/chat_template.h"

#include "base/guard_alloc.h"
#include "text/jinja/jinja_budget.h"
#include "text/jinja/jinja_eval.h"
#include "text/jinja/jinja_parser.h"
#include "text/jinja/jinja_value.h"
#include "text/unicode.h"

namespace qwenrt {
namespace {

// Makes rendered text safe for NUL-terminated UTF-8 APIs (see Render): invalid bytes become
// U+FFFD; a NUL byte is an error, since replacing it would silently change what the model reads.
StatusOr<std::string> CleanRendered(std::string text) {
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    return InvalidArgument("rendered chat template contains a NUL byte at offset {}", nul);
  }
  if (unicode::IsValidUtf8(text)) return text;
  std::string out;
  out.reserve(text.size() + 16);
  unicode::AppendValidUtf8(text, &out);
  return out;
}

// The deepest JSON a render accepts is the value depth limit (a deeper document would be refused
// by FromJson anyway; measuring first also keeps copies of it, which recurse, from being made).
constexpr std::string_view kDepthNote = " (the chat template's max_value_depth)";

// Size of a context for the work budget: its strings' bytes (keys included) plus 8 per value.
// Iterative: the context may be as deep as max_value_depth.
uint64_t ValueBytes(const jinja::Value& root) {
  uint64_t bytes = 0;
  std::vector<const jinja::Value*> stack = {&root};
  while (!stack.empty()) {
    const jinja::Value* v = stack.back();
    stack.pop_back();
    bytes += 8;
    if (v->is_string()) {
      bytes += v->AsString().size();
    } else if (v->is_list()) {
      for (const jinja::Value& item : v->AsList().items) stack.push_back(&item);
    } else if (v->is_dict()) {
      for (const auto& [key, item] : v->AsDict().items) {
        if (key.is_string()) bytes += key.AsString().size();
        stack.push_back(&item);
      }
    }
  }
  return bytes;
}

}  // namespace

StatusOr<ChatTemplate> ChatTemplate::Parse(std::string source,
                                           const jinja::TemplateLimits& limits) {
  const auto parse = [&]() -> StatusOr<ChatTemplate> {
    QWENRT_ASSIGN_OR_RETURN(std::unique_ptr<jinja::Template> tmpl,
                            jinja::ParseTemplate(source, limits));
    return ChatTemplate(std::shared_ptr<const jinja::Template>(std::move(tmpl)),
                        std::make_shared<const std::string>(std::move(source)), limits);
  };
  return GuardAlloc(parse, "out of memory while parsing the chat template");
}

StatusOr<std::string> ChatTemplate::Render(const Json& context) const {
  if (!context.is_object()) return InvalidArgument("chat template context must be a JSON object");
  return GuardAlloc(
      [&]() -> StatusOr<std::string> {
        QWENRT_ASSIGN_OR_RETURN(jinja::Value ctx,
                                jinja::FromJson(context, limits_.max_value_depth));
        return RenderValue(ctx);
      },
      "out of memory while rendering the chat template");
}

StatusOr<std::string> ChatTemplate::RenderValue(const jinja::Value& context) const {
  const auto render = [&]() -> StatusOr<std::string> {
    jinja::TemplateLimits limits = limits_;
    const uint64_t extra = jinja::SaturatingMul(ValueBytes(context), limits.cost_per_context_byte);
    limits.max_cost = extra > UINT64_MAX - limits.max_cost ? UINT64_MAX : limits.max_cost + extra;
    QWENRT_ASSIGN_OR_RETURN(std::string text,
                            jinja::RenderTemplate(*tmpl_, context.AsDict(), limits));
    return CleanRendered(std::move(text));
  };
  return GuardAlloc(render, "out of memory while rendering the chat template");
}

namespace {

// Replaces string `arguments` of tool calls that parse as a JSON object with that object. An
// object nested deeper than max_value_depth is an error (the render would refuse it, and copies
// of the context, which recurse, must not see it).
Status ParseToolCallArguments(Json* messages, const jinja::TemplateLimits& limits) {
  if (!messages->is_array()) return OkStatus();
  for (auto& msg : *messages) {
    if (!msg.is_object()) continue;
    auto calls = msg.find("tool_calls");
    if (calls == msg.end() || !calls->is_array()) continue;
    for (auto& call : *calls) {
      if (!call.is_object()) continue;
      auto fn = call.find("function");
      Json& target = (fn != call.end() && fn->is_object()) ? *fn : call;
      auto args = target.find("arguments");
      if (args == target.end() || !args->is_string()) continue;
      // A string that is not a JSON object stays a string; one nested too deeply is an error.
      bool too_deep = false;
      StatusOr<Json> parsed = Json::Parse(args->str(), Json::Limits{limits.max_value_depth},
                                          "tool call arguments", &too_deep);
      if (too_deep) {
        return InvalidArgument(
            "tool call arguments nested too deeply for the chat template (max_value_depth is {})",
            limits.max_value_depth);
      }
      if (!parsed.ok() || !parsed->is_object()) continue;
      *args = std::move(*parsed);
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::string> ChatTemplate::RenderChat(const Json& messages, const Json& tools,
                                               bool add_generation_prompt,
                                               std::optional<bool> enable_thinking,
                                               const Json& extra) const {
  // Before any copy: copying a document recurses per level.
  QWENRT_RETURN_IF_ERROR(CheckJsonDepth(messages, limits_.max_value_depth, "messages", kDepthNote));
  const auto render = [&]() -> StatusOr<std::string> {
    Json parsed = messages;
    QWENRT_RETURN_IF_ERROR(ParseToolCallArguments(&parsed, limits_));
    QWENRT_ASSIGN_OR_RETURN(jinja::Value value, jinja::FromJson(parsed, limits_.max_value_depth));
    return RenderChat(std::move(value), tools, add_generation_prompt, enable_thinking, extra);
  };
  return GuardAlloc(render, "out of memory while rendering the chat template");
}

StatusOr<std::string> ChatTemplate::RenderChat(jinja::Value messages, const Json& tools,
                                               bool add_generation_prompt,
                                               std::optional<bool> enable_thinking,
                                               const Json& extra) const {
  if (!extra.is_null() && !extra.is_object())
    return InvalidArgument("extra template variables must be a JSON object");
  QWENRT_RETURN_IF_ERROR(CheckJsonDepth(tools, limits_.max_value_depth, "tools", kDepthNote));
  QWENRT_RETURN_IF_ERROR(
      CheckJsonDepth(extra, limits_.max_value_depth, "extra template variables", kDepthNote));
  if (messages.Depth() > limits_.max_value_depth) {
    return InvalidArgument(
        "messages nested too deeply for the chat template (max_value_depth is {})",
        limits_.max_value_depth);
  }
  try {
    jinja::Dict ctx;
    ctx.items.reserve(8);
    ctx.Set(jinja::Value::String("messages"), std::move(messages));
    QWENRT_ASSIGN_OR_RETURN(jinja::Value tools_value,
                            jinja::FromJson(tools, limits_.max_value_depth));
    ctx.Set(jinja::Value::String("tools"), std::move(tools_value));
    ctx.Set(jinja::Value::String("add_generation_prompt"),
            jinja::Value::Bool(add_generation_prompt));
    if (enable_thinking.has_value())
      ctx.Set(jinja::Value::String("enable_thinking"), jinja::Value::Bool(*enable_thinking));
    ctx.Set(jinja::Value::String("bos_token"), jinja::Value::String(""));
    ctx.Set(jinja::Value::String("eos_token"), jinja::Value::String(""));
    if (extra.is_object()) {
      for (auto it = extra.begin(); it != extra.end(); ++it) {
        QWENRT_ASSIGN_OR_RETURN(jinja::Value v,
                                jinja::FromJson(it.value(), limits_.max_value_depth));
        ctx.Set(jinja::Value::String(it.key()), std::move(v));
      }
    }
    return RenderValue(jinja::Value::MakeDict(std::move(ctx)));
  } catch (const std::bad_alloc&) {
    return OutOfMemory("out of memory while rendering the chat template");
  } catch (const std::exception& e) {
    return InvalidArgument("chat template context: {}", e.what());
  }
}

}  // namespace qwenrt
