// Thread-local last-error storage behind `qwenrt_last_error()`.
#include "last_error.h"

#include <fmt/format.h>

#include <string>

namespace qwenrt::capi {
namespace {

// One per thread: "qwenrt_model_load: IO: cannot open ...". A failure to store the text (bad_alloc)
// switches to a static fallback so that reporting an error never becomes a second error.
thread_local std::string t_last_error;
thread_local const char* t_fallback = nullptr;

}  // namespace

void ClearLastError() {
  t_last_error.clear();
  t_fallback = nullptr;
}

void SetLastError(std::string_view function, std::string_view code_name,
                  std::string_view message) noexcept {
  try {
    std::string text = message.empty() ? fmt::format("{}: {}", function, code_name)
                                       : fmt::format("{}: {}: {}", function, code_name, message);
    t_last_error.swap(text);
    t_fallback = nullptr;
  } catch (...) {
    t_fallback = "OUT_OF_MEMORY: could not store the error message";
  }
}

const char* LastError() noexcept {
  return t_fallback != nullptr ? t_fallback : t_last_error.c_str();
}

}  // namespace qwenrt::capi
