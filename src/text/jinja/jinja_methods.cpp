// Object protocol of template values (see jinja_builtins.h): attribute/item access, slicing,
// iteration, `len`, `in`, and the Python methods of str, dict and list that templates call.
// Mutating methods (`append`, `update`, ...) are refused as Hugging Face's sandbox refuses them.
#include <algorithm>
#include <charconv>
#include <cmath>

#include "text/jinja/jinja_budget.h"
#include "text/jinja/jinja_builtins.h"
#include "text/jinja/jinja_string.h"

namespace qwenrt::jinja {

uint64_t ShallowCost(const Value& v) {
  if (v.is_string()) return v.AsString().size();
  if (v.is_list()) return SaturatingMul(v.AsList().items.size(), kCostPerItem);
  if (v.is_dict()) return SaturatingMul(v.AsDict().items.size(), kCostPerItem);
  return 0;
}

bool SameObject(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  if (a.is_string()) return &a.AsString() == &b.AsString();
  if (a.is_list()) return &a.AsList() == &b.AsList();
  if (a.is_dict()) return &a.AsDict() == &b.AsDict();
  return false;
}

Status BindArgs(std::string_view fname, const CallArgs& args,
                std::initializer_list<std::string_view> names, std::vector<Value>* out) {
  out->assign(names.size(), Value());
  if (args.args.size() > names.size()) {
    return InvalidArgument("{}() takes at most {} argument(s) ({} given)", fname, names.size(),
                           args.args.size());
  }
  for (size_t i = 0; i < args.args.size(); ++i) (*out)[i] = args.args[i];
  for (const auto& [key, value] : args.kwargs) {
    size_t i = 0;
    for (auto n : names) {
      if (n == key) break;
      ++i;
    }
    if (i == names.size())
      return InvalidArgument("{}() got an unexpected keyword argument '{}'", fname, key);
    if (i < args.args.size())
      return InvalidArgument("{}() got multiple values for argument '{}'", fname, key);
    (*out)[i] = value;
  }
  return OkStatus();
}

namespace {

std::string ObjectTypeRepr(const Value& obj) {
  if (obj.is_none()) return "None";
  return std::string(obj.TypeName()) + " object";
}

Value MissingAttr(const Value& obj, std::string_view name) {
  if (obj.is_none()) return Value::Undefined(fmt::format("'None' has no attribute '{}'", name));
  return Value::Undefined(fmt::format("'{}' has no attribute '{}'", ObjectTypeRepr(obj), name));
}

Value MissingItem(const Value& obj, const Value& key) {
  if (key.is_string()) return MissingAttr(obj, key.AsString());
  return Value::Undefined(fmt::format("{} has no element {}", ObjectTypeRepr(obj), Repr(key)));
}

StatusOr<std::optional<std::string>> OptString(const Value& v, std::string_view what) {
  if (v.is_undefined() || v.is_none()) return std::optional<std::string>();
  if (!v.is_string()) return InvalidArgument("{} arg must be None or str", what);
  return std::optional<std::string>(v.AsString());
}

StatusOr<int64_t> OptInt(const Value& v, int64_t fallback, std::string_view what) {
  if (v.is_undefined() || v.is_none()) return fallback;
  if (v.is_int()) return v.AsInt();
  if (v.is_bool()) return static_cast<int64_t>(v.AsBool());
  return InvalidArgument("'{}' object cannot be interpreted as an integer ({})", v.TypeName(),
                         what);
}

// Byte offset of code point `i` of `s` (0 <= i <= count; i == count gives s.size()), found by a
// scan instead of an offsets table, which for a 16 MB string would take 128 MB.
size_t CodePointOffset(std::string_view s, size_t i) {
  if (IsAscii(s)) return std::min(i, s.size());
  size_t pos = 0;
  for (size_t k = 0; k < i && pos < s.size(); ++k) DecodeUtf8(s, &pos);
  return pos;
}

Value StringList(std::vector<std::string> parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (auto& p : parts) items.push_back(Value::String(std::move(p)));
  return Value::MakeList(std::move(items));
}

// Python's start/end arguments of find/count/startswith, resolved to code-point indices.
StatusOr<std::string_view> Window(const std::string& s, const Value& start, const Value& end,
                                  size_t* offset_cp) {
  const int64_t n = static_cast<int64_t>(CodePointCount(s));
  QWENRT_ASSIGN_OR_RETURN(int64_t b, OptInt(start, 0, "start"));
  QWENRT_ASSIGN_OR_RETURN(int64_t e, OptInt(end, n, "end"));
  if (b < 0) b = std::max<int64_t>(0, b + n);
  if (e < 0) e = std::max<int64_t>(0, e + n);
  b = std::min(b, n);
  e = std::min(e, n);
  if (e < b) e = b;
  *offset_cp = static_cast<size_t>(b);
  const size_t from = CodePointOffset(s, static_cast<size_t>(b));
  const size_t to = CodePointOffset(s, static_cast<size_t>(e));
  return std::string_view(s).substr(from, to - from);
}

// Minimal `str.format`: `{}`, `{0}`, `{name}`, `{{`, `}}`; format specs are refused.
StatusOr<Value> PyFormat(const std::string& fmt_s, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt_s.size(); ++i) {
    const char c = fmt_s[i];
    if (c == '}') {
      if (i + 1 < fmt_s.size() && fmt_s[i + 1] == '}')
        ++i;
      else
        return InvalidArgument("Single '}}' encountered in format string");
      out.push_back('}');
      continue;
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    if (i + 1 < fmt_s.size() && fmt_s[i + 1] == '{') {
      out.push_back('{');
      ++i;
      continue;
    }
    const size_t close = fmt_s.find('}', i);
    if (close == std::string::npos)
      return InvalidArgument("Single '{{' encountered in format string");
    const std::string field = fmt_s.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!.[") != std::string::npos) {
      return InvalidArgument("str.format: format specs and conversions are not supported ('{}')",
                             field);
    }
    const Value* v = nullptr;
    if (field.empty() ||
        std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
      size_t idx = auto_index;
      if (field.empty()) {
        ++auto_index;
      } else if (std::from_chars(field.data(), field.data() + field.size(), idx).ec !=
                 std::errc()) {
        return InvalidArgument("Replacement index {} out of range for positional args tuple",
                               field);
      }
      if (idx >= args.args.size())
        return InvalidArgument("Replacement index {} out of range for positional args tuple", idx);
      v = &args.args[idx];
    } else {
      for (const auto& [k, val] : args.kwargs) {
        if (k == field) v = &val;
      }
      if (!v) return InvalidArgument("KeyError: '{}'", field);
    }
    AppendStr(*v, &out);
    QWENRT_RETURN_IF_ERROR(CheckStringSize(out.size()));
    i = close;
  }
  return Value::String(std::move(out));
}

StatusOr<Value> StringMethod(const std::string& s, std::string_view name, const CallArgs& args) {
  std::vector<Value> a;
  auto bind = [&](std::initializer_list<std::string_view> names) {
    return BindArgs(name, args, names, &a);
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    QWENRT_RETURN_IF_ERROR(bind({"chars"}));
    QWENRT_ASSIGN_OR_RETURN(auto chars, OptString(a[0], name));
    return Value::String(PyStrip(s, chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    QWENRT_RETURN_IF_ERROR(bind({"sep", "maxsplit"}));
    QWENRT_ASSIGN_OR_RETURN(auto sep, OptString(a[0], "sep"));
    QWENRT_ASSIGN_OR_RETURN(int64_t maxsplit, OptInt(a[1], -1, "maxsplit"));
    if (sep && sep->empty()) return InvalidArgument("empty separator");
    // At most max_list_items + 1 parts are built: that many means the whole split is too large.
    const auto max_items = static_cast<int64_t>(ActiveLimits().max_list_items);
    const int64_t capped = maxsplit < 0 || maxsplit > max_items ? max_items : maxsplit;
    std::vector<std::string> parts =
        name == "split" ? PySplit(s, sep, capped) : PyRSplit(s, sep, capped);
    QWENRT_RETURN_IF_ERROR(CheckListSize(parts.size()));
    return StringList(std::move(parts));
  }
  if (name == "splitlines") {
    QWENRT_RETURN_IF_ERROR(bind({"keepends"}));
    std::vector<std::string> lines;
    std::string cur;
    size_t pos = 0;
    while (pos < s.size()) {
      const size_t start = pos;
      const char32_t cp = DecodeUtf8(s, &pos);
      const bool brk = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C ||
                       cp == 0x1D || cp == 0x1E || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
      if (!brk) {
        cur.append(s, start, pos - start);
        continue;
      }
      if (cp == '\r' && pos < s.size() && s[pos] == '\n') ++pos;
      if (a[0].Truthy()) cur.append(s, start, pos - start);
      lines.push_back(std::move(cur));
      cur.clear();
      QWENRT_RETURN_IF_ERROR(CheckListSize(lines.size()));
    }
    if (!cur.empty()) lines.push_back(std::move(cur));
    return StringList(std::move(lines));
  }
  if (name == "startswith" || name == "endswith") {
    QWENRT_RETURN_IF_ERROR(bind({"prefix", "start", "end"}));
    size_t off = 0;
    QWENRT_ASSIGN_OR_RETURN(std::string_view w, Window(s, a[1], a[2], &off));
    std::vector<Value> cands;
    if (a[0].is_list() && a[0].AsList().is_tuple)
      cands = a[0].AsList().items;
    else
      cands.push_back(a[0]);
    for (const auto& c : cands) {
      if (!c.is_string()) {
        return InvalidArgument("{} first arg must be str or a tuple of str, not {}", name,
                               c.TypeName());
      }
      const std::string& p = c.AsString();
      if (p.size() <= w.size() && (name == "startswith" ? w.substr(0, p.size()) == p
                                                        : w.substr(w.size() - p.size()) == p)) {
        return Value::Bool(true);
      }
    }
    return Value::Bool(false);
  }
  if (name == "replace") {
    QWENRT_RETURN_IF_ERROR(bind({"old", "new", "count"}));
    if (!a[0].is_string() || !a[1].is_string())
      return InvalidArgument("replace() arguments must be str");
    QWENRT_ASSIGN_OR_RETURN(int64_t count, OptInt(a[2], -1, "count"));
    const uint64_t bytes = PyReplaceSize(s, a[0].AsString(), a[1].AsString(), count);
    QWENRT_RETURN_IF_ERROR(CheckStringSize(bytes));
    QWENRT_RETURN_IF_ERROR(ChargeWork(bytes));
    return Value::String(PyReplace(s, a[0].AsString(), a[1].AsString(), count));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    QWENRT_RETURN_IF_ERROR(bind({"sub", "start", "end"}));
    if (!a[0].is_string()) return InvalidArgument("must be str, not {}", a[0].TypeName());
    size_t off = 0;
    QWENRT_ASSIGN_OR_RETURN(std::string_view w, Window(s, a[1], a[2], &off));
    const std::string& sub = a[0].AsString();
    if (name == "count") {
      if (sub.empty()) return Value::Int(static_cast<int64_t>(CodePointCount(w) + 1));
      int64_t n = 0;
      for (size_t p = PyFind(w, sub, 0); p != std::string_view::npos;
           p = PyFind(w, sub, p + sub.size()))
        ++n;
      return Value::Int(n);
    }
    const size_t hit = (name == "find" || name == "index") ? PyFind(w, sub, 0) : PyRFind(w, sub);
    if (hit == std::string_view::npos) {
      if (name == "index" || name == "rindex") return InvalidArgument("substring not found");
      return Value::Int(-1);
    }
    return Value::Int(static_cast<int64_t>(off + CodePointCount(w.substr(0, hit))));
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
    QWENRT_RETURN_IF_ERROR(bind({}));
    if (name == "upper") return Value::String(PyUpper(s));
    if (name == "lower") return Value::String(PyLower(s));
    if (name == "title") return Value::String(PyTitle(s));
    return Value::String(PyCapitalize(s));
  }
  if (name == "join") {
    QWENRT_RETURN_IF_ERROR(bind({"iterable"}));
    QWENRT_ASSIGN_OR_RETURN(auto items, Iterate(a[0]));
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string()) {
        return InvalidArgument("sequence item {}: expected str instance, {} found", i,
                               items[i].TypeName());
      }
      if (i) out += s;
      out += items[i].AsString();
      QWENRT_RETURN_IF_ERROR(CheckStringSize(out.size()));
    }
    return Value::String(std::move(out));
  }
  if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" ||
      name == "isupper" || name == "islower") {
    QWENRT_RETURN_IF_ERROR(bind({}));
    if (name == "isupper" || name == "islower") {
      const std::string other = name == "isupper" ? PyLower(s) : PyUpper(s);
      const std::string same = name == "isupper" ? PyUpper(s) : PyLower(s);
      return Value::Bool(same == s && other != s);
    }
    if (s.empty()) return Value::Bool(false);
    size_t pos = 0;
    while (pos < s.size()) {
      const char32_t cp = DecodeUtf8(s, &pos);
      bool ok = false;
      if (name == "isspace")
        ok = IsPySpace(cp);
      else if (cp < 0x80) {
        const bool digit = cp >= '0' && cp <= '9';
        const bool alpha = (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
        ok = name == "isdigit" ? digit : (name == "isalpha" ? alpha : digit || alpha);
      } else {
        ok = name != "isdigit";  // non-ASCII: letters assumed (approximation, see docs)
      }
      if (!ok) return Value::Bool(false);
    }
    return Value::Bool(true);
  }
  if (name == "format") return PyFormat(s, args);
  return InvalidArgument("'str object' has no attribute '{}'", name);
}

StatusOr<Value> DictMethod(const Value& self, std::string_view name, const CallArgs& args) {
  std::vector<Value> a;
  const Dict& d = self.AsDict();
  if (name == "get") {
    QWENRT_RETURN_IF_ERROR(BindArgs(name, args, {"key", "default"}, &a));
    const Value* v = d.Find(a[0]);
    if (v) return *v;
    return a[1].is_undefined() ? Value::None() : a[1];
  }
  QWENRT_RETURN_IF_ERROR(BindArgs(name, args, {}, &a));
  std::vector<Value> out;
  out.reserve(d.items.size());
  for (const auto& [k, v] : d.items) {
    if (name == "keys")
      out.push_back(k);
    else if (name == "values")
      out.push_back(v);
    else
      out.push_back(Value::MakeList({k, v}, /*is_tuple=*/true));
  }
  return Value::MakeList(std::move(out));
}

StatusOr<Value> ListMethod(const Value& self, std::string_view name, const CallArgs& args) {
  std::vector<Value> a;
  QWENRT_RETURN_IF_ERROR(BindArgs(name, args, {"value"}, &a));
  const auto& items = self.AsList().items;
  int64_t count = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!Equals(items[i], a[0])) continue;  // Equals charges each comparison
    if (name == "index") return Value::Int(static_cast<int64_t>(i));
    ++count;
  }
  QWENRT_RETURN_IF_ERROR(ChargeWork(0));  // a miss may be the budget running out
  if (name == "index") return InvalidArgument("{} is not in list", Repr(a[0]));
  return Value::Int(count);
}

