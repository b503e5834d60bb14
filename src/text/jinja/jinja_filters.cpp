// Jinja2's built-in filters and tests (see jinja_builtins.h), with Hugging Face's `tojson`
// (plain `json.dumps`, non-ASCII kept). Each filter follows Jinja2 3.1's implementation; the
// ones left out are listed in docs/chat-template.md.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "text/jinja/jinja_budget.h"
#include "text/jinja/jinja_builtins.h"
#include "text/jinja/jinja_ops.h"
#include "text/jinja/jinja_string.h"

namespace qwenrt::jinja {
namespace {

Status CheckSize(const std::string& s) { return CheckStringSize(s.size()); }

StatusOr<Value> FilterToJson(const Value& v, const CallArgs& args) {
  std::vector<Value> a;
  QWENRT_RETURN_IF_ERROR(
      BindArgs("tojson", args, {"indent", "ensure_ascii", "separators", "sort_keys"}, &a));
  JsonOptions opts;
  if (a[0].is_int()) {
    opts.indent = static_cast<int>(std::clamp<int64_t>(a[0].AsInt(), 0, 64));
  } else if (!a[0].is_undefined() && !a[0].is_none()) {
    return InvalidArgument("tojson: indent must be an integer");
  }
  if (a[1].Truthy()) return InvalidArgument("tojson: ensure_ascii=True is not supported");
  if (a[2].is_list() && a[2].AsList().items.size() == 2 && a[2].AsList().items[0].is_string() &&
      a[2].AsList().items[1].is_string()) {
    opts.has_separators = true;
    opts.item_separator = a[2].AsList().items[0].AsString();
    opts.key_separator = a[2].AsList().items[1].AsString();
  } else if (!a[2].is_undefined() && !a[2].is_none()) {
    return InvalidArgument("tojson: separators must be a pair of strings");
  }
  opts.sort_keys = a[3].Truthy();
  std::string out;
  QWENRT_RETURN_IF_ERROR(AppendJson(v, opts, &out));
  QWENRT_RETURN_IF_ERROR(CheckSize(out));
  return Value::String(std::move(out));
}

StatusOr<Value> FilterInt(const Value& v, const CallArgs& args) {
  std::vector<Value> a;
  QWENRT_RETURN_IF_ERROR(BindArgs("int", args, {"default", "base"}, &a));
  const Value fallback = a[0].is_undefined() ? Value::Int(0) : a[0];
  const int base = a[1].is_int() ? static_cast<int>(a[1].AsInt()) : 10;
  if (v.is_int()) return v;
  if (v.is_bool()) return Value::Int(v.AsBool());
  if (v.is_float()) {
    if (!std::isfinite(v.AsFloat()) || std::fabs(v.AsFloat()) > 9.2e18) return fallback;
    return Value::Int(static_cast<int64_t>(v.AsFloat()));
  }
  if (!v.is_string()) return fallback;
  std::string s = PyStrip(v.AsString(), std::nullopt, true, true);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  if (s.empty()) return fallback;
  errno = 0;
  char* end = nullptr;
  const long long i = std::strtoll(s.c_str(), &end, base);
  if (errno == 0 && end && *end == '\0') return Value::Int(i);
  // Jinja2 falls back to int(float(value)).
  const double d = std::strtod(s.c_str(), &end);
  if (end && *end == '\0' && std::isfinite(d) && std::fabs(d) < 9.2e18)
    return Value::Int(static_cast<int64_t>(d));
  return fallback;
}

StatusOr<Value> FilterFloat(const Value& v, const CallArgs& args) {
  std::vector<Value> a;
  QWENRT_RETURN_IF_ERROR(BindArgs("float", args, {"default"}, &a));
  const Value fallback = a[0].is_undefined() ? Value::Float(0.0) : a[0];
  if (v.is_number()) return Value::Float(v.ToDouble());
  if (!v.is_string()) return fallback;
  std::string s = PyStrip(v.AsString(), std::nullopt, true, true);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  if (s.empty()) return fallback;
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (end && *end == '\0') return Value::Float(d);
  return fallback;
}

StatusOr<Value> FilterRound(const Value& v, const CallArgs& args) {
  std::vector<Value> a;
  QWENRT_RETURN_IF_ERROR(BindArgs("round", args, {"precision", "method"}, &a));
  if (!v.is_number()) return InvalidArgument("round: expected a number, got {}", v.TypeName());
  const int64_t precision = a[0].is_int() ? a[0].AsInt() : 0;
  const std::string method = a[1].is_string() ? a[1].AsString() : "common";
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.ToDouble() * scale;
  double r = 0;
  if (method == "common") {
    if (v.is_int() || v.is_bool())
      return v.is_int() ? v : Value::Int(v.AsBool());  // round(int) is an int
    r = std::nearbyint(x);                             // Python's round(): ties to even
  } else if (method == "floor") {
    r = std::floor(x);
  } else if (method == "ceil") {
    r = std::ceil(x);
  } else {
    return InvalidArgument("method must be common, ceil or floor");
  }
  return Value::Float(r / scale);
}

// Sort key: the value itself or its `attribute`, lowercased strings unless case-sensitive.
StatusOr<Value> SortKey(const Value& v, const Value& attribute, bool case_sensitive) {
  Value key = v;
  if (attribute.is_string()) {
    QWENRT_ASSIGN_OR_RETURN(key, GetDotted(v, attribute.AsString()));
  }
  if (!case_sensitive && key.is_string()) return Value::String(PyLower(key.AsString()));
  return key;
}

StatusOr<std::vector<Value>> SortValues(std::vector<Value> items, const Value& attribute,
                                        bool case_sensitive, bool reverse) {
  std::vector<std::pair<Value, Value>> keyed;
  keyed.reserve(items.size());
  for (auto& it : items) {
    QWENRT_ASSIGN_OR_RETURN(Value k, SortKey(it, attribute, case_sensitive));
    keyed.emplace_back(std::move(k), std::move(it));
  }
  // Compare charges strings and lists; numbers compare for free, so charge n log n up front.
  uint64_t log_n = 1;
  while ((uint64_t{1} << log_n) < keyed.size()) ++log_n;
  QWENRT_RETURN_IF_ERROR(
      ChargeWork(SaturatingMul(SaturatingMul(keyed.size(), log_n), kCostPerItem)));
  Status err;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    if (!err.ok()) return false;  // stop comparing (the order no longer matters) once one failed
    auto c = Compare(reverse ? y.first : x.first, reverse ? x.first : y.first, "<");
    if (!c.ok()) {
      if (err.ok()) err = c.status();
      return false;
    }
    return *c < 0;
  });
  QWENRT_RETURN_IF_ERROR(err);
  std::vector<Value> out;
  out.reserve(keyed.size());
  for (auto& [k, v] : keyed) out.push_back(std::move(v));
  return out;
}

