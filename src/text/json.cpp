// The library's JSON DOM (see json.h): construction, the non-allocating release of children, an
// iterative parser with limits, the two text forms, and JSON Schema's equality.
#include "text/json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "text/jinja/jinja_string.h"
#include "text/unicode.h"

namespace qwenrt {

Json::Json(std::initializer_list<Json> init) {
  const bool pairs = std::all_of(init.begin(), init.end(), [](const Json& e) {
    return e.is_array() && e.items_.size() == 2 && e.items_[0].is_string();
  });
  if (pairs && init.size() > 0) {
    type_ = Type::kObject;
    for (const Json& e : init) (*this)[e.items_[0].str_] = e.items_[1];
  } else {
    type_ = Type::kArray;
    items_.assign(init.begin(), init.end());
  }
}

Json Json::array(std::initializer_list<Json> elements) {
  Json out(Type::kArray);
  out.items_.assign(elements.begin(), elements.end());
  return out;
}

Json Json::object(std::initializer_list<std::pair<std::string_view, Json>> members) {
  Json out(Type::kObject);
  for (const auto& [key, value] : members) out[key] = value;
  return out;
}

Json::Json(Json&& other) noexcept
    : type_(other.type_),
      num_(other.num_),
      str_(std::move(other.str_)),
      items_(std::move(other.items_)),
      keys_(std::move(other.keys_)) {
  other.type_ = Type::kNull;
}

// Both assignments build the new value first and release the old one last, so assigning a value
// its own member (`x = x["a"]`) is safe, and a failed copy leaves the target as it was.
Json& Json::operator=(const Json& other) {
  Json copy(other);
  return *this = std::move(copy);
}

Json& Json::operator=(Json&& other) noexcept {
  Json old(std::move(*this));
  type_ = other.type_;
  num_ = other.num_;
  str_ = std::move(other.str_);
  items_ = std::move(other.items_);
  keys_ = std::move(other.keys_);
  other.type_ = Type::kNull;
  return *this;
}

Json::~Json() {
  if (!items_.empty()) Clear();
}

// Post-order release by pointer reversal: descend along last children, each container on the way
// remembering its parent in its (unused) number field, and pop a child once it has no children of
// its own (its destructor then finds nothing to release). Only pop_back runs on the vectors, so
// the remembered addresses stay valid; O(size), no allocation, no recursion, at any depth.
void Json::Clear() noexcept {
  const auto pop_last = [](Json* n) {
    n->items_.pop_back();
    if (!n->keys_.empty()) n->keys_.pop_back();
  };
  Json* n = this;
  while (true) {
    if (n->items_.empty()) {
      if (n == this) break;
      Json* parent = n->num_.parent;
      pop_last(parent);  // destroys n, now childless
      n = parent;
      continue;
    }
    Json& last = n->items_.back();
    if (last.items_.empty()) {
      pop_last(n);
      continue;
    }
    last.num_.parent = n;
    n = &last;
  }
  keys_.clear();
}

const char* Json::type_name() const {
  switch (type_) {
    case Type::kNull:
      return "null";
    case Type::kBool:
      return "boolean";
    case Type::kInt:
    case Type::kUint:
    case Type::kFloat:
      return "number";
    case Type::kString:
      return "string";
    case Type::kArray:
      return "array";
    case Type::kObject:
      return "object";
  }
  return "null";
}

namespace {

template <typename To>
To ClampToInt(double f) {
  if (std::isnan(f)) return 0;
  if (f <= static_cast<double>(std::numeric_limits<To>::min()))
    return std::numeric_limits<To>::min();
  if (f >= static_cast<double>(std::numeric_limits<To>::max()))
    return std::numeric_limits<To>::max();
  return static_cast<To>(f);
}

}  // namespace

template <>
bool Json::get<bool>() const {
  if (type_ != Type::kBool) throw TypeError();
  return num_.b;
}

template <>
int64_t Json::get<int64_t>() const {
  switch (type_) {
    case Type::kBool:
      return num_.b ? 1 : 0;
    case Type::kInt:
      return num_.i;
    case Type::kUint:
      return num_.u > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(num_.u);
    case Type::kFloat:
      return ClampToInt<int64_t>(num_.f);
    default:
      throw TypeError();
  }
}

template <>
uint64_t Json::get<uint64_t>() const {
  switch (type_) {
    case Type::kBool:
      return num_.b ? 1 : 0;
    case Type::kInt:
      return num_.i < 0 ? 0 : static_cast<uint64_t>(num_.i);
    case Type::kUint:
      return num_.u;
    case Type::kFloat:
      return num_.f < 0 ? 0 : ClampToInt<uint64_t>(num_.f);
    default:
      throw TypeError();
  }
}

template <>
double Json::get<double>() const {
  switch (type_) {
    case Type::kBool:
      return num_.b ? 1 : 0;
    case Type::kInt:
      return static_cast<double>(num_.i);
    case Type::kUint:
      return static_cast<double>(num_.u);
    case Type::kFloat:
      return num_.f;
    default:
      throw TypeError();
  }
}

template <>
int Json::get<int>() const {
  const int64_t v = get<int64_t>();
  return static_cast<int>(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX));
}