bool IsStringMethod(std::string_view n) {
  static constexpr std::string_view kNames[] = {
      "strip",    "lstrip",  "rstrip",  "split",      "rsplit", "splitlines", "startswith",
      "endswith", "replace", "find",    "rfind",      "index",  "rindex",     "count",
      "upper",    "lower",   "title",   "capitalize", "join",   "isdigit",    "isalpha",
      "isalnum",  "isspace", "isupper", "islower",    "format"};
  return std::find(std::begin(kNames), std::end(kNames), n) != std::end(kNames);
}

bool IsMutatingMethod(std::string_view n) {
  static constexpr std::string_view kNames[] = {"append", "extend",     "insert", "pop",
                                                "remove", "clear",      "sort",   "reverse",
                                                "update", "setdefault", "popitem"};
  return std::find(std::begin(kNames), std::end(kNames), n) != std::end(kNames);
}

// A bound method of `obj`, or nullopt when `obj` has no method `name`.
std::optional<Value> BoundMethod(const Value& obj, std::string_view name) {
  const std::string method(name);
  // The receiver is held by the callable (for its depth); strings are shared, so holding one is
  // O(1). A method call is charged its receiver's bytes or items plus its result's.
  if (obj.is_string() && IsStringMethod(name)) {
    return Value::MakeCallable(
        "str." + method,
        [obj, method](CallArgs& args) -> StatusOr<Value> {
          QWENRT_RETURN_IF_ERROR(ChargeWork(ShallowCost(obj)));
          QWENRT_ASSIGN_OR_RETURN(Value r, StringMethod(obj.AsString(), method, args));
          if (!SameObject(r, obj)) QWENRT_RETURN_IF_ERROR(ChargeWork(ShallowCost(r)));
          return r;
        },
        &obj);
  }
  if (obj.is_dict() && (name == "get" || name == "keys" || name == "values" || name == "items")) {
    return Value::MakeCallable(
        "dict." + method,
        [obj, method](CallArgs& args) -> StatusOr<Value> {
          QWENRT_ASSIGN_OR_RETURN(Value r, DictMethod(obj, method, args));
          if (method != "get")
            QWENRT_RETURN_IF_ERROR(ChargeWork(ShallowCost(r)));  // get returns a stored value
          return r;
        },
        &obj);
  }
  if (obj.is_list() && (name == "index" || name == "count")) {
    return Value::MakeCallable(
        "list." + method, [obj, method](CallArgs& args) { return ListMethod(obj, method, args); },
        &obj);
  }
  if ((obj.is_list() || obj.is_dict()) && IsMutatingMethod(name)) {
    return Value::MakeCallable(
        method, [type = std::string(obj.TypeName()), method](CallArgs&) -> StatusOr<Value> {
          return InvalidArgument("access to attribute '{}' of '{}' object is unsafe.", method,
                                 type);
        });
  }
  return std::nullopt;
}