// select/reject/selectattr/rejectattr: args are [attr?] [test name] [test args...].
StatusOr<Value> FilterSelect(const Value& v, const CallArgs& args, bool by_attr, bool keep) {
  if (!v.Truthy()) return Value::MakeList({});  // Jinja2 checks `if seq:` before iterating
  QWENRT_ASSIGN_OR_RETURN(auto items, Iterate(v));
  size_t i = 0;
  std::string attr;
  if (by_attr) {
    if (args.args.empty() || !args.args[0].is_string())
      return InvalidArgument("selectattr: missing attribute name");
    attr = args.args[0].AsString();
    i = 1;
  }
  std::string test;
  if (i < args.args.size()) {
    if (!args.args[i].is_string()) return InvalidArgument("select: test name must be a string");
    test = args.args[i].AsString();
    ++i;
  }
  CallArgs test_args;
  test_args.args.assign(args.args.begin() + static_cast<std::ptrdiff_t>(i), args.args.end());
  test_args.kwargs = args.kwargs;
  std::vector<Value> out;
  for (const auto& item : items) {
    Value subject = item;
    if (by_attr) {
      QWENRT_ASSIGN_OR_RETURN(subject, GetDotted(item, attr));
    }
    bool pass = false;
    if (test.empty()) {
      pass = subject.Truthy();
    } else {
      QWENRT_ASSIGN_OR_RETURN(pass, CallTest(test, subject, test_args));
    }
    if (pass == keep) out.push_back(item);
  }
  return Value::MakeList(std::move(out));
}

