// GuardAlloc: the library's one shape of allocation guard. Code that allocates through the
// standard library (vectors, strings, shared_ptr) may throw std::bad_alloc; the library never lets
// an exception reach its caller, so each such step runs in GuardAlloc, which turns the throw into
// an OutOfMemory status naming what was being allocated.
#pragma once

#include <fmt/format.h>

#include <new>
#include <type_traits>
#include <utility>

#include "base/status.h"

namespace qwenrt {

// Runs `body` and returns what it returns (a Status or a StatusOr<T>; a body returning nothing
// gives OkStatus()); a std::bad_alloc thrown by it gives OutOfMemory(message, args...) instead.
// The message is formatted only then, from the arguments as they are at that moment (references:
// pass them in the call, not from a stored guard). Other exceptions pass through unchanged.
//
//   return GuardAlloc([&]() -> StatusOr<Table> { ... }, "out of memory for {} rows", n);
template <typename Body, typename... Args>
auto GuardAlloc(Body&& body, fmt::format_string<Args...> message, Args&&... args) {
  using R = std::invoke_result_t<Body&>;
  if constexpr (std::is_void_v<R>) {
    try {
      body();
    } catch (const std::bad_alloc&) {
      return OutOfMemory(message, std::forward<Args>(args)...);
    }
    return OkStatus();
  } else {
    static_assert(std::is_constructible_v<R, Status>,
                  "GuardAlloc: body returns Status or StatusOr");
    try {
      return body();
    } catch (const std::bad_alloc&) {
      return R(OutOfMemory(message, std::forward<Args>(args)...));
    }
  }
}

}  // namespace qwenrt