template <>
std::string Json::get<std::string>() const {
  if (type_ != Type::kString) throw TypeError();
  return str_;
}

size_t Json::size() const {
  switch (type_) {
    case Type::kNull:
      return 0;
    case Type::kArray:
    case Type::kObject:
      return items_.size();
    default:
      return 1;
  }
}

size_t Json::Find(std::string_view key) const {
  if (type_ != Type::kObject) return kNpos;
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == key) return i;
  }
  return kNpos;
}

Json::iterator Json::find(std::string_view key) {
  const size_t i = Find(key);
  return i == kNpos ? end() : iterator(this, i);
}

Json::const_iterator Json::find(std::string_view key) const {
  const size_t i = Find(key);
  return i == kNpos ? end() : const_iterator(this, i);
}

const std::string& Json::EmptyKey() {
  static const std::string empty;
  return empty;
}

namespace {
const Json& NullJson() {
  static const Json null;
  return null;
}
}  // namespace

Json& Json::operator[](std::string_view key) {
  if (type_ != Type::kObject) *this = object();
  const size_t i = Find(key);
  if (i != kNpos) return items_[i];
  keys_.reserve(keys_.size() + 1);  // both vectors have room before either grows
  items_.emplace_back();
  keys_.emplace_back(key);
  return items_.back();
}

const Json& Json::operator[](std::string_view key) const {
  const size_t i = Find(key);
  return i == kNpos ? NullJson() : items_[i];
}

const Json& Json::operator[](size_t i) const {
  return type_ == Type::kArray && i < items_.size() ? items_[i] : NullJson();
}

size_t Json::erase(std::string_view key) {
  const size_t i = Find(key);
  if (i == kNpos) return 0;
  items_.erase(items_.begin() + static_cast<ptrdiff_t>(i));
  keys_.erase(keys_.begin() + static_cast<ptrdiff_t>(i));
  return 1;
}

void Json::push_back(Json v) {
  if (type_ != Type::kArray) *this = array();
  items_.push_back(std::move(v));
}

// ---- parsing ----

class JsonParser {
 public:
  JsonParser(std::string_view text, const Json::Limits& limits, std::string_view what,
             bool* too_deep)
      : s_(text), limits_(limits), what_(what), too_deep_(too_deep) {}