StatusOr<Value> FilterMap(const Value& v, const CallArgs& args) {
  if (!v.Truthy()) return Value::MakeList({});  // Jinja2 checks `if value:` before iterating
  QWENRT_ASSIGN_OR_RETURN(auto items, Iterate(v));
  std::vector<Value> out;
  out.reserve(items.size());
  const Value* attribute = nullptr;
  const Value* fallback = nullptr;
  for (const auto& [k, val] : args.kwargs) {
    if (k == "attribute")
      attribute = &val;
    else if (k == "default")
      fallback = &val;
  }
  if (attribute) {
    if (!attribute->is_string()) return InvalidArgument("map: attribute must be a string");
    for (const auto& item : items) {
      QWENRT_ASSIGN_OR_RETURN(Value x, GetDotted(item, attribute->AsString()));
      if (x.is_undefined() && fallback) x = *fallback;
      out.push_back(std::move(x));
    }
    return Value::MakeList(std::move(out));
  }
  if (args.args.empty() || !args.args[0].is_string())
    return InvalidArgument("map: missing filter name");
  CallArgs fargs;
  fargs.args.assign(args.args.begin() + 1, args.args.end());
  fargs.kwargs = args.kwargs;
  for (const auto& item : items) {
    QWENRT_ASSIGN_OR_RETURN(Value x, CallFilter(args.args[0].AsString(), item, fargs));
    out.push_back(std::move(x));
  }
  return Value::MakeList(std::move(out));
}

StatusOr<Value> FilterJoin(const Value& v, const CallArgs& args) {
  std::vector<Value> a;
  QWENRT_RETURN_IF_ERROR(BindArgs("join", args, {"d", "attribute"}, &a));
  QWENRT_ASSIGN_OR_RETURN(auto items, Iterate(v));
  const std::string sep = a[0].is_undefined() ? "" : Str(a[0]);
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    if (a[1].is_string()) {
      QWENRT_ASSIGN_OR_RETURN(Value x, GetDotted(items[i], a[1].AsString()));
      AppendStr(x, &out);
    } else {
      AppendStr(items[i], &out);
    }
    QWENRT_RETURN_IF_ERROR(CheckSize(out));
  }
  return Value::String(std::move(out));
}

StatusOr<Value> FilterIndent(const Value& v, const CallArgs& args) {
  std::vector<Value> a;
  QWENRT_RETURN_IF_ERROR(BindArgs("indent", args, {"width", "first", "blank"}, &a));
  std::string pad = a[0].is_string() ? a[0].AsString()
                                     : std::string(static_cast<size_t>(std::clamp<int64_t>(
                                                       a[0].is_int() ? a[0].AsInt() : 4, 0, 256)),
                                                   ' ');
  const std::string s = Str(v);
  // The size first: a long pad times many lines must be refused before it is built.
  const uint64_t lines = 1 + static_cast<uint64_t>(std::count(s.begin(), s.end(), '\n'));
  const uint64_t bytes = SaturatingMul(lines, pad.size());
  QWENRT_RETURN_IF_ERROR(
      CheckStringSize(bytes > UINT64_MAX - s.size() ? UINT64_MAX : bytes + s.size()));
  std::string out;
  size_t start = 0;
  bool first_line = true;
  while (true) {
    const size_t nl = s.find('\n', start);
    const std::string line =
        s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    const bool indent = first_line ? a[1].Truthy() : (a[2].Truthy() || !line.empty());
    if (indent) out += pad;
    out += line;
    if (nl == std::string::npos) break;
    out.push_back('\n');
    start = nl + 1;
    first_line = false;
  }
  QWENRT_RETURN_IF_ERROR(CheckSize(out));
  return Value::String(std::move(out));
}