Status UndefinedError(const Value& v) {
  if (v.undefined_hint().empty()) return InvalidArgument("value is undefined");
  return InvalidArgument("{}", v.undefined_hint());
}

}  // namespace

StatusOr<Value> GetAttr(const Value& obj, std::string_view name) {
  if (obj.is_undefined()) return UndefinedError(obj);
  if (obj.is_object()) {
    Value v = obj.AsObject().GetAttr(name);
    if (v.is_undefined() && v.undefined_hint().empty()) return MissingAttr(obj, name);
    return v;
  }
  if (auto m = BoundMethod(obj, name)) return *m;
  if (obj.is_dict()) {
    if (const Value* v = obj.AsDict().FindStr(name)) return *v;
  }
  return MissingAttr(obj, name);
}

StatusOr<Value> GetItem(const Value& obj, const Value& key) {
  if (obj.is_undefined()) return UndefinedError(obj);
  if (obj.is_dict()) {
    if (key.is_dict() || (key.is_list() && !key.AsList().is_tuple)) {
      return InvalidArgument("unhashable type: '{}'", key.TypeName());
    }
    if (const Value* v = obj.AsDict().Find(key)) return *v;
  } else if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.is_int() ? key.AsInt() : static_cast<int64_t>(key.AsBool());
    if (obj.is_list()) {
      const auto& items = obj.AsList().items;
      const auto n = static_cast<int64_t>(items.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return items[static_cast<size_t>(i)];
    } else {
      const std::string& s = obj.AsString();
      QWENRT_RETURN_IF_ERROR(ChargeWork(s.size()));
      const auto n = static_cast<int64_t>(CodePointCount(s));
      if (i < 0) i += n;
      if (i >= 0 && i < n) {
        size_t from = CodePointOffset(s, static_cast<size_t>(i));
        size_t to = from;
        DecodeUtf8(s, &to);
        return Value::String(s.substr(from, to - from));
      }
    }
  } else if (obj.is_object() && key.is_string()) {
    return GetAttr(obj, key.AsString());
  }
  if (key.is_string() && !obj.is_dict()) {
    if (auto m = BoundMethod(obj, key.AsString())) return *m;
  }
  return MissingItem(obj, key);
}