  StatusOr<Json> Run() {
    // Open containers, innermost last; each completed value is added to the innermost one.
    struct Open {
      Json value;
      std::string key;  // objects: the key of the value being parsed
    };
    std::vector<Open> open;
    Json done;
    while (true) {
      SkipSpace();
      if (pos_ >= s_.size()) return Error("unexpected end");
      Json value;
      bool have_value = true;
      const char c = s_[pos_];
      if (c == '{' || c == '[') {
        if (static_cast<int>(open.size()) >= limits_.max_depth) {
          if (too_deep_ != nullptr) *too_deep_ = true;
          return InvalidArgument("{} nests deeper than {} levels", what_, limits_.max_depth);
        }
        ++pos_;
        open.push_back({c == '{' ? Json::object() : Json::array(), {}});
        SkipSpace();
        const char close = c == '{' ? '}' : ']';
        if (pos_ < s_.size() && s_[pos_] == close) {
          ++pos_;
          value = std::move(open.back().value);
          open.pop_back();
        } else if (c == '{') {
          QWENRT_RETURN_IF_ERROR(Key(&open.back().key));
          continue;
        } else {
          continue;
        }
      } else {
        QWENRT_RETURN_IF_ERROR(Scalar(&value));
      }
      // Add the value to the open containers, closing those that end here.
      while (have_value) {
        if (open.empty()) {
          done = std::move(value);
          SkipSpace();
          if (pos_ != s_.size()) return Error("trailing characters");
          return done;
        }
        Open& top = open.back();
        if (top.value.is_object()) {
          if (top.value.items_.size() >= limits_.max_object_keys) {
            return InvalidArgument("{} has an object with more than {} keys", what_,
                                   limits_.max_object_keys);
          }
          top.value.keys_.reserve(top.value.keys_.size() + 1);
          top.value.items_.push_back(std::move(value));
          top.value.keys_.push_back(std::move(top.key));
        } else {
          top.value.items_.push_back(std::move(value));
        }
        SkipSpace();
        if (pos_ >= s_.size()) return Error("unexpected end");
        const char sep = s_[pos_++];
        const char close = top.value.is_object() ? '}' : ']';
        if (sep == ',') {
          if (top.value.is_object()) QWENRT_RETURN_IF_ERROR(Key(&top.key));
          have_value = false;
        } else if (sep == close) {
          if (top.value.is_object()) MergeDuplicateKeys(&top.value);
          value = std::move(top.value);
          open.pop_back();
        } else {
          --pos_;
          return Error(top.value.is_object() ? "expected ',' or '}'" : "expected ',' or ']'");
        }
      }
    }
  }

 private:
  Status Error(std::string_view why) const {
    return InvalidArgument("{} is not valid JSON ({} at offset {})", what_, why, pos_);
  }

