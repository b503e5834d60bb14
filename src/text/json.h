// JSON documents the library holds: tool definitions, tool-call arguments, JSON Schemas, the
// tools a session file records. An ordered (insertion-order) DOM with the value semantics and the
// member names of nlohmann::ordered_json, which it replaces inside the library for one reason: a
// nlohmann value allocates in its noexcept destructor (it flattens children into a std::vector),
// so an allocation failure while any document is destroyed or unwound terminates the host. Here
// destruction never allocates and never recurses (see ~Json), so out of memory stays a status.
//
// Depth: Parse refuses documents nested deeper than its limit, and copies, comparisons and dumps
// recurse per level, so values stay as shallow as the documents they come from (kMaxJsonDepth in
// messages.h for what callers send).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/status.h"

namespace qwenrt {

class Json {
 public:
  enum class Type : uint8_t { kNull, kBool, kInt, kUint, kFloat, kString, kArray, kObject };

  Json() = default;
  Json(std::nullptr_t) {}  // NOLINT(google-explicit-constructor): values read like JSON
  Json(bool b) : type_(Type::kBool) { num_.b = b; }                  // NOLINT
  Json(int v) : type_(Type::kInt) { num_.i = v; }                    // NOLINT
  Json(long v) : type_(Type::kInt) { num_.i = v; }                   // NOLINT
  Json(long long v) : type_(Type::kInt) { num_.i = v; }              // NOLINT
  Json(unsigned v) : type_(Type::kUint) { num_.u = v; }              // NOLINT
  Json(unsigned long v) : type_(Type::kUint) { num_.u = v; }         // NOLINT
  Json(unsigned long long v) : type_(Type::kUint) { num_.u = v; }    // NOLINT
  Json(double v) : type_(Type::kFloat) { num_.f = v; }               // NOLINT
  Json(const char* s) : type_(Type::kString), str_(s) {}             // NOLINT
  Json(std::string s) : type_(Type::kString), str_(std::move(s)) {}  // NOLINT
  Json(std::string_view s) : type_(Type::kString), str_(s) {}        // NOLINT
  // nlohmann's brace form: a list of [string, value] pairs is an object, anything else an array.
  Json(std::initializer_list<Json> init);

  Json(const Json&) = default;
  Json(Json&& other) noexcept;
  Json& operator=(const Json& other);
  Json& operator=(Json&& other) noexcept;
  ~Json();

  static Json array() { return Json(Type::kArray); }
  static Json object() { return Json(Type::kObject); }
  static Json array(std::initializer_list<Json> elements);
  static Json object(std::initializer_list<std::pair<std::string_view, Json>> members);

  // Parsing, within limits that make any later step fast and shallow. Errors are InvalidArgument
  // naming `what` and the byte offset; `too_deep` (optional) tells a document refused for its
  // depth.
  struct Limits {
    int max_depth = 128;                // arrays and objects nested
    size_t max_object_keys = SIZE_MAX;  // keys per object
  };
  static StatusOr<Json> Parse(std::string_view text, const Limits& limits,
                              std::string_view what = "JSON", bool* too_deep = nullptr);

  Type type() const { return type_; }
  const char* type_name() const;  // "null", "boolean", "number", "string", "array", "object"
  bool is_null() const { return type_ == Type::kNull; }
  bool is_boolean() const { return type_ == Type::kBool; }
  bool is_number() const {
    return type_ == Type::kInt || type_ == Type::kUint || type_ == Type::kFloat;
  }
  bool is_number_integer() const { return type_ == Type::kInt || type_ == Type::kUint; }
  bool is_number_unsigned() const { return type_ == Type::kUint; }
  bool is_number_float() const { return type_ == Type::kFloat; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }
  bool is_structured() const { return is_array() || is_object(); }

  // Scalars, as nlohmann converts them: a number (or a boolean) to any number type, a boolean
  // only to bool, a string only to std::string; anything else throws TypeError.
  struct TypeError : std::exception {
    const char* what() const noexcept override { return "JSON value of the wrong type"; }
  };
  template <typename T>
  T get() const;
  const std::string& str() const { return str_; }  // the string value ("" for other types)

  // Containers. size(): elements or members (0 for null, 1 for a scalar, as nlohmann counts).
  size_t size() const;
  bool empty() const { return size() == 0; }
  bool contains(std::string_view key) const { return Find(key) != kNpos; }
  Json value(std::string_view key, Json fallback) const {  // the member, or `fallback`
    const size_t i = Find(key);
    return i == kNpos ? fallback : items_[i];
  }
  size_t count(std::string_view key) const { return contains(key) ? 1 : 0; }
  // Object member: a null value becomes an object, a missing key is appended with null.
  Json& operator[](std::string_view key);
  Json& operator[](const char* key) { return (*this)[std::string_view(key)]; }
  Json& operator[](const std::string& key) { return (*this)[std::string_view(key)]; }
  // Reading a missing member or element (or indexing a non-container) gives a null value.
  const Json& operator[](std::string_view key) const;
  const Json& operator[](const char* key) const { return (*this)[std::string_view(key)]; }
  const Json& operator[](const std::string& key) const { return (*this)[std::string_view(key)]; }
  Json& operator[](size_t i) { return items_[i]; }  // an existing element of an array
  const Json& operator[](size_t i) const;
  Json& operator[](int i) { return (*this)[static_cast<size_t>(i)]; }
  const Json& operator[](int i) const { return (*this)[static_cast<size_t>(i)]; }
  const Json& back() const { return items_.back(); }
  size_t erase(std::string_view key);  // members removed (0 or 1)
  void push_back(Json v);              // a null value becomes an array

