// Value model of the chat-template engine (see jinja_value.h): construction, Python equality and
// ordering, `str`/`repr`, `json.dumps`, and JSON conversion.
#include "text/jinja/jinja_value.h"

#include <algorithm>
#include <cmath>

#include "text/jinja/jinja_budget.h"
#include "text/jinja/jinja_string.h"

namespace qwenrt::jinja {

Status Object::SetAttr(std::string_view name, Value /*value*/) {
  return InvalidArgument("cannot assign attribute '{}' on a '{}' object", name, TypeName());
}

const Value* Dict::Find(const Value& key) const {
  for (const auto& [k, v] : items) {
    if (Equals(k, key)) return &v;
  }
  return nullptr;
}

const Value* Dict::FindStr(std::string_view key) const {
  if (!SpendWork(items.size())) return nullptr;
  for (const auto& [k, v] : items) {
    if (k.is_string() && k.AsString() == key) return &v;
  }
  return nullptr;
}

void Dict::Set(Value key, Value value) {
  // Linear, so building a dict of n keys is quadratic: Equals charges each comparison.
  for (auto& [k, v] : items) {
    if (Equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

Value Value::Undefined(std::string hint) {
  Value v;
  v.v_ = UndefinedT{std::move(hint)};
  return v;
}
Value Value::None() {
  Value v;
  v.v_ = NoneT{};
  return v;
}
Value Value::Bool(bool b) {
  Value v;
  v.v_ = b;
  return v;
}
Value Value::Int(int64_t i) {
  Value v;
  v.v_ = i;
  return v;
}
Value Value::Float(double d) {
  Value v;
  v.v_ = d;
  return v;
}
Value Value::String(std::string s) {
  Value v;
  v.v_ = std::make_shared<const std::string>(std::move(s));
  return v;
}
Value Value::MakeList(std::vector<Value> items, bool is_tuple) {
  int depth = 0;
  for (const Value& item : items) depth = std::max(depth, item.Depth());
  Value v;
  v.v_ = std::shared_ptr<const List>(
      std::make_shared<List>(List{std::move(items), is_tuple, depth + 1}));
  return v;
}
Value Value::MakeDict(Dict dict) {
  int depth = 0;
  for (const auto& [key, value] : dict.items) depth = std::max({depth, key.Depth(), value.Depth()});
  dict.depth = depth + 1;
  Value v;
  v.v_ = std::shared_ptr<const Dict>(std::make_shared<Dict>(std::move(dict)));
  return v;
}
Value Value::MakeCallable(std::string name, NativeFn fn, const Value* holds) {
  Value v;
  v.v_ = std::shared_ptr<const Callable>(std::make_shared<Callable>(
      Callable{std::move(name), std::move(fn), holds ? holds->Depth() + 1 : 1}));
  return v;
}
Value Value::MakeObject(std::shared_ptr<Object> object) {
  Value v;
  v.v_ = std::move(object);
  return v;
}

double Value::ToDouble() const {
  switch (kind()) {
    case Kind::kInt:
      return static_cast<double>(AsInt());
    case Kind::kFloat:
      return AsFloat();
    case Kind::kBool:
      return AsBool() ? 1.0 : 0.0;
    default:
      return 0.0;
  }
}

int Value::Depth() const {
  switch (kind()) {
    case Kind::kList:
      return AsList().depth;
    case Kind::kDict:
      return AsDict().depth;
    case Kind::kCallable:
      return AsCallable().depth;
    case Kind::kObject:
      return AsObject().Depth();
    default:
      return 0;
  }
}

bool Value::Truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return AsBool();
    case Kind::kInt:
      return AsInt() != 0;
    case Kind::kFloat:
      return AsFloat() != 0.0;
    case Kind::kString:
      return !AsString().empty();
    case Kind::kList:
      return !AsList().items.empty();
    case Kind::kDict:
      return !AsDict().items.empty();
    case Kind::kCallable:
    case Kind::kObject:
      return true;
  }
  return false;
}

const char* Value::TypeName() const {
  switch (kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return AsList().is_tuple ? "tuple" : "list";
    case Kind::kDict:
      return "dict";
    case Kind::kCallable:
      return "function";
    case Kind::kObject:
      return AsObject().TypeName();
  }
  return "object";
}

bool Equals(const Value& a, const Value& b) {
  using K = Value::Kind;
  // Charged before anything: `in`, `unique` and dict lookups are loops of Equals.
  if (!SpendWork(kCostPerItem)) return false;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.ToDouble() == b.ToDouble();
    const int64_t x = a.is_bool() ? (a.AsBool() ? 1 : 0) : a.AsInt();
    const int64_t y = b.is_bool() ? (b.AsBool() ? 1 : 0) : b.AsInt();
    return x == y;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::kUndefined:
    case K::kNone:
      return true;
    case K::kString: {
      const std::string& x = a.AsString();
      const std::string& y = b.AsString();
      if (x.size() != y.size()) return false;
      return SpendWork(x.size()) && x == y;
    }
    case K::kList: {
      const auto& x = a.AsList();
      const auto& y = b.AsList();
      if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
      if (&x == &y) return true;  // shared: a DAG compared with itself costs nothing
      for (size_t i = 0; i < x.items.size(); ++i) {
        if (!Equals(x.items[i], y.items[i])) return false;
      }
      return true;
    }
    case K::kDict: {
      const auto& x = a.AsDict();
      const auto& y = b.AsDict();
      if (x.items.size() != y.items.size()) return false;
      if (&x == &y) return true;
      for (const auto& [k, v] : x.items) {
        const Value* other = y.Find(k);
        if (!other || !Equals(v, *other)) return false;
      }
      return true;
    }
    case K::kCallable:
      return &a.AsCallable() == &b.AsCallable();
    case K::kObject:
      return &a.AsObject() == &b.AsObject();
    default:
      return false;
  }
}

StatusOr<int> Compare(const Value& a, const Value& b, std::string_view op) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      const double x = a.ToDouble(), y = b.ToDouble();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    const int64_t x = a.is_bool() ? (a.AsBool() ? 1 : 0) : a.AsInt();
    const int64_t y = b.is_bool() ? (b.AsBool() ? 1 : 0) : b.AsInt();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    QWENRT_RETURN_IF_ERROR(ChargeWork(std::min(a.AsString().size(), b.AsString().size())));
    // UTF-8 byte order equals code-point order.
    const int c = a.AsString().compare(b.AsString());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list() && a.AsList().is_tuple == b.AsList().is_tuple) {
    const auto& x = a.AsList().items;
    const auto& y = b.AsList().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (Equals(x[i], y[i])) continue;
      QWENRT_RETURN_IF_ERROR(ChargeWork(0));  // Equals answered false because the budget ran out
      return Compare(x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  return InvalidArgument("'{}' not supported between instances of '{}' and '{}'", op, a.TypeName(),
                         b.TypeName());
}

namespace {

void AppendRepr(const Value& v, std::string* out);

void AppendIntText(int64_t i, std::string* out) { *out += std::to_string(i); }

// True when printing should stop: the text is past any value's size limit (the caller's size
// check reports it) or the budget is spent (the caller's next charge reports it).
bool StopPrinting(const std::string& out) {
  return out.size() > ActiveLimits().max_value_bytes || !SpendWork(kCostPerItem);
}

void AppendContainerRepr(const Value& v, std::string* out) {
  if (StopPrinting(*out)) return;
  if (v.is_list()) {
    const auto& list = v.AsList();
    out->push_back(list.is_tuple ? '(' : '[');
    for (size_t i = 0; i < list.items.size() && !StopPrinting(*out); ++i) {
      if (i) *out += ", ";
      AppendRepr(list.items[i], out);
    }
    if (list.is_tuple && list.items.size() == 1) out->push_back(',');
    out->push_back(list.is_tuple ? ')' : ']');
  } else {
    out->push_back('{');
    bool first = true;
    for (const auto& [k, val] : v.AsDict().items) {
      if (StopPrinting(*out)) break;
      if (!first) *out += ", ";
      first = false;
      AppendRepr(k, out);
      *out += ": ";
      AppendRepr(val, out);
    }
    out->push_back('}');
  }
}

void AppendRepr(const Value& v, std::string* out) {
  if (v.is_undefined()) {
    *out += "Undefined";
  } else if (v.is_string()) {
    if (!SpendWork(v.AsString().size())) return;
    *out += PyReprString(v.AsString());
  } else {
    AppendStr(v, out);
  }
}

}  // namespace

void AppendStr(const Value& v, std::string* out) {
  using K = Value::Kind;
  switch (v.kind()) {
    case K::kUndefined:
      return;
    case K::kNone:
      *out += "None";
      return;
    case K::kBool:
      *out += v.AsBool() ? "True" : "False";
      return;
    case K::kInt:
      AppendIntText(v.AsInt(), out);
      return;
    case K::kFloat:
      *out += PyFloatRepr(v.AsFloat(), false);
      return;
    case K::kString:
      *out += v.AsString();
      return;
    case K::kList:
    case K::kDict:
      AppendContainerRepr(v, out);
      return;
    case K::kCallable:
      *out += "<function " + v.AsCallable().name + ">";
      return;
    case K::kObject:
      *out += std::string("<") + v.AsObject().TypeName() + ">";
      return;
  }
}

std::string Str(const Value& v) {
  if (v.is_string()) return v.AsString();
  std::string out;
  AppendStr(v, &out);
  return out;
}

std::string Repr(const Value& v) {
  std::string out;
  AppendRepr(v, &out);
  return out;
}

namespace {

// JSON text of a dict key, as Python's json module coerces keys to strings.
StatusOr<std::string> JsonKey(const Value& k) {
  switch (k.kind()) {
    case Value::Kind::kString:
      return k.AsString();
    case Value::Kind::kInt:
      return std::to_string(k.AsInt());
    case Value::Kind::kFloat:
      return PyFloatRepr(k.AsFloat(), true);
    case Value::Kind::kBool:
      return std::string(k.AsBool() ? "true" : "false");
    case Value::Kind::kNone:
      return std::string("null");
    default:
      return InvalidArgument("keys must be str, int, float, bool or None, not {}", k.TypeName());
  }
}

void AppendNewlineIndent(const JsonOptions& opts, int depth, std::string* out) {
  out->push_back('\n');
  out->append(static_cast<size_t>(opts.indent) * static_cast<size_t>(depth), ' ');
}

Status AppendJsonImpl(const Value& v, const JsonOptions& opts, int depth, std::string* out) {
  using K = Value::Kind;
  // Values are at most max_value_depth deep; this guards direct callers.
  if (depth > ActiveLimits().max_value_depth) return InvalidArgument("tojson: nesting too deep");
  // Checked per element, so separators or shared values cannot build more than the limit.
  if (out->size() > ActiveLimits().max_value_bytes) return StringTooLarge(out->size());
  QWENRT_RETURN_IF_ERROR(ChargeWork(kCostPerItem + (v.is_string() ? v.AsString().size() : 0)));
  const bool pretty = opts.indent >= 0;
  const std::string item_sep =
      opts.has_separators ? opts.item_separator : (pretty ? std::string(",") : std::string(", "));
  const std::string key_sep = opts.has_separators ? opts.key_separator : std::string(": ");
  switch (v.kind()) {
    case K::kNone:
      *out += "null";
      return OkStatus();
    case K::kBool:
      *out += v.AsBool() ? "true" : "false";
      return OkStatus();
    case K::kInt:
      AppendIntText(v.AsInt(), out);
      return OkStatus();
    case K::kFloat:
      *out += PyFloatRepr(v.AsFloat(), true);
      return OkStatus();
    case K::kString:
      AppendJsonString(v.AsString(), out);
      return OkStatus();
    case K::kList: {
      const auto& items = v.AsList().items;
      if (items.empty()) {
        *out += "[]";
        return OkStatus();
      }
      out->push_back('[');
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) *out += item_sep;
        if (pretty) AppendNewlineIndent(opts, depth + 1, out);
        QWENRT_RETURN_IF_ERROR(AppendJsonImpl(items[i], opts, depth + 1, out));
      }
      if (pretty) AppendNewlineIndent(opts, depth, out);
      out->push_back(']');
      return OkStatus();
    }
    case K::kDict: {
      const auto& items = v.AsDict().items;
      if (items.empty()) {
        *out += "{}";
        return OkStatus();
      }
      std::vector<std::pair<std::string, const Value*>> entries;
      entries.reserve(items.size());
      for (const auto& [k, val] : items) {
        QWENRT_ASSIGN_OR_RETURN(std::string key, JsonKey(k));
        entries.emplace_back(std::move(key), &val);
      }
      if (opts.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
      }
      out->push_back('{');
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) *out += item_sep;
        if (pretty) AppendNewlineIndent(opts, depth + 1, out);
        AppendJsonString(entries[i].first, out);
        *out += key_sep;
        QWENRT_RETURN_IF_ERROR(AppendJsonImpl(*entries[i].second, opts, depth + 1, out));
      }
      if (pretty) AppendNewlineIndent(opts, depth, out);
      out->push_back('}');
      return OkStatus();
    }
    default:
      return InvalidArgument("Object of type {} is not JSON serializable", v.TypeName());
  }
}

}  // namespace