  void SkipSpace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }

  // `"key"` then `:`.
  Status Key(std::string* key) {
    SkipSpace();
    if (pos_ >= s_.size() || s_[pos_] != '"') return Error("expected a string key");
    key->clear();
    QWENRT_RETURN_IF_ERROR(String(key));
    SkipSpace();
    if (pos_ >= s_.size() || s_[pos_] != ':') return Error("expected ':'");
    ++pos_;
    return OkStatus();
  }

  Status Scalar(Json* out) {
    const char c = s_[pos_];
    if (c == '"') {
      *out = Json(std::string());
      return String(&out->str_);
    }
    const auto word = [&](std::string_view w) {
      if (s_.substr(pos_, w.size()) != w) return false;
      pos_ += w.size();
      return true;
    };
    if ((c == 't' && word("true")) || (c == 'f' && word("false"))) {
      *out = Json(c == 't');
      return OkStatus();
    }
    if (c == 'n' && word("null")) {
      *out = Json(nullptr);
      return OkStatus();
    }
    if (c == '-' || (c >= '0' && c <= '9')) return Number(out);
    return Error("unexpected character");
  }

  Status Number(Json* out) {
    const size_t start = pos_;
    const auto digits = [&] {
      const size_t from = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      return pos_ - from;
    };
    if (s_[pos_] == '-') ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '0') {
      ++pos_;
    } else if (digits() == 0) {
      return Error("invalid number");
    }
    bool integral = true;
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      integral = false;
      if (digits() == 0) return Error("invalid number");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      integral = false;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (digits() == 0) return Error("invalid number");
    }
    const char* first = s_.data() + start;
    const char* last = s_.data() + pos_;
    if (integral) {  // the integer kinds where the value fits (as nlohmann and Python keep them)
      int64_t i = 0;
      if (std::from_chars(first, last, i).ec == std::errc()) {
        *out = Json(static_cast<long long>(i));
        return OkStatus();
      }
      uint64_t u = 0;
      if (std::from_chars(first, last, u).ec == std::errc()) {
        *out = Json(static_cast<unsigned long long>(u));
        return OkStatus();
      }
    }
    double f = 0;
    const auto r = std::from_chars(first, last, f);
    if (r.ec != std::errc() || !std::isfinite(f)) return Error("number out of range");
    *out = Json(f);
    return OkStatus();
  }

  // A string after its opening quote... pos_ is at the quote.
  Status String(std::string* out) {
    ++pos_;
    while (true) {
      const size_t run = pos_;
      while (pos_ < s_.size() && s_[pos_] != '"' && s_[pos_] != '\\' &&
             static_cast<unsigned char>(s_[pos_]) >= 0x20 &&
             static_cast<unsigned char>(s_[pos_]) < 0x80) {
        ++pos_;
      }
      out->append(s_.data() + run, pos_ - run);
      if (pos_ >= s_.size()) return Error("unterminated string");
      const auto c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return OkStatus();
      }
      if (c < 0x20) return Error("control character in a string");
      if (c >= 0x80) {
        const int n = unicode::ValidSequenceLength(s_.data() + pos_, s_.size() - pos_);
        if (n <= 0) return Error("invalid UTF-8 in a string");
        out->append(s_.data() + pos_, static_cast<size_t>(n));
        pos_ += static_cast<size_t>(n);
        continue;
      }
      // An escape.
      if (++pos_ >= s_.size()) return Error("unterminated string");
      const char e = s_[pos_++];
      // The one-letter escapes, and \uXXXX (with surrogate pairs).
      constexpr std::string_view kEscapes = "\"\\/bfnrt", kMeanings = "\"\\/\b\f\n\r\t";
      if (const size_t k = kEscapes.find(e); k != std::string_view::npos) {
        out->push_back(kMeanings[k]);
        continue;
      }
      if (e != 'u') return Error("invalid escape");
      uint32_t cp = 0;
      QWENRT_RETURN_IF_ERROR(Hex4(&cp));
      if (cp >= 0xDC00 && cp <= 0xDFFF) return Error("lone low surrogate");
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        uint32_t lo = 0;
        if (s_.substr(pos_, 2) != "\\u") return Error("lone high surrogate");
        pos_ += 2;
        QWENRT_RETURN_IF_ERROR(Hex4(&lo));
        if (lo < 0xDC00 || lo > 0xDFFF) return Error("lone high surrogate");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      }
      unicode::AppendUtf8(cp, out);
    }
  }

  Status Hex4(uint32_t* cp) {
    if (pos_ + 4 > s_.size()) return Error("invalid \\u escape");
    for (int k = 0; k < 4; ++k) {
      const char h = s_[pos_++];
      const int d = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
      if (d < 0) return Error("invalid \\u escape");
      *cp = *cp * 16 + static_cast<uint32_t>(d);
    }
    return OkStatus();
  }

  // A key given twice keeps its first position and its last value (Python's dict, nlohmann's
  // ordered_json). Sorting indices keeps this O(n log n) for wide objects.
  static void MergeDuplicateKeys(Json* obj) {
    const size_t n = obj->keys_.size();
    if (n < 2) return;
    if (n <= 16) {  // most objects are small: a pairwise look finds no duplicate without allocating
      bool dup = false;
      for (size_t i = 1; i < n && !dup; ++i) {
        for (size_t j = 0; j < i && !dup; ++j) dup = obj->keys_[i] == obj->keys_[j];
      }
      if (!dup) return;
    }
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return obj->keys_[a] < obj->keys_[b]; });
    std::vector<bool> drop(n, false);
    bool any = false;
    for (size_t g = 0; g < n;) {
      size_t h = g + 1;
      while (h < n && obj->keys_[order[h]] == obj->keys_[order[g]]) ++h;
      if (h - g > 1) {  // order[g] is the first position, order[h - 1] the last value
        obj->items_[order[g]] = std::move(obj->items_[order[h - 1]]);
        for (size_t k = g + 1; k < h; ++k) drop[order[k]] = true;
        any = true;
      }
      g = h;
    }
    if (!any) return;
    size_t w = 0;
    for (size_t r = 0; r < n; ++r) {
      if (drop[r]) continue;
      if (w != r) {
        obj->items_[w] = std::move(obj->items_[r]);
        obj->keys_[w] = std::move(obj->keys_[r]);
      }
      ++w;
    }
    obj->items_.resize(w);
    obj->keys_.resize(w);
  }

  std::string_view s_;
  const Json::Limits& limits_;
  std::string_view what_;
  bool* too_deep_;
  size_t pos_ = 0;
};