StatusOr<Value> FilterMinMax(const Value& v, const CallArgs& args, bool is_max) {
  std::vector<Value> a;
  QWENRT_RETURN_IF_ERROR(
      BindArgs(is_max ? "max" : "min", args, {"case_sensitive", "attribute"}, &a));
  QWENRT_ASSIGN_OR_RETURN(auto items, Iterate(v));
  if (items.empty())
    return Value::Undefined(is_max ? "No aggregated item, sequence was empty."
                                   : "No aggregated item, sequence was empty.");
  QWENRT_ASSIGN_OR_RETURN(auto sorted, SortValues(std::move(items), a[1], a[0].Truthy(), false));
  return is_max ? sorted.back() : sorted.front();
}

StatusOr<Value> FilterSum(const Value& v, const CallArgs& args) {
  std::vector<Value> a;
  QWENRT_RETURN_IF_ERROR(BindArgs("sum", args, {"attribute", "start"}, &a));
  QWENRT_ASSIGN_OR_RETURN(auto items, Iterate(v));
  int64_t isum = a[1].is_int() ? a[1].AsInt() : 0;
  double fsum = a[1].is_float() ? a[1].AsFloat() : 0.0;
  bool is_float = a[1].is_float();
  for (const auto& it : items) {
    Value x = it;
    if (a[0].is_string()) {
      QWENRT_ASSIGN_OR_RETURN(x, GetDotted(it, a[0].AsString()));
    }
    if (!x.is_number())
      return InvalidArgument("unsupported operand type(s) for +: 'int' and '{}'", x.TypeName());
    if (x.is_float()) is_float = true;
    if (x.is_float()) {
      fsum += x.AsFloat();
    } else if (__builtin_add_overflow(isum, x.is_bool() ? int64_t{x.AsBool()} : x.AsInt(), &isum)) {
      return InvalidArgument("integer overflow (values beyond 64 bits are not supported)");
    }
  }
  if (is_float) return Value::Float(fsum + static_cast<double>(isum));
  return Value::Int(isum);
}

}  // namespace

StatusOr<Value> PercentFormat(const std::string& f, const std::vector<Value>& args,
                              bool strict_count) {
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out.push_back(f[i]);
      continue;
    }
    if (i + 1 >= f.size()) return InvalidArgument("incomplete format");
    const char c = f[++i];
    if (c == '%') {
      out.push_back('%');
      continue;
    }
    if (c != 's' && c != 'd' && c != 'i' && c != 'r') {
      return InvalidArgument("format: unsupported conversion '%{}' (only %s, %d, %r, %%)",
                             std::string(1, c));
    }
    if (next >= args.size()) return InvalidArgument("not enough arguments for format string");
    const Value& x = args[next++];
    if (c == 'r') {
      out += Repr(x);
    } else if (c == 's') {
      AppendStr(x, &out);
    } else if (x.is_float()) {
      if (!std::isfinite(x.AsFloat()))
        return InvalidArgument("cannot convert float {} to integer", Str(x));
      // Python prints any integer; beyond int64 this engine refuses (the cast would be undefined).
      if (std::fabs(x.AsFloat()) >= 9.2e18)
        return InvalidArgument("%d format: integer overflow ({} is beyond 64 bits)", Str(x));
      out += std::to_string(static_cast<int64_t>(x.AsFloat()));
    } else if (x.is_number()) {
      out += std::to_string(x.is_int() ? x.AsInt() : static_cast<int64_t>(x.AsBool()));
    } else {
      return InvalidArgument("%{} format: a real number is required, not {}", std::string(1, c),
                             x.TypeName());
    }
    QWENRT_RETURN_IF_ERROR(CheckSize(out));
  }
  if (strict_count && next < args.size())
    return InvalidArgument("not all arguments converted during string formatting");
  return Value::String(std::move(out));
}

// Jinja2's `title` filter: upper-case the first character after each run of whitespace, '-',
// '(', '{', '[' or '<' (and at the start), lower-case the rest. Unlike Python's `str.title()`.
std::string JinjaTitle(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  bool word_start = true;
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t start = pos;
    const char32_t cp = DecodeUtf8(s, &pos);
    const bool sep = IsPySpace(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    if (sep) {
      out.append(s, start, pos - start);
      word_start = true;
      continue;
    }
    const std::string one = s.substr(start, pos - start);
    out += word_start ? PyUpper(one) : PyLower(one);
    word_start = false;
  }
  return out;
}

