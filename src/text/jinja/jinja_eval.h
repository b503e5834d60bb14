// Evaluator of the chat-template engine: walks the AST of jinja_parser.h and renders text, with
// Jinja2's scoping (a `for` iteration and a macro call are scopes, `if` is not; namespaces are
// shared), its default `Undefined`, and the globals Hugging Face provides (`raise_exception`,
// `namespace`, `range`, `dict`, `strftime_now`). Hostile templates are bounded by RenderLimits.
#pragma once

#include <cstdint>
#include <string>

#include "text/jinja/jinja_parser.h"
#include "text/jinja/jinja_value.h"
#include "base/status.h"

namespace qwenrt::jinja {

struct RenderLimits {
  size_t max_output_bytes = 64u << 20;  // rendered text (and each macro's output)
  int64_t max_steps = 10'000'000;       // loop iterations + macro calls, in total
  int max_call_depth = 48;              // nested macro calls
  int max_eval_depth = 384;             // nested expression/statement evaluation (stack guard)
};

// Renders `tmpl` with top-level variables `context`. Errors are InvalidArgument; a template's own
// `raise_exception(msg)` yields exactly `msg` as the message, other runtime errors read
// "template error at line L, column C: <Jinja2's message>". Thread-safe for concurrent calls on
// one Template (the AST is read-only).
StatusOr<std::string> RenderTemplate(const Template& tmpl, const Dict& context,
                                     const RenderLimits& limits = RenderLimits());

}  // namespace qwenrt::jinja
