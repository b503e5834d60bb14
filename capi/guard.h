// The one boundary helper every exported function runs its body through: it catches everything,
// turns a `Status` into a `qwenrt_status` plus the thread's last-error text, and so guarantees that
// no C++ exception crosses the C ABI.
#pragma once

#include <exception>
#include <new>
#include <string_view>
#include <type_traits>

#include "base/status.h"
#include "last_error.h"
#include "qwenrt/qwenrt.h"

namespace qwenrt::capi {

#define QWENRT_CAPI_SAME_CODE(c, k) \
  static_assert(static_cast<int>(c) == static_cast<int>(StatusCode::k), #c " != StatusCode::" #k)
QWENRT_CAPI_SAME_CODE(QWENRT_OK, kOk);
QWENRT_CAPI_SAME_CODE(QWENRT_INVALID_ARGUMENT, kInvalidArgument);
QWENRT_CAPI_SAME_CODE(QWENRT_IO, kIo);
QWENRT_CAPI_SAME_CODE(QWENRT_BAD_FORMAT, kBadFormat);
QWENRT_CAPI_SAME_CODE(QWENRT_UNSUPPORTED, kUnsupported);
QWENRT_CAPI_SAME_CODE(QWENRT_OUT_OF_MEMORY, kOutOfMemory);
QWENRT_CAPI_SAME_CODE(QWENRT_CONTEXT_FULL, kContextFull);
QWENRT_CAPI_SAME_CODE(QWENRT_BUFFER_TOO_SMALL, kBufferTooSmall);
QWENRT_CAPI_SAME_CODE(QWENRT_DEVICE, kDevice);
QWENRT_CAPI_SAME_CODE(QWENRT_CANCELLED, kCancelled);
QWENRT_CAPI_SAME_CODE(QWENRT_INTERNAL, kInternal);
#undef QWENRT_CAPI_SAME_CODE

// Records `status` (when not OK) as the calling thread's last error, prefixed with `function`, and
// returns the matching C code.
inline qwenrt_status Report(const char* function, const Status& status) noexcept {
  if (!status.ok()) SetLastError(function, StatusCodeName(status.code()), status.message());
  return static_cast<qwenrt_status>(status.code());
}

// Runs `body` (returning `Status`) as the exported function `function`. bad_alloc becomes
// QWENRT_OUT_OF_MEMORY; any other exception QWENRT_INTERNAL with its text.
template <typename Body>
qwenrt_status Guard(const char* function, Body&& body) noexcept {
  ClearLastError();
  try {
    return Report(function, body());
  } catch (const std::bad_alloc&) {
    SetLastError(function, "OUT_OF_MEMORY", "allocation failed");
    return QWENRT_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    SetLastError(function, "INTERNAL", e.what());
    return QWENRT_INTERNAL;
  } catch (...) {
    SetLastError(function, "INTERNAL", "unknown exception");
    return QWENRT_INTERNAL;
  }
}

// For the few exported functions that return a plain value instead of a status (predicates, counts,
// frees): `body` returns T and reports its own errors with `Report`; an exception gives `fallback`.
template <typename T, typename Body>
T GuardValue(const char* function, T fallback, Body&& body) noexcept {
  ClearLastError();
  try {
    return body();
  } catch (const std::bad_alloc&) {
    SetLastError(function, "OUT_OF_MEMORY", "allocation failed");
  } catch (const std::exception& e) {
    SetLastError(function, "INTERNAL", e.what());
  } catch (...) {
    SetLastError(function, "INTERNAL", "unknown exception");
  }
  return fallback;
}

}  // namespace qwenrt::capi