StatusOr<Value> Slice(const Value& obj, const Value* start, const Value* stop, const Value* step) {
  if (obj.is_undefined()) return UndefinedError(obj);
  if (!obj.is_list() && !obj.is_string()) {
    return InvalidArgument("'{}' object is not subscriptable", obj.TypeName());
  }
  const bool is_str = obj.is_string();
  // Strings are scanned for code points; list slices cost what they copy (charged below).
  if (is_str) QWENRT_RETURN_IF_ERROR(ChargeWork(obj.AsString().size()));
  std::vector<size_t> offs;  // code point offsets, for non-ASCII strings only
  int64_t n = 0;
  if (is_str) {
    if (IsAscii(obj.AsString())) {
      n = static_cast<int64_t>(obj.AsString().size());
    } else {
      offs = CodePointOffsets(obj.AsString());
      n = static_cast<int64_t>(offs.size()) - 1;
    }
  } else {
    n = static_cast<int64_t>(obj.AsList().items.size());
  }
  auto get = [](const Value* v, int64_t fallback) -> StatusOr<int64_t> {
    if (!v || v->is_none() || v->is_undefined()) return fallback;
    if (v->is_int()) return v->AsInt();
    if (v->is_bool()) return static_cast<int64_t>(v->AsBool());
    return InvalidArgument("slice indices must be integers or None");
  };
  QWENRT_ASSIGN_OR_RETURN(int64_t st, get(step, 1));
  if (st == 0) return InvalidArgument("slice step cannot be zero");
  // Python's PySlice_AdjustIndices.
  QWENRT_ASSIGN_OR_RETURN(int64_t b, get(start, st > 0 ? 0 : n - 1));
  QWENRT_ASSIGN_OR_RETURN(int64_t e, get(stop, st > 0 ? n : -1 - n));
  auto adjust = [&](int64_t x) {
    if (x < 0) {
      x += n;
      if (x < 0) x = st < 0 ? -1 : 0;
    } else if (x >= n) {
      x = st < 0 ? n - 1 : n;
    }
    return x;
  };
  b = adjust(b);
  e = adjust(e);
  // The count first (a step near INT64_MAX would overflow `i += step`); -1 <= b, e <= n.
  const uint64_t ust = st > 0 ? static_cast<uint64_t>(st) : 0 - static_cast<uint64_t>(st);
  uint64_t count = 0;
  if (st > 0 && b < e) count = static_cast<uint64_t>(e - b - 1) / ust + 1;
  if (st < 0 && b > e) count = static_cast<uint64_t>(b - e - 1) / ust + 1;
  auto index = [&](uint64_t k) {
    return static_cast<size_t>(st > 0 ? static_cast<uint64_t>(b) + k * ust
                                      : static_cast<uint64_t>(b) - k * ust);
  };
  if (is_str) {
    const std::string& s = obj.AsString();
    std::string out;
    out.reserve(std::min<uint64_t>(s.size(), count * 4));
    for (uint64_t k = 0; k < count; ++k) {
      const size_t i = index(k);
      if (offs.empty())
        out.push_back(s[i]);
      else
        out.append(s, offs[i], offs[i + 1] - offs[i]);
    }
    return Value::String(std::move(out));
  }
  QWENRT_RETURN_IF_ERROR(ChargeWork(SaturatingMul(count, kCostPerItem)));
  std::vector<Value> out;
  out.reserve(count);
  for (uint64_t k = 0; k < count; ++k) out.push_back(obj.AsList().items[index(k)]);
  return Value::MakeList(std::move(out), obj.AsList().is_tuple);
}

