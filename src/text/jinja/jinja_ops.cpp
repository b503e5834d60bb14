// Operators with Python semantics (see jinja_ops.h). Integers are 64-bit: results that would
// need Python's big integers are reported as errors instead of wrapping.
#include "text/jinja/jinja_ops.h"

#include <cmath>

#include "text/jinja/jinja_budget.h"
#include "text/jinja/jinja_builtins.h"

namespace qwenrt::jinja {
namespace {

bool IsIntLike(const Value& v) { return v.is_int() || v.is_bool(); }
int64_t IntOf(const Value& v) { return v.is_int() ? v.AsInt() : static_cast<int64_t>(v.AsBool()); }

Status Unsupported(std::string_view op, const Value& a, const Value& b) {
  return InvalidArgument("unsupported operand type(s) for {}: '{}' and '{}'", op, a.TypeName(),
                         b.TypeName());
}

Status Overflow() {
  return InvalidArgument("integer overflow (values beyond 64 bits are not supported)");
}

StatusOr<Value> Repeat(const Value& seq, int64_t n) {
  if (n <= 0)
    return seq.is_string() ? Value::String("") : Value::MakeList({}, seq.AsList().is_tuple);
  if (seq.is_string()) {
    const std::string& s = seq.AsString();
    const uint64_t bytes = SaturatingMul(s.size(), static_cast<uint64_t>(n));
    QWENRT_RETURN_IF_ERROR(CheckStringSize(bytes));
    QWENRT_RETURN_IF_ERROR(ChargeWork(bytes));
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out += s;
    return Value::String(std::move(out));
  }
  const auto& items = seq.AsList().items;
  const uint64_t total = SaturatingMul(items.size(), static_cast<uint64_t>(n));
  QWENRT_RETURN_IF_ERROR(CheckListSize(total));
  QWENRT_RETURN_IF_ERROR(ChargeWork(SaturatingMul(total, kCostPerItem)));
  std::vector<Value> out;
  out.reserve(items.size() * static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::MakeList(std::move(out), seq.AsList().is_tuple);
}

double PyFloatMod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

}  // namespace

StatusOr<Value> BinaryOp(std::string_view op, const Value& a, const Value& b) {
  if (op == "%" && a.is_string() && b.is_undefined()) {
    // str.__mod__ runs first and treats Undefined (it has __getitem__) as a mapping.
    return PercentFormat(a.AsString(), {b}, /*strict_count=*/false);
  }
  if (a.is_undefined())
    return InvalidArgument("{}",
                           a.undefined_hint().empty() ? "value is undefined" : a.undefined_hint());
  if (b.is_undefined())
    return InvalidArgument("{}",
                           b.undefined_hint().empty() ? "value is undefined" : b.undefined_hint());
  const bool nums = a.is_number() && b.is_number();
  const bool ints = IsIntLike(a) && IsIntLike(b);
  if (op == "+") {
    if (ints) {
      int64_t r;
      if (__builtin_add_overflow(IntOf(a), IntOf(b), &r)) return Overflow();
      return Value::Int(r);
    }
    if (nums) return Value::Float(a.ToDouble() + b.ToDouble());
    if (a.is_string()) {
      if (!b.is_string())
        return InvalidArgument("can only concatenate str (not \"{}\") to str", b.TypeName());
      const uint64_t bytes = a.AsString().size() + b.AsString().size();
      QWENRT_RETURN_IF_ERROR(CheckStringSize(bytes));
      QWENRT_RETURN_IF_ERROR(ChargeWork(bytes));
      return Value::String(a.AsString() + b.AsString());
    }
    if (a.is_list()) {
      if (!b.is_list() || b.AsList().is_tuple != a.AsList().is_tuple) {
        return InvalidArgument("can only concatenate {} (not \"{}\") to {}", a.TypeName(),
                               b.TypeName(), a.TypeName());
      }
      const uint64_t total = a.AsList().items.size() + b.AsList().items.size();
      QWENRT_RETURN_IF_ERROR(CheckListSize(total));
      QWENRT_RETURN_IF_ERROR(ChargeWork(total * kCostPerItem));
      std::vector<Value> items = a.AsList().items;
      items.insert(items.end(), b.AsList().items.begin(), b.AsList().items.end());
      return Value::MakeList(std::move(items), a.AsList().is_tuple);
    }
    return Unsupported(op, a, b);
  }
  if (op == "-") {
    if (ints) {
      int64_t r;
      if (__builtin_sub_overflow(IntOf(a), IntOf(b), &r)) return Overflow();
      return Value::Int(r);
    }
    if (nums) return Value::Float(a.ToDouble() - b.ToDouble());
    return Unsupported(op, a, b);
  }
  if (op == "*") {
    if (ints) {
      int64_t r;
      if (__builtin_mul_overflow(IntOf(a), IntOf(b), &r)) return Overflow();
      return Value::Int(r);
    }
    if (nums) return Value::Float(a.ToDouble() * b.ToDouble());
    if ((a.is_string() || a.is_list()) && IsIntLike(b)) return Repeat(a, IntOf(b));
    if ((b.is_string() || b.is_list()) && IsIntLike(a)) return Repeat(b, IntOf(a));
    if (a.is_string() || a.is_list() || b.is_string() || b.is_list()) {
      const Value& other = (a.is_string() || a.is_list()) ? b : a;
      return InvalidArgument("can't multiply sequence by non-int of type '{}'", other.TypeName());
    }
    return Unsupported(op, a, b);
  }
  if (op == "/") {
    if (!nums) return Unsupported(op, a, b);
    if (b.ToDouble() == 0.0) return InvalidArgument("division by zero");
    return Value::Float(a.ToDouble() / b.ToDouble());
  }
  if (op == "//") {
    if (!nums) return Unsupported(op, a, b);
    if (ints) {
      const int64_t x = IntOf(a), y = IntOf(b);
      if (y == 0) return InvalidArgument("integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) return Overflow();
      int64_t q = x / y;
      if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
      return Value::Int(q);
    }
    if (b.ToDouble() == 0.0) return InvalidArgument("float floor division by zero");
    return Value::Float(std::floor(a.ToDouble() / b.ToDouble()));
  }
  if (op == "%") {
    if (a.is_string()) {
      // printf-style formatting, the arguments being a tuple or a single value.
      if (b.is_list() && b.AsList().is_tuple)
        return PercentFormat(a.AsString(), b.AsList().items, true);
      return PercentFormat(a.AsString(), {b}, /*strict_count=*/!(b.is_list() || b.is_dict()));
    }
    if (!nums) return Unsupported(op, a, b);
    if (ints) {
      const int64_t x = IntOf(a), y = IntOf(b);
      if (y == 0) return InvalidArgument("integer modulo by zero");
      if (y == -1) return Value::Int(0);
      int64_t m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      return Value::Int(m);
    }
    if (b.ToDouble() == 0.0) return InvalidArgument("float modulo");
    return Value::Float(PyFloatMod(a.ToDouble(), b.ToDouble()));
  }
  if (op == "**") {
    if (!nums)
      return InvalidArgument("unsupported operand type(s) for ** or pow(): '{}' and '{}'",
                             a.TypeName(), b.TypeName());
    if (ints && IntOf(b) >= 0) {
      int64_t base = IntOf(a), e = IntOf(b), r = 1;
      while (e > 0) {
        if (e & 1) {
          if (__builtin_mul_overflow(r, base, &r)) return Overflow();
        }
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(base, base, &base)) return Overflow();
      }
      return Value::Int(r);
    }
    if (a.ToDouble() == 0.0 && b.ToDouble() < 0)
      return InvalidArgument("0.0 cannot be raised to a negative power");
    return Value::Float(std::pow(a.ToDouble(), b.ToDouble()));
  }
  return InvalidArgument("unknown operator '{}'", op);
}

StatusOr<Value> UnaryOp(std::string_view op, const Value& v) {
  if (v.is_undefined())
    return InvalidArgument("{}",
                           v.undefined_hint().empty() ? "value is undefined" : v.undefined_hint());
  if (IsIntLike(v)) {
    if (op == "+") return Value::Int(IntOf(v));
    if (IntOf(v) == INT64_MIN) return Overflow();
    return Value::Int(-IntOf(v));
  }
  if (v.is_float()) return Value::Float(op == "-" ? -v.AsFloat() : v.AsFloat());
  return InvalidArgument("bad operand type for unary {}: '{}'", op, v.TypeName());
}

StatusOr<bool> CompareOp(std::string_view op, const Value& a, const Value& b) {
  if (op == "==") return Equals(a, b);
  if (op == "!=") return !Equals(a, b);
  if (op == "in" || op == "not in") {
    QWENRT_ASSIGN_OR_RETURN(bool in, Contains(b, a));
    return op == "in" ? in : !in;
  }
  for (const Value* v : {&a, &b}) {
    if (v->is_undefined()) {
      return InvalidArgument(
          "{}", v->undefined_hint().empty() ? "value is undefined" : v->undefined_hint());
    }
  }
  QWENRT_ASSIGN_OR_RETURN(int c, Compare(a, b, op));
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;
}

}  // namespace qwenrt::jinja