  // Iteration over elements or member values; key() names the member.
  template <bool kConst>
  class Iter {
   public:
    using Owner = std::conditional_t<kConst, const Json, Json>;
    using iterator_category = std::forward_iterator_tag;
    using value_type = Json;
    using difference_type = std::ptrdiff_t;
    using pointer = Owner*;
    using reference = Owner&;
    Iter(Owner* owner, size_t i) : owner_(owner), i_(i) {}
    Owner& operator*() const { return owner_->items_[i_]; }
    Owner* operator->() const { return &owner_->items_[i_]; }
    Owner& value() const { return owner_->items_[i_]; }
    const std::string& key() const { return owner_->keys_[i_]; }
    Iter& operator++() {
      ++i_;
      return *this;
    }
    bool operator==(const Iter& o) const { return i_ == o.i_ && owner_ == o.owner_; }
    bool operator!=(const Iter& o) const { return !(*this == o); }

   private:
    Owner* owner_;
    size_t i_;
  };
  using iterator = Iter<false>;
  using const_iterator = Iter<true>;
  iterator begin() { return {this, 0}; }
  iterator end() { return {this, items_.size()}; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, items_.size()}; }
  iterator find(std::string_view key);
  const_iterator find(std::string_view key) const;
  // Members (or elements, with empty keys) as (key, value) pairs: `for (auto [k, v] : j.items())`.
  template <bool kConst>
  class Items {
   public:
    using Owner = std::conditional_t<kConst, const Json, Json>;
    class It {
     public:
      It(Owner* owner, size_t i) : owner_(owner), i_(i) {}
      std::pair<const std::string&, Owner&> operator*() const {
        return {i_ < owner_->keys_.size() ? owner_->keys_[i_] : EmptyKey(), owner_->items_[i_]};
      }
      It& operator++() {
        ++i_;
        return *this;
      }
      bool operator!=(const It& o) const { return i_ != o.i_; }

     private:
      Owner* owner_;
      size_t i_;
    };
    explicit Items(Owner* owner) : owner_(owner) {}
    It begin() const { return {owner_, 0}; }
    It end() const { return {owner_, owner_->items_.size()}; }

   private:
    Owner* owner_;
  };
  Items<false> items() { return Items<false>(this); }
  Items<true> items() const { return Items<true>(this); }

  // Text. dump(): compact (`,` and `:`), non-ASCII kept, invalid UTF-8 in strings replaced by
  // U+FFFD. DumpPython(): Python's json.dumps(value, ensure_ascii=False) (", " and ": ", floats as
  // Python's repr), the form MaskBench serialises instances in and enum literals must match.
  std::string dump() const;
  void AppendPython(std::string* out) const;

  // Equality as JSON Schema compares instances: numbers by value across integer and float, objects
  // regardless of member order, booleans distinct from numbers. `<` is a total order consistent
  // with it (for std::set).
  friend bool operator==(const Json& a, const Json& b);
  friend bool operator!=(const Json& a, const Json& b) { return !(a == b); }
  friend bool operator<(const Json& a, const Json& b);

 private:
  static constexpr size_t kNpos = SIZE_MAX;
  static const std::string& EmptyKey();
  explicit Json(Type t) : type_(t) {}
  size_t Find(std::string_view key) const;
  void Clear() noexcept;  // releases the children without recursion or allocation
  friend class JsonParser;

  Type type_ = Type::kNull;
  union {
    bool b;
    int64_t i;
    uint64_t u;
    double f;
    Json* parent;  // while ~Json releases a container: the container holding it
  } num_{};
  std::string str_;                // kString
  std::vector<Json> items_;        // kArray elements, kObject member values
  std::vector<std::string> keys_;  // kObject member names, parallel to items_
};

template <>
bool Json::get<bool>() const;
template <>
int64_t Json::get<int64_t>() const;
template <>
uint64_t Json::get<uint64_t>() const;
template <>
double Json::get<double>() const;
template <>
int Json::get<int>() const;
template <>
std::string Json::get<std::string>() const;

// Nesting depth of a document (0 for a scalar, 1 for a flat array or object), measured with an
// explicit stack, so a value a C++ host built 10^6 levels deep is measured safely; stops counting
// past `stop_above`.
int JsonDepth(const Json& j, int stop_above);
// InvalidArgument "<what> nests deeper than <max_depth> levels<note>" when `j` does: the one depth
// check of request JSON (chat/messages.h), chat-template contexts and jinja::FromJson. Run it
// before copying a value that may be deep (copies recurse per level).
Status CheckJsonDepth(const Json& j, int max_depth, std::string_view what,
                      std::string_view note = "");

}  // namespace qwenrt
