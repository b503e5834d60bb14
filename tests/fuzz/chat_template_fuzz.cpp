// libFuzzer target: chat templates. An input starting with "J:" is a JSON conversation
// (`{"messages": [...], "tools": [...]}`) rendered with Qwen3.5's own template (the hostile
// caller); any other input is a template source (the hostile model file), parsed and rendered with
// a fixed conversation that has a system prompt, tools, a tool call and a tool result. Properties:
// no crash, UB or escaping exception (the engine's depth, step and size limits hold).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "chat/messages.h"
#include "fuzz_util.h"
#include "text/chat_template.h"

using namespace qwenrt;  // NOLINT: fuzz target
using json = qwenrt::Json;

namespace {

const ChatTemplate& QwenTemplate() {
  static const ChatTemplate* t = [] {
    FILE* f = std::fopen(
        (std::string(QWENRT_TEST_DATA) + "/chat/qwen3.5-chat-template.jinja").c_str(), "rb");
    if (f == nullptr) __builtin_trap();
    std::string src;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) src.append(buf, n);
    std::fclose(f);
    return new ChatTemplate(std::move(ChatTemplate::Parse(src).value()));
  }();
  return *t;
}

const json& FixedConversation() {
  static const json* c = new json(*ParseRequestJson(R"({
    "messages": [
      {"role": "system", "content": "You are terse."},
      {"role": "user", "content": "What is the weather in Paris? <think>no</think>"},
      {"role": "assistant", "content": "", "reasoning_content": "Call the tool.",
       "tool_calls": [{"type": "function", "function": {"name": "get_weather",
                       "arguments": {"city": "Paris", "days": [1, 2]}}}]},
      {"role": "tool", "content": "{\"temp\": 21}"},
      {"role": "user", "content": "Thanks! \u00e9\u4e2d"}
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
  })",
                                                    "the fixed conversation"));
  return *c;
}

void Render(const ChatTemplate& t, const json& conv) {
  for (int variant = 0; variant < 2; ++variant) {
    StatusOr<std::string> out =
        t.RenderChat(conv.value("messages", json::array()), conv.value("tools", json()),
                     /*add_generation_prompt=*/variant == 0,
                     variant == 0 ? std::optional<bool>() : std::optional<bool>(false));
    // Messages (a template's raise_exception text) and output are the template engine's
    // contract (issue 14 items 17-18, owned there); this target checks crashes, UB and limits.
    (void)out;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  if (in.substr(0, 2) == "J:") {
    const std::string_view text = in.substr(2);
    StatusOr<json> parsed = ParseRequestJson(text, "fuzz input");  // what the C API does
    if (!parsed.ok() || !parsed->is_object()) return 0;
    json conv = std::move(parsed).value();
    Render(QwenTemplate(), conv);  // an exception escaping RenderChat is a finding
    return 0;
  }
  StatusOr<ChatTemplate> t = ChatTemplate::Parse(std::string(in));
  if (!t.ok()) return 0;
  Render(*t, FixedConversation());
  return 0;
}