namespace {

StatusOr<Value> CallFilterImpl(std::string_view name, const Value& v, const CallArgs& args) {
  if (v.is_undefined() && (name == "int" || name == "float" || name == "abs" || name == "round" ||
                           name == "dictsort" || name == "attr")) {
    // These call int()/float()/abs()/... on the value, which Jinja2's Undefined refuses.
    return InvalidArgument("{}",
                           v.undefined_hint().empty() ? "value is undefined" : v.undefined_hint());
  }
  std::vector<Value> a;
  auto bind = [&](std::initializer_list<std::string_view> names) {
    return BindArgs(name, args, names, &a);
  };
  if (name == "tojson") return FilterToJson(v, args);
  if (name == "trim") {
    QWENRT_RETURN_IF_ERROR(bind({"chars"}));
    std::optional<std::string> chars;
    if (a[0].is_string()) chars = a[0].AsString();
    return Value::String(PyStrip(Str(v), chars, true, true));
  }
  if (name == "string" || name == "safe" || name == "e" || name == "escape" ||
      name == "forceescape") {
    QWENRT_RETURN_IF_ERROR(bind({}));
    if (name == "string" || name == "safe") return Value::String(Str(v));
    // HTML escaping (HF does not autoescape, but templates may call it explicitly).
    std::string out;
    for (char c : Str(v)) {
      switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&#34;";
          break;
        case '\'':
          out += "&#39;";
          break;
        default:
          out.push_back(c);
      }
      if (out.size() > ActiveLimits().max_value_bytes) return StringTooLarge(out.size());
    }
    return Value::String(std::move(out));
  }
  if (name == "items") {
    QWENRT_RETURN_IF_ERROR(bind({}));
    if (v.is_undefined()) return Value::MakeList({});
    if (!v.is_dict()) return InvalidArgument("Can only get item pairs from a mapping.");
    std::vector<Value> out;
    for (const auto& [k, val] : v.AsDict().items) out.push_back(Value::MakeList({k, val}, true));
    return Value::MakeList(std::move(out));
  }
  if (name == "length" || name == "count") {
    QWENRT_RETURN_IF_ERROR(bind({}));
    QWENRT_ASSIGN_OR_RETURN(int64_t n, Length(v));
    return Value::Int(n);
  }
  if (name == "join") return FilterJoin(v, args);
  if (name == "default" || name == "d") {
    QWENRT_RETURN_IF_ERROR(bind({"default_value", "boolean"}));
    const bool use_default = v.is_undefined() || (a[1].Truthy() && !v.Truthy());
    if (!use_default) return v;
    return a[0].is_undefined() ? Value::String("") : a[0];
  }
  if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") {
    QWENRT_RETURN_IF_ERROR(bind({}));
    const std::string s = Str(v);
    if (name == "upper") return Value::String(PyUpper(s));
    if (name == "lower") return Value::String(PyLower(s));
    if (name == "capitalize") return Value::String(PyCapitalize(s));
    return Value::String(JinjaTitle(s));
  }
  if (name == "list") {
    QWENRT_RETURN_IF_ERROR(bind({}));
    QWENRT_ASSIGN_OR_RETURN(auto items, Iterate(v));
    return Value::MakeList(std::move(items));
  }
  if (name == "first" || name == "last") {
    QWENRT_RETURN_IF_ERROR(bind({}));
    if (v.is_list()) {  // without copying the items (`messages|last` in a loop)
      const auto& items = v.AsList().items;
      if (items.empty())
        return Value::Undefined(fmt::format("No {} item, sequence was empty.", name));
      return name == "first" ? items.front() : items.back();
    }
    QWENRT_ASSIGN_OR_RETURN(auto items, Iterate(v));
    if (items.empty())
      return Value::Undefined(fmt::format("No {} item, sequence was empty.", name));
    return name == "first" ? items.front() : items.back();
  }
  if (name == "replace") {
    QWENRT_RETURN_IF_ERROR(bind({"old", "new", "count"}));
    const int64_t count = a[2].is_int() ? a[2].AsInt() : -1;
    const std::string s = Str(v), old_s = Str(a[0]), new_s = Str(a[1]);
    QWENRT_RETURN_IF_ERROR(CheckStringSize(PyReplaceSize(s, old_s, new_s, count)));
    return Value::String(PyReplace(s, old_s, new_s, count));
  }
  if (name == "int") return FilterInt(v, args);
  if (name == "float") return FilterFloat(v, args);
  if (name == "abs") {
    QWENRT_RETURN_IF_ERROR(bind({}));
    if (v.is_int() && v.AsInt() == INT64_MIN)
      return InvalidArgument("integer overflow (abs of the smallest int64)");
    if (v.is_int()) return Value::Int(v.AsInt() < 0 ? -v.AsInt() : v.AsInt());
    if (v.is_bool()) return Value::Int(v.AsBool());
    if (v.is_float()) return Value::Float(std::fabs(v.AsFloat()));
    return InvalidArgument("bad operand type for abs(): '{}'", v.TypeName());
  }
  if (name == "round") return FilterRound(v, args);
  if (name == "reverse") {
    QWENRT_RETURN_IF_ERROR(bind({}));
    if (v.is_string()) {
      const Value step = Value::Int(-1);
      return Slice(v, nullptr, nullptr, &step);
    }
    QWENRT_ASSIGN_OR_RETURN(auto items, Iterate(v));
    std::reverse(items.begin(), items.end());
    return Value::MakeList(std::move(items));
  }
  if (name == "sort") {
    QWENRT_RETURN_IF_ERROR(bind({"reverse", "case_sensitive", "attribute"}));
    QWENRT_ASSIGN_OR_RETURN(auto items, Iterate(v));
    QWENRT_ASSIGN_OR_RETURN(items,
                            SortValues(std::move(items), a[2], a[1].Truthy(), a[0].Truthy()));
    return Value::MakeList(std::move(items));
  }
  if (name == "dictsort") {
    QWENRT_RETURN_IF_ERROR(bind({"case_sensitive", "by", "reverse"}));
    if (!v.is_dict()) return InvalidArgument("dictsort: expected a mapping, got {}", v.TypeName());
    std::vector<Value> pairs;
    for (const auto& [k, val] : v.AsDict().items) pairs.push_back(Value::MakeList({k, val}, true));
    const bool by_value = a[1].is_string() && a[1].AsString() == "value";
    QWENRT_ASSIGN_OR_RETURN(pairs, SortValues(std::move(pairs), Value::String(by_value ? "1" : "0"),
                                              a[0].Truthy(), a[2].Truthy()));
    return Value::MakeList(std::move(pairs));
  }
  if (name == "unique") {
    QWENRT_RETURN_IF_ERROR(bind({"case_sensitive", "attribute"}));
    QWENRT_ASSIGN_OR_RETURN(auto items, Iterate(v));
    std::vector<Value> out, seen;
    for (const auto& it : items) {
      QWENRT_ASSIGN_OR_RETURN(Value key, SortKey(it, a[1], a[0].Truthy()));
      if (key.is_dict() || (key.is_list() && !key.AsList().is_tuple)) {
        return InvalidArgument("unhashable type: '{}'", key.TypeName());
      }
      const bool dup =
          std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return Equals(s, key); });
      QWENRT_RETURN_IF_ERROR(ChargeWork(0));  // quadratic: stop as soon as Equals ran out of budget
      if (dup) continue;
      seen.push_back(std::move(key));
      out.push_back(it);
    }
    return Value::MakeList(std::move(out));
  }
  if (name == "map") return FilterMap(v, args);
  if (name == "select") return FilterSelect(v, args, false, true);
  if (name == "reject") return FilterSelect(v, args, false, false);
  if (name == "selectattr") return FilterSelect(v, args, true, true);
  if (name == "rejectattr") return FilterSelect(v, args, true, false);
  if (name == "attr") {
    QWENRT_RETURN_IF_ERROR(bind({"name"}));
    return GetAttr(v, Str(a[0]));
  }
  if (name == "indent") return FilterIndent(v, args);
  if (name == "max" || name == "min") return FilterMinMax(v, args, name == "max");
  if (name == "sum") return FilterSum(v, args);
  if (name == "wordcount") {
    QWENRT_RETURN_IF_ERROR(bind({}));
    // Counted, not split: a split would build a string per word.
    const std::string s = Str(v);
    int64_t words = 0;
    bool in_word = false;
    for (size_t pos = 0; pos < s.size();) {
      const bool space = IsPySpace(DecodeUtf8(s, &pos));
      if (!space && !in_word) ++words;
      in_word = !space;
    }
    return Value::Int(words);
  }
  if (name == "format") {
    if (!args.kwargs.empty()) return InvalidArgument("format: keyword arguments are not supported");
    return PercentFormat(Str(v), args.args, /*strict_count=*/true);
  }
  if (IsJinja2Filter(name)) {
    return Unsupported(
        "the '{}' filter is not supported by qwenrt's Jinja subset (docs/chat-template.md)", name);
  }
  return InvalidArgument("No filter named '{}'.", name);
}

}  // namespace