StatusOr<std::vector<Value>> Iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return std::vector<Value>();
    case Value::Kind::kList:
      QWENRT_RETURN_IF_ERROR(ChargeWork(ShallowCost(v)));
      return v.AsList().items;
    case Value::Kind::kDict: {
      QWENRT_RETURN_IF_ERROR(ChargeWork(ShallowCost(v)));
      std::vector<Value> keys;
      keys.reserve(v.AsDict().items.size());
      for (const auto& [k, val] : v.AsDict().items) keys.push_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      const std::string& s = v.AsString();
      const size_t n = CodePointCount(s);
      QWENRT_RETURN_IF_ERROR(CheckListSize(n));
      QWENRT_RETURN_IF_ERROR(ChargeWork(s.size() + SaturatingMul(n, kCostPerItem)));
      std::vector<Value> chars;
      chars.reserve(n);
      size_t pos = 0;
      while (pos < s.size()) {
        const size_t start = pos;
        DecodeUtf8(s, &pos);
        chars.push_back(Value::String(s.substr(start, pos - start)));
      }
      return chars;
    }
    default:
      return InvalidArgument("'{}' object is not iterable", v.TypeName());
  }
}

StatusOr<Value> GetDotted(const Value& obj, std::string_view path) {
  Value cur = obj;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string_view part =
        path.substr(start, dot == std::string_view::npos ? path.npos : dot - start);
    Value key = Value::String(std::string(part));
    int64_t index = 0;
    if (!part.empty() &&
        std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
        std::from_chars(part.data(), part.data() + part.size(), index).ec == std::errc()) {
      key = Value::Int(index);  // digits beyond int64 stay a string key, as no list is that long
    }
    QWENRT_ASSIGN_OR_RETURN(cur, GetItem(cur, key));
    if (dot == std::string_view::npos) return cur;
    start = dot + 1;
  }
}

