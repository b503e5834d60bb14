// Qwen3.5's tool-call markup (docs/spec/tokenizer-and-chat.md §6.8): the text between
// `<tool_call>` and `</tool_call>` is
//   <function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...</function>
// Parsed into a ToolCall whose argument values are typed by the tool's JSON schema.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "chat/messages.h"
#include "text/json.h"

namespace qwenrt {

// nullopt when `block` is not that markup. `tools` (an OpenAI-format array, or null) types each
// VALUE: "string" parameters are kept verbatim, others parsed as JSON (True/False/None as Python
// spells them), falling back to the verbatim text.
std::optional<ToolCall> ParseToolCall(std::string_view block, const Json& tools);

// The JSON a reply streams for one block: {"name": NAME, "arguments": {...}}, or for a block that
// does not parse {"name": "", "arguments": {}, "raw": TEXT}. Invalid UTF-8 is replaced.
std::string ToolCallJson(std::string_view block, const Json& tools = nullptr);

}  // namespace qwenrt