StatusOr<Json> Json::Parse(std::string_view text, const Limits& limits, std::string_view what,
                           bool* too_deep) {
  if (too_deep != nullptr) *too_deep = false;
  return JsonParser(text, limits, what, too_deep).Run();
}

// ---- text ----

namespace {

// A string as JSON with invalid UTF-8 sequences replaced by U+FFFD.
void AppendValidJsonString(const std::string& s, std::string* out) {
  if (unicode::IsValidUtf8(s)) {
    jinja::AppendJsonString(s, out);
    return;
  }
  std::string valid;
  unicode::AppendValidUtf8(s, &valid);
  jinja::AppendJsonString(valid, out);
}

void AppendText(const Json& v, bool python, std::string* out) {
  const char* comma = python ? ", " : ",";
  const char* colon = python ? ": " : ":";
  switch (v.type()) {
    case Json::Type::kNull:
      *out += "null";
      return;
    case Json::Type::kBool:
      *out += v.get<bool>() ? "true" : "false";
      return;
    case Json::Type::kInt:
      *out += std::to_string(v.get<int64_t>());
      return;
    case Json::Type::kUint:
      *out += std::to_string(v.get<uint64_t>());
      return;
    case Json::Type::kFloat: {
      const double f = v.get<double>();
      // json.dumps spells non-finite values Infinity / NaN; as strict JSON they are null.
      *out += python || std::isfinite(f) ? jinja::PyFloatRepr(f, true) : "null";
      return;
    }
    case Json::Type::kString:
      if (python) {
        jinja::AppendJsonString(v.str(), out);
      } else {
        AppendValidJsonString(v.str(), out);
      }
      return;
    case Json::Type::kArray: {
      *out += '[';
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) *out += comma;
        AppendText(v[i], python, out);
      }
      *out += ']';
      return;
    }
    case Json::Type::kObject: {
      *out += '{';
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) *out += comma;
        first = false;
        if (python) {
          jinja::AppendJsonString(it.key(), out);
        } else {
          AppendValidJsonString(it.key(), out);
        }
        *out += colon;
        AppendText(it.value(), python, out);
      }
      *out += '}';
      return;
    }
  }
}

}  // namespace

std::string Json::dump() const {
  std::string out;
  AppendText(*this, false, &out);
  return out;
}

void Json::AppendPython(std::string* out) const { AppendText(*this, true, out); }

// ---- comparison ----