StatusOr<Value> CallFilter(std::string_view name, const Value& v, const CallArgs& args) {
  // String operands and arguments are scanned or copied by every filter that takes them; lists
  // and dicts are charged where they are iterated (Iterate), so `messages|length` in a loop over
  // the messages stays linear. A new result is charged for being built (deeper work, such as
  // comparisons or the filters `map` applies, charges itself).
  uint64_t cost = kCostPerNode + (v.is_string() ? v.AsString().size() : 0);
  for (const Value& a : args.args) cost += a.is_string() ? a.AsString().size() : 0;
  QWENRT_RETURN_IF_ERROR(ChargeWork(cost));
  QWENRT_ASSIGN_OR_RETURN(Value r, CallFilterImpl(name, v, args));
  if (!SameObject(r, v)) QWENRT_RETURN_IF_ERROR(ChargeWork(ShallowCost(r)));
  return r;
}

bool IsJinja2Filter(std::string_view name) {
  static constexpr std::string_view kMissing[] = {
      "batch",     "center",   "filesizeformat", "groupby", "pprint",   "random", "slice",
      "striptags", "truncate", "urlencode",      "urlize",  "wordwrap", "xmlattr"};
  return HasFilter(name) ||
         std::find(std::begin(kMissing), std::end(kMissing), name) != std::end(kMissing);
}

