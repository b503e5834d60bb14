// The tool-call grammar of tool_choice: Qwen3.5's markup (docs/spec/tokenizer-and-chat.md §6.5,
// parsed by chat/tool_call.h)
//   <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...</function>\n</tool_call>
// with one alternative per function and each VALUE following that parameter's JSON schema: a
// "string" parameter is written verbatim (free text without "</", or one of its enum / const
// strings), any other one as JSON (compiled by the JSON Schema front end). Parameters come in the
// schema's order, required ones always, optional ones skippable, no others. <tool_call> and
// </tool_call> are special tokens, spelled in the grammar by marker bytes (Grammar::SpecialToken),
// so the call opens and closes only with those tokens, as the reply stream recognises them.
//
// Exactness: every text the grammar accepts parses with ParseToolCall into arguments that
// validate against the function's parameters schema. The restrictions that make it so are sound
// (they refuse some valid calls, never accept an invalid one): JSON values never hold a raw '<'
// (a string writes it as \u003c; so "</parameter>" cannot end a value early), verbatim strings
// never hold "</". A keyword that cannot be enforced this way is an error naming it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "chat/constraint/grammar.h"
#include "text/json.h"

namespace qwenrt {

enum class ToolChoiceMode {
  kFree,      // tool calls are not constrained (the default: the model writes what it writes)
  kNone,      // no tool call: <tool_call> is never sampled
  kAuto,      // free text until the model opens <tool_call>; from there the call is constrained
  kRequired,  // the content is one or more tool calls, from its start
  kFunction,  // the content is one or more calls of `function`, from its start
};
const char* ToolChoiceModeName(ToolChoiceMode mode);  // "free", "none", "auto", ...

struct ToolChoice {
  ToolChoiceMode mode = ToolChoiceMode::kFree;
  std::string function;  // kFunction: the function's name
};

// The grammar of the content for kRequired / kFunction (up to two newlines, then calls separated
// by "\n"), and of the calls from <tool_call> on for kAuto (the matcher starts when the model
// samples <tool_call>). `tools`: OpenAI-format array ({"type": "function", "function": {name,
// parameters}} or the function object itself). `open` / `close`: the <tool_call> / </tool_call>
// token ids. Errors: InvalidArgument naming the tool and the parameter (and the schema keyword).
StatusOr<std::shared_ptr<const Grammar>> ToolCallGrammar(const Json& tools,
                                                         const ToolChoice& choice, int32_t open,
                                                         int32_t close,
                                                         const GrammarLimits& limits = {});

}  // namespace qwenrt