StatusOr<int64_t> Length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return 0;
    case Value::Kind::kString:
      QWENRT_RETURN_IF_ERROR(ChargeWork(v.AsString().size()));
      return static_cast<int64_t>(CodePointCount(v.AsString()));
    case Value::Kind::kList:
      return static_cast<int64_t>(v.AsList().items.size());
    case Value::Kind::kDict:
      return static_cast<int64_t>(v.AsDict().items.size());
    default:
      return InvalidArgument("object of type '{}' has no len()", v.TypeName());
  }
}

StatusOr<bool> Contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined:
      return false;
    case Value::Kind::kString:
      if (!item.is_string()) {
        return InvalidArgument("'in <string>' requires string as left operand, not {}",
                               item.TypeName());
      }
      QWENRT_RETURN_IF_ERROR(ChargeWork(container.AsString().size() + item.AsString().size()));
      return PyFind(container.AsString(), item.AsString(), 0) != std::string_view::npos;
    case Value::Kind::kList:
      for (const auto& e : container.AsList().items) {
        if (Equals(e, item)) return true;  // Equals charges each comparison
      }
      QWENRT_RETURN_IF_ERROR(ChargeWork(0));  // a false answer may be the budget running out
      return false;
    case Value::Kind::kDict:
      if (item.is_dict() || (item.is_list() && !item.AsList().is_tuple)) {
        return InvalidArgument("unhashable type: '{}'", item.TypeName());
      }
      return container.AsDict().Find(item) != nullptr;
    default:
      return InvalidArgument("argument of type '{}' is not iterable", container.TypeName());
  }
}

}  // namespace qwenrt::jinja