namespace {

int Rank(const Json& v) {
  switch (v.type()) {
    case Json::Type::kNull:
      return 0;
    case Json::Type::kBool:
      return 1;
    case Json::Type::kInt:
    case Json::Type::kUint:
    case Json::Type::kFloat:
      return 2;
    case Json::Type::kString:
      return 3;
    case Json::Type::kArray:
      return 4;
    case Json::Type::kObject:
      return 5;
  }
  return 0;
}

// -1, 0, 1 for numbers: exact between the integer kinds, as doubles otherwise.
int CompareNumbers(const Json& a, const Json& b) {
  if (a.is_number_integer() && b.is_number_integer()) {
    const bool an = a.type() == Json::Type::kInt && a.get<int64_t>() < 0;
    const bool bn = b.type() == Json::Type::kInt && b.get<int64_t>() < 0;
    if (an != bn) return an ? -1 : 1;
    if (an)
      return a.get<int64_t>() < b.get<int64_t>() ? -1 : a.get<int64_t>() > b.get<int64_t>() ? 1 : 0;
    return a.get<uint64_t>() < b.get<uint64_t>()   ? -1
           : a.get<uint64_t>() > b.get<uint64_t>() ? 1
                                                   : 0;
  }
  const double x = a.get<double>(), y = b.get<double>();
  return x < y ? -1 : x > y ? 1 : 0;
}

// Member indices of an object in key order.
std::vector<size_t> KeyOrder(const Json& obj) {
  std::vector<size_t> order(obj.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::vector<const std::string*> keys;
  keys.reserve(obj.size());
  for (auto it = obj.begin(); it != obj.end(); ++it) keys.push_back(&it.key());
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return *keys[x] < *keys[y]; });
  return order;
}

int Compare(const Json& a, const Json& b) {
  const int ra = Rank(a), rb = Rank(b);
  if (ra != rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case 0:
      return 0;
    case 1:
      return a.get<bool>() == b.get<bool>() ? 0 : a.get<bool>() ? 1 : -1;
    case 2:
      return CompareNumbers(a, b);
    case 3:
      if (const int c = a.str().compare(b.str())) return c < 0 ? -1 : 1;
      return 0;
    case 4:
      for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
        if (const int c = Compare(a[i], b[i])) return c;
      }
      return a.size() < b.size() ? -1 : a.size() > b.size() ? 1 : 0;
    default: {
      const std::vector<size_t> oa = KeyOrder(a), ob = KeyOrder(b);
      std::vector<const std::string*> ka, kb;
      std::vector<const Json*> va, vb;
      for (auto it = a.begin(); it != a.end(); ++it)
        ka.push_back(&it.key()), va.push_back(&it.value());
      for (auto it = b.begin(); it != b.end(); ++it)
        kb.push_back(&it.key()), vb.push_back(&it.value());
      for (size_t i = 0; i < oa.size() && i < ob.size(); ++i) {
        if (const int c = ka[oa[i]]->compare(*kb[ob[i]])) return c < 0 ? -1 : 1;
        if (const int c = Compare(*va[oa[i]], *vb[ob[i]])) return c;
      }
      return oa.size() < ob.size() ? -1 : oa.size() > ob.size() ? 1 : 0;
    }
  }
}

}  // namespace

bool operator==(const Json& a, const Json& b) {
  if (Rank(a) != Rank(b)) return false;
  if (a.is_object()) {  // keys are unique: same size and every member found equal
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      const auto other = b.find(it.key());
      if (other == b.end() || !(it.value() == other.value())) return false;
    }
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!(a[i] == b[i])) return false;
    }
    return true;
  }
  return Compare(a, b) == 0;
}

bool operator<(const Json& a, const Json& b) { return Compare(a, b) < 0; }

int JsonDepth(const Json& root, int stop_above) {
  // Depth-first with an explicit stack of (node, depth): values built by code may nest deeper
  // than any parsed document, and must not recurse.
  std::vector<std::pair<const Json*, int>> stack = {{&root, 0}};
  int deepest = 0;
  while (!stack.empty()) {
    const auto [j, depth] = stack.back();
    stack.pop_back();
    if (!j->is_structured()) continue;
    deepest = std::max(deepest, depth + 1);
    if (deepest > stop_above) return deepest;
    for (const Json& child : *j) stack.emplace_back(&child, depth + 1);
  }
  return deepest;
}

Status CheckJsonDepth(const Json& j, int max_depth, std::string_view what, std::string_view note) {
  if (JsonDepth(j, max_depth) > max_depth)
    return InvalidArgument("{} nests deeper than {} levels{}", what, max_depth, note);
  return OkStatus();
}

}  // namespace qwenrt
