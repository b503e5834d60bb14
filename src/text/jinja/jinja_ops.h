// Operators of the chat-template engine with Python semantics: arithmetic (`+ - * / // % **`),
// unary `-`/`+`, and comparisons (`== != < <= > >= in not in`). Errors carry Python's TypeError /
// ZeroDivisionError text; operations on undefined values report the undefined name.
#pragma once

#include <string_view>

#include "base/status.h"
#include "text/jinja/jinja_value.h"

namespace qwenrt::jinja {

StatusOr<Value> BinaryOp(std::string_view op, const Value& a, const Value& b);
StatusOr<Value> UnaryOp(std::string_view op, const Value& v);
StatusOr<bool> CompareOp(std::string_view op, const Value& a, const Value& b);

}  // namespace qwenrt::jinja
