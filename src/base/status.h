// Status and StatusOr<T>: how every fallible qwenrt operation reports failure (no exceptions cross
// module boundaries, nothing aborts). Codes mirror `qwenrt_status` in the C ABI one to one.
#pragma once

#include <fmt/format.h>

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace qwenrt {

// Keep in sync with `qwenrt_status` in include/qwenrt/qwenrt.h (same numeric values).
enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,
  kIo = 2,
  kBadFormat = 3,
  kUnsupported = 4,
  kOutOfMemory = 5,
  kContextFull = 6,
  kBufferTooSmall = 7,
  kDevice = 8,
  kCancelled = 9,
  kInternal = 10,
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "BAD_FORMAT: tensor 'blk.0.attn_qkv.weight' has shape ..." (or "OK").
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }

// fmt-style constructors: `return BadFormat("tensor '{}' missing", name);`
#define QWENRT_DEFINE_STATUS_MAKER(Name, Code)                                    \
  template <typename... Args>                                                     \
  Status Name(fmt::format_string<Args...> f, Args&&... args) {                    \
    return Status(StatusCode::Code, fmt::format(f, std::forward<Args>(args)...)); \
  }
QWENRT_DEFINE_STATUS_MAKER(InvalidArgument, kInvalidArgument)
QWENRT_DEFINE_STATUS_MAKER(IoError, kIo)
QWENRT_DEFINE_STATUS_MAKER(BadFormat, kBadFormat)
QWENRT_DEFINE_STATUS_MAKER(Unsupported, kUnsupported)
QWENRT_DEFINE_STATUS_MAKER(OutOfMemory, kOutOfMemory)
QWENRT_DEFINE_STATUS_MAKER(ContextFull, kContextFull)
QWENRT_DEFINE_STATUS_MAKER(BufferTooSmall, kBufferTooSmall)
QWENRT_DEFINE_STATUS_MAKER(DeviceError, kDevice)
QWENRT_DEFINE_STATUS_MAKER(Cancelled, kCancelled)
QWENRT_DEFINE_STATUS_MAKER(InternalError, kInternal)
#undef QWENRT_DEFINE_STATUS_MAKER

// A value or an error Status. Access the value only after checking ok().
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT
  StatusOr(T value) : value_(std::move(value)) {}                                  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace qwenrt

#define QWENRT_STATUS_CONCAT_INNER(a, b) a##b
#define QWENRT_STATUS_CONCAT(a, b) QWENRT_STATUS_CONCAT_INNER(a, b)

// Returns from the enclosing function when `expr` (a Status) is not OK.
#define QWENRT_RETURN_IF_ERROR(expr)                         \
  do {                                                       \
    ::qwenrt::Status qwenrt_status_tmp_ = (expr);            \
    if (!qwenrt_status_tmp_.ok()) return qwenrt_status_tmp_; \
  } while (0)

// `QWENRT_ASSIGN_OR_RETURN(auto x, MakeX());` declares x from a StatusOr or returns its error.
#define QWENRT_ASSIGN_OR_RETURN(lhs, expr) \
  QWENRT_ASSIGN_OR_RETURN_IMPL(QWENRT_STATUS_CONCAT(qwenrt_statusor_, __LINE__), lhs, expr)
#define QWENRT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
