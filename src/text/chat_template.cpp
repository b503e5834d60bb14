// ChatTemplate facade (see chat_template.h): parse with jinja_parser, build the Hugging Face chat
// context, render with jinja_eval. Nothing here throws: JSON work that could throw is guarded.
#include "text/chat_template.h"

#include "text/jinja/jinja_eval.h"
#include "text/jinja/jinja_parser.h"
#include "text/jinja/jinja_value.h"

namespace qwenrt {

StatusOr<ChatTemplate> ChatTemplate::Parse(std::string source) {
  try {
    QWENRT_ASSIGN_OR_RETURN(std::unique_ptr<jinja::Template> tmpl, jinja::ParseTemplate(source));
    return ChatTemplate(std::shared_ptr<const jinja::Template>(std::move(tmpl)),
                        std::make_shared<const std::string>(std::move(source)));
  } catch (const std::bad_alloc&) {
    return OutOfMemory("out of memory while parsing the chat template");
  }
}

StatusOr<std::string> ChatTemplate::Render(const nlohmann::ordered_json& context) const {
  if (!context.is_object()) return InvalidArgument("chat template context must be a JSON object");
  try {
    jinja::Value ctx = jinja::FromJson(context);
    return jinja::RenderTemplate(*tmpl_, ctx.AsDict());
  } catch (const std::bad_alloc&) {
    return OutOfMemory("out of memory while rendering the chat template");
  }
}

namespace {

// Replaces string `arguments` of tool calls that parse as a JSON object with that object.
void ParseToolCallArguments(nlohmann::ordered_json* messages) {
  if (!messages->is_array()) return;
  for (auto& msg : *messages) {
    if (!msg.is_object()) continue;
    auto calls = msg.find("tool_calls");
    if (calls == msg.end() || !calls->is_array()) continue;
    for (auto& call : *calls) {
      if (!call.is_object()) continue;
      auto fn = call.find("function");
      nlohmann::ordered_json& target = (fn != call.end() && fn->is_object()) ? *fn : call;
      auto args = target.find("arguments");
      if (args == target.end() || !args->is_string()) continue;
      auto parsed = nlohmann::ordered_json::parse(args->get<std::string>(), nullptr, /*allow_exceptions=*/false);
      if (parsed.is_object()) *args = std::move(parsed);
    }
  }
}

}  // namespace

StatusOr<std::string> ChatTemplate::RenderChat(const nlohmann::ordered_json& messages,
                                               const nlohmann::ordered_json& tools, bool add_generation_prompt,
                                               std::optional<bool> enable_thinking,
                                               const nlohmann::ordered_json& extra) const {
  if (!extra.is_null() && !extra.is_object()) return InvalidArgument("extra template variables must be a JSON object");
  try {
    nlohmann::ordered_json ctx = nlohmann::ordered_json::object();
    ctx["messages"] = messages;
    ParseToolCallArguments(&ctx["messages"]);
    ctx["tools"] = tools;
    ctx["add_generation_prompt"] = add_generation_prompt;
    if (enable_thinking.has_value()) ctx["enable_thinking"] = *enable_thinking;
    ctx["bos_token"] = "";
    ctx["eos_token"] = "";
    if (extra.is_object()) {
      for (auto it = extra.begin(); it != extra.end(); ++it) ctx[it.key()] = it.value();
    }
    return Render(ctx);
  } catch (const std::bad_alloc&) {
    return OutOfMemory("out of memory while rendering the chat template");
  } catch (const std::exception& e) {
    return InvalidArgument("chat template context: {}", e.what());
  }
}

}  // namespace qwenrt
