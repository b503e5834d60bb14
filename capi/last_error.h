// Thread-local text of the calling thread's last failed qwenrt call (what `qwenrt_last_error()`
// returns). Only the C ABI shims write it; the core reports errors as `Status` values.
#pragma once

#include <string_view>

namespace qwenrt::capi {

// Empties the calling thread's last error (done when a guarded call starts).
void ClearLastError();

// Replaces the calling thread's last error. Never throws: if the text cannot be stored, a static
// "out of memory" text is used instead.
void SetLastError(std::string_view function, std::string_view code_name,
                  std::string_view message) noexcept;

// The calling thread's last error; never null; valid until the next Clear/Set on this thread.
const char* LastError() noexcept;

}  // namespace qwenrt::capi
