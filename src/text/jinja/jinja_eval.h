// Evaluator of the chat-template engine: walks the AST of jinja_parser.h and renders text, with
// Jinja2's scoping (a `for` iteration and a macro call are scopes, `if` is not; namespaces are
// shared), its default `Undefined`, and the globals Hugging Face provides (`raise_exception`,
// `namespace`, `range`, `dict`, `strftime_now`). Hostile templates are bounded by TemplateLimits:
// the render installs a work Budget (jinja_budget.h) that every builtin charges.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "text/jinja/jinja_limits.h"
#include "text/jinja/jinja_parser.h"
#include "text/jinja/jinja_value.h"

namespace qwenrt::jinja {

// Renders `tmpl` with top-level variables `context`. Errors are InvalidArgument; a template's own
// `raise_exception(msg)` yields exactly `msg` as the message, other runtime errors read
// "template error at line L, column C: <Jinja2's message>". Thread-safe for concurrent calls on
// one Template (the AST is read-only). A limit reached is an InvalidArgument naming it
// ("template exceeded its work limit (max_cost = N units)", "... max_value_depth ...").
StatusOr<std::string> RenderTemplate(const Template& tmpl, const Dict& context,
                                     const TemplateLimits& limits = TemplateLimits());

}  // namespace qwenrt::jinja