Status AppendJson(const Value& v, const JsonOptions& opts, std::string* out) {
  return AppendJsonImpl(v, opts, 0, out);
}

namespace {

Value FromJsonImpl(const Json& j) {
  using T = Json::Type;
  switch (j.type()) {
    case T::kNull:
      return Value::None();
    case T::kBool:
      return Value::Bool(j.get<bool>());
    case T::kInt:
      return Value::Int(j.get<int64_t>());
    case T::kUint: {
      const auto u = j.get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value::Int(static_cast<int64_t>(u));
      return Value::Float(static_cast<double>(u));
    }
    case T::kFloat:
      return Value::Float(j.get<double>());
    case T::kString:
      return Value::String(j.str());
    case T::kArray: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const Json& e : j) items.push_back(FromJsonImpl(e));
      return Value::MakeList(std::move(items));
    }
    case T::kObject: {
      Dict dict;
      dict.items.reserve(j.size());
      // JSON object keys are unique already, so append without the duplicate check.
      for (auto it = j.begin(); it != j.end(); ++it) {
        dict.items.emplace_back(Value::String(it.key()), FromJsonImpl(it.value()));
      }
      return Value::MakeDict(std::move(dict));
    }
  }
  return Value::None();
}

}  // namespace

StatusOr<Value> FromJson(const Json& j, int max_depth) {
  QWENRT_RETURN_IF_ERROR(CheckJsonDepth(j, max_depth, "template context", " (max_value_depth)"));
  return FromJsonImpl(j);  // recursion bounded by max_depth
}

}  // namespace qwenrt::jinja