bool HasFilter(std::string_view name) {
  static constexpr std::string_view kNames[] = {
      "tojson", "trim",       "string", "safe",   "e",          "escape",     "forceescape",
      "items",  "length",     "count",  "join",   "default",    "d",          "upper",
      "lower",  "capitalize", "title",  "list",   "first",      "last",       "replace",
      "int",    "float",      "abs",    "round",  "reverse",    "sort",       "dictsort",
      "unique", "map",        "select", "reject", "selectattr", "rejectattr", "attr",
      "indent", "max",        "min",    "sum",    "wordcount",  "format"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

StatusOr<bool> CallTest(std::string_view name, const Value& v, const CallArgs& args) {
  using K = Value::Kind;
  std::vector<Value> a;
  auto bind = [&](std::initializer_list<std::string_view> names) {
    return BindArgs(name, args, names, &a);
  };
  auto one_arg = [&]() -> Status { return bind({"other"}); };
  static constexpr std::string_view kNoArgTests[] = {
      "defined", "undefined", "none",   "boolean", "false",    "true",     "integer",
      "float",   "number",    "string", "mapping", "iterable", "sequence", "callable",
      "escaped", "lower",     "upper",  "odd",     "even"};
  if (std::find(std::begin(kNoArgTests), std::end(kNoArgTests), name) != std::end(kNoArgTests) &&
      (!args.args.empty() || !args.kwargs.empty())) {
    return InvalidArgument("test_{}() takes 1 positional argument but {} were given", name,
                           1 + args.args.size());
  }
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "false") return v.is_bool() && !v.AsBool();
  if (name == "true") return v.is_bool() && v.AsBool();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict();
  if (name == "iterable")
    return v.kind() == K::kList || v.kind() == K::kDict || v.kind() == K::kString ||
           v.is_undefined();
  if (name == "sequence") {  // len() and [] work: Undefined has both
    return v.kind() == K::kList || v.kind() == K::kDict || v.kind() == K::kString ||
           v.is_undefined();
  }
  if (name == "callable") return v.is_callable() || v.is_undefined();  // Undefined has __call__
  if (name == "escaped") return false;
  if (name == "lower" || name == "upper") {
    if (!v.is_string()) return false;
    QWENRT_RETURN_IF_ERROR(ChargeWork(2 * v.AsString().size()));
    return name == "lower" ? PyLower(v.AsString()) == v.AsString()
                           : PyUpper(v.AsString()) == v.AsString();
  }
  if (name == "odd" || name == "even" || name == "divisibleby") {
    // Jinja2 computes `value % 2 == 1` etc., so use Python's `%` (floats work, strings format).
    Value d = Value::Int(2);
    if (name == "divisibleby") {
      QWENRT_RETURN_IF_ERROR(bind({"num"}));
      d = a[0];
    }
    QWENRT_ASSIGN_OR_RETURN(Value m, BinaryOp("%", v, d));
    return Equals(m, Value::Int(name == "odd" ? 1 : 0));
  }
  if (name == "sameas") {
    QWENRT_RETURN_IF_ERROR(one_arg());
    if (v.kind() != a[0].kind()) return false;
    if (v.is_none() || v.is_bool() || v.is_undefined()) return Equals(v, a[0]);
    return Equals(v, a[0]) && (v.is_int() || v.is_string());  // identity approximated by value
  }
  if (name == "eq" || name == "equalto" || name == "==") {
    QWENRT_RETURN_IF_ERROR(one_arg());
    return Equals(v, a[0]);
  }
  if (name == "ne" || name == "!=") {
    QWENRT_RETURN_IF_ERROR(one_arg());
    return !Equals(v, a[0]);
  }
  if (name == "lt" || name == "lessthan" || name == "<" || name == "le" || name == "<=" ||
      name == "gt" || name == "greaterthan" || name == ">" || name == "ge" || name == ">=") {
    QWENRT_RETURN_IF_ERROR(one_arg());
    const bool lt = name == "lt" || name == "lessthan" || name == "<";
    const bool le = name == "le" || name == "<=";
    const bool gt = name == "gt" || name == "greaterthan" || name == ">";
    QWENRT_ASSIGN_OR_RETURN(int c, Compare(v, a[0], lt ? "<" : le ? "<=" : gt ? ">" : ">="));
    return lt ? c < 0 : le ? c <= 0 : gt ? c > 0 : c >= 0;
  }
  if (name == "in") {
    QWENRT_RETURN_IF_ERROR(bind({"seq"}));
    return Contains(a[0], v);
  }
  if (name == "filter") {
    QWENRT_RETURN_IF_ERROR(one_arg());
    return v.is_string() && HasFilter(v.AsString());
  }
  if (name == "test") {
    QWENRT_RETURN_IF_ERROR(one_arg());
    return v.is_string() && HasTest(v.AsString());
  }
  return InvalidArgument("No test named '{}'.", name);
}

bool HasTest(std::string_view name) {
  static constexpr std::string_view kNames[] = {
      "defined", "undefined", "none",   "boolean", "false",       "true",        "integer",
      "float",   "number",    "string", "mapping", "iterable",    "sequence",    "callable",
      "escaped", "lower",     "upper",  "odd",     "even",        "divisibleby", "sameas",
      "eq",      "equalto",   "==",     "ne",      "!=",          "lt",          "lessthan",
      "<",       "le",        "<=",     "gt",      "greaterthan", ">",           "ge",
      ">=",      "in",        "filter", "test"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

}  // namespace qwenrt::jinja
