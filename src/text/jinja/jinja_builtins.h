// Built-in behaviour of template values, shared by the evaluator and the filters: the object
// protocol (attribute and item access, slicing, iteration, Python methods of str/dict/list) and
// Jinja2's filters and tests. Errors carry the text Jinja2/Python would give, without location;
// the evaluator adds the line and column.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "text/jinja/jinja_value.h"

namespace qwenrt::jinja {

// Every builtin charges the active work budget (jinja_budget.h) for what it touches and checks
// the size of a string or list against TemplateLimits before building it, so a hostile template
// cannot make one call run for long or allocate much beyond the limits.

// Work units for touching `v` shallowly: its bytes (strings) or kCostPerItem per element.
uint64_t ShallowCost(const Value& v);
// True when `a` and `b` share one string, list or dict (a builtin returned its input).
bool SameObject(const Value& a, const Value& b);

// ---- object protocol (jinja_methods.cpp) ----

// `obj.name` as Jinja2's `environment.getattr`: Python attribute first (bound str/dict/list
// methods, object attributes), then item lookup. A missing attribute is an Undefined value
// carrying Jinja2's message; access on an undefined `obj` is an error.
StatusOr<Value> GetAttr(const Value& obj, std::string_view name);
// `obj[key]` as Jinja2's `environment.getitem`: item lookup first, then attribute for string keys.
StatusOr<Value> GetItem(const Value& obj, const Value& key);
// `obj[start:stop:step]` for lists, tuples and strings (code points), with Python semantics.
// Null pointers mean omitted bounds.
StatusOr<Value> Slice(const Value& obj, const Value* start, const Value* stop, const Value* step);
// The items `for x in v` visits: list items, dict keys, string code points; undefined is empty.
StatusOr<std::vector<Value>> Iterate(const Value& v);
// Jinja2's "attribute" argument of filters (`map(attribute='a.b')`): dotted path, integer parts
// index lists.
StatusOr<Value> GetDotted(const Value& obj, std::string_view path);
// Python `len()` (code points for strings).
StatusOr<int64_t> Length(const Value& v);
// Python `x in container`.
StatusOr<bool> Contains(const Value& container, const Value& item);

// ---- filters and tests (jinja_filters.cpp) ----

// Applies filter / test `name` (an unknown name is an error: "No filter named 'x'.").
StatusOr<Value> CallFilter(std::string_view name, const Value& operand, const CallArgs& args);
StatusOr<bool> CallTest(std::string_view name, const Value& operand, const CallArgs& args);
bool HasFilter(std::string_view name);
// Jinja2 has the filter, whether or not this engine implements it (unimplemented ones are a
// runtime error when reached; names Jinja2 does not know are a syntax error, as in Jinja2).
bool IsJinja2Filter(std::string_view name);
// Python's `fmt % args` for %s, %d/%i, %r and %%. `strict_count`: leftover arguments are an error
// (a tuple operand); Python skips that check when the operand is a list or dict.
StatusOr<Value> PercentFormat(const std::string& fmt, const std::vector<Value>& args,
                              bool strict_count);
bool HasTest(std::string_view name);

// Binds `args` to parameter `names` by position, then by keyword; unbound parameters are left
// undefined. Too many positional or unknown keyword arguments are errors naming `fname`.
Status BindArgs(std::string_view fname, const CallArgs& args,
                std::initializer_list<std::string_view> names, std::vector<Value>* out);

}  // namespace qwenrt::jinja
