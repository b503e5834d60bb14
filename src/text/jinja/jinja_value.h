// The value model of the chat-template engine: what a Jinja expression evaluates to. It mirrors
// the Python objects Jinja2 sees when Hugging Face renders a template (None, bool, int, float, str,
// list/tuple, insertion-ordered dict, callables, and a few objects such as `loop` and namespaces),
// plus jinja2's default `Undefined`. Lists and dicts are immutable and shared (the sandbox HF uses
// forbids mutating them); namespaces are the one mutable object. Conversion to and from
// JSON documents (text/json.h) live here too, as does Python's `str()`/`repr()`/`json.dumps` of a
// value. Strings are shared too, so copying any value is O(1). Every container records its nesting
// depth when built, so the evaluator can refuse values nested deeper than
// TemplateLimits::max_value_depth before the recursive helpers here (equality, repr, tojson,
// destruction) see them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/status.h"
#include "text/json.h"

namespace qwenrt::jinja {

class Value;

// Arguments of a call: positional, then keyword (in source order).
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
};

using NativeFn = std::function<StatusOr<Value>(CallArgs& args)>;

struct Callable {
  std::string name;
  NativeFn fn;
  int depth = 1;  // 1 + the depth of a value the function holds (a bound method's receiver)
};

// An object with attributes computed on access (the `loop` variable, `namespace()` objects).
class Object {
 public:
  virtual ~Object() = default;
  virtual const char* TypeName() const = 0;
  // Undefined when the attribute does not exist.
  virtual Value GetAttr(std::string_view name) const = 0;
  // Only namespaces accept assignment (`{% set ns.x = 1 %}`).
  virtual Status SetAttr(std::string_view name, Value value);
  // Nesting depth through the values the object holds (1 for objects whose references are
  // released separately, such as namespaces).
  virtual int Depth() const { return 1; }
};

struct List {
  std::vector<Value> items;
  bool is_tuple = false;  // affects repr only: "(1, 2)" vs "[1, 2]"
  int depth = 1;          // 1 + the deepest item's depth (set by Value::MakeList)
};

// Insertion-ordered mapping. Keys are compared with Python equality (1 == 1.0 == True); lookups
// are linear, which is faster than hashing for the small dicts chat messages consist of.
struct Dict {
  std::vector<std::pair<Value, Value>> items;
  const Value* Find(const Value& key) const;
  const Value* FindStr(std::string_view key) const;
  void Set(Value key, Value value);  // replaces the value of an existing key in place
  int depth = 1;  // 1 + the deepest key's or value's depth (set by Value::MakeDict)
};

class Value {
 public:
  enum class Kind {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,
    kDict,
    kCallable,
    kObject
  };

  Value() = default;                         // undefined, with no name attached
  static Value Undefined(std::string hint);  // hint: the message an error on it reports
  static Value None();
  static Value Bool(bool b);
  static Value Int(int64_t i);
  static Value Float(double d);
  static Value String(std::string s);
  static Value MakeList(std::vector<Value> items, bool is_tuple = false);
  static Value MakeDict(Dict dict);
  // `holds`: a value the function keeps (a bound method's receiver), for the depth.
  static Value MakeCallable(std::string name, NativeFn fn, const Value* holds = nullptr);
  static Value MakeObject(std::shared_ptr<Object> object);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_number() const {
    return is_int() || is_float() || is_bool();
  }  // Python: bool is a Number
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_callable() const { return kind() == Kind::kCallable; }
  bool is_object() const { return kind() == Kind::kObject; }

  bool AsBool() const { return std::get<bool>(v_); }
  int64_t AsInt() const { return std::get<int64_t>(v_); }
  double AsFloat() const { return std::get<double>(v_); }
  // Numeric value of an int, float or bool as a double.
  double ToDouble() const;
  const std::string& AsString() const { return *std::get<std::shared_ptr<const std::string>>(v_); }
  const List& AsList() const { return *std::get<std::shared_ptr<const List>>(v_); }
  const Dict& AsDict() const { return *std::get<std::shared_ptr<const Dict>>(v_); }
  const Callable& AsCallable() const { return *std::get<std::shared_ptr<const Callable>>(v_); }
  Object& AsObject() const { return *std::get<std::shared_ptr<Object>>(v_); }
  const std::string& undefined_hint() const { return std::get<UndefinedT>(v_).hint; }

  // Nesting depth: 0 for scalars and strings, 1 + the deepest element for containers.
  int Depth() const;

  // Python truthiness (undefined is false).
  bool Truthy() const;
  // Python type name as used in Jinja2 error messages: 'int', 'str', 'dict', 'NoneType', ...
  const char* TypeName() const;

 private:
  struct UndefinedT {
    std::string hint;
  };
  struct NoneT {};
  std::variant<UndefinedT, NoneT, bool, int64_t, double, std::shared_ptr<const std::string>,
               std::shared_ptr<const List>, std::shared_ptr<const Dict>,
               std::shared_ptr<const Callable>, std::shared_ptr<Object>>
      v_;
};

// Python `==` (numbers across int/float/bool, deep for lists and dicts; undefined equals only
// undefined). Charges the active budget per element and byte compared; answers false early once it
// is spent.
bool Equals(const Value& a, const Value& b);
// Python ordering for `<` etc.: -1, 0 or 1; a TypeError-style error for incomparable types.
StatusOr<int> Compare(const Value& a, const Value& b, std::string_view op);

// Python `str(v)` (what `{{ v }}` prints; undefined prints as ""). Containers print their
// elements' repr; that stops early once the text passes max_value_bytes or the budget is spent
// (the caller's size check or next charge then fails), so a shared value printed as a tree of
// 2^60 nodes costs no more than the limit.
std::string Str(const Value& v);
void AppendStr(const Value& v, std::string* out);
// Python `repr(v)`.
std::string Repr(const Value& v);

// Python `json.dumps(v, ensure_ascii=False, indent=indent, separators=..., sort_keys=...)`.
// indent < 0 means None (one line, ", " and ": "); otherwise newlines and that many spaces.
struct JsonOptions {
  int indent = -1;
  std::string item_separator;  // empty: Python's default for the indent mode
  std::string key_separator;
  bool has_separators = false;
  bool sort_keys = false;
};
// Fails once `out` passes max_value_bytes or the budget is spent.
Status AppendJson(const Value& v, const JsonOptions& opts, std::string* out);

// JSON -> value (objects keep key order); documents nested deeper than `max_depth` are an
// InvalidArgument naming max_value_depth.
StatusOr<Value> FromJson(const Json& j, int max_depth);

}  // namespace qwenrt::jinja
