// Argument checks shared by the C ABI shims: the struct_size rule for params and out-structs, and
// UTF-8 validation of text coming from the host. Error texts name the offending argument.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>

#include "base/status.h"

namespace qwenrt::capi {

// Where one field of a C struct lies; a table of these lets an older (smaller) struct be read field
// by field, so that a field only partly covered by the caller's struct_size keeps its default.
// `since`: the size of the first version of the struct that has the field (0 for the first
// version's fields). A field appended in a later version may start inside the tail padding of an
// older version (a bool at the end leaves padding), so lying within the caller's struct_size is not
// enough: the caller's struct must be at least that later version.
struct FieldSpan {
  size_t offset;
  size_t size;
  size_t since;
};
#define QWENRT_FIELD(Type, field) \
  ::qwenrt::capi::FieldSpan { offsetof(Type, field), sizeof(static_cast<Type*>(nullptr)->field), 0 }
// A field added after the first version; `since` is the size of the version that added it.
#define QWENRT_FIELD_SINCE(Type, field, since)                               \
  ::qwenrt::capi::FieldSpan {                                                \
    offsetof(Type, field), sizeof(static_cast<Type*>(nullptr)->field), since \
  }

// Largest struct_size accepted; anything bigger is taken for an uninitialised field.
inline constexpr uint32_t kMaxStructSize = 4096;

// Checks a struct_size value seen in `what` (e.g. "params"): at least the struct_size field itself,
// a multiple of 4 (every struct starts with a uint32_t, so its sizeof is), at most kMaxStructSize.
Status CheckStructSize(uint32_t struct_size, size_t known_size, const char* what, const char* type);

// Reads a caller's params struct into `*out`: `*out` starts as `defaults`; fields that lie entirely
// within the caller's struct_size are copied; bytes past sizeof(T) must be zero (a newer header's
// fields left at zero), otherwise INVALID_ARGUMENT. `in` may be null (defaults).
Status ReadStruct(const void* in, const void* defaults, void* out, size_t known_size,
                  std::initializer_list<FieldSpan> fields, const char* what, const char* type);

template <typename T>
Status ReadParams(const T* in, const T& defaults, T* out, std::initializer_list<FieldSpan> fields,
                  const char* what, const char* type) {
  return ReadStruct(in, &defaults, out, sizeof(T), fields, what, type);
}

// A params `*_init` function: checks the caller's struct_size (non-zero, at least `first_size`, the
// size of the struct's first version, and the CheckStructSize rule), then writes `defaults` into
// the bytes it covers (struct_size itself kept) and zeroes those past sizeof(T). `p` may be null
// (INVALID_ARGUMENT).
Status InitStruct(void* p, const void* defaults, size_t known_size, size_t first_size,
                  const char* type);

template <typename T>
Status InitParams(T* p, const T& defaults, size_t first_size, const char* type) {
  return InitStruct(p, &defaults, sizeof(T), first_size, type);
}

// Writes `value` into a caller's out-struct whose struct_size the caller set: the bytes that fit
// are written (struct_size itself is kept), bytes past sizeof(T) are zeroed. `out` must not be
// null.
Status WriteStruct(const void* value, void* out, size_t known_size, const char* what,
                   const char* type);

template <typename T>
Status WriteOut(const T& value, T* out, const char* what, const char* type) {
  return WriteStruct(&value, out, sizeof(T), what, type);
}

// The integer a C caller stored in an enum field or argument. Read through memcpy: in C++, loading
// an enum object that holds a value outside its enumerators' range is undefined, and C callers can
// pass any int. Validate with this before using the enum.
template <typename E>
int EnumValue(const E& e) {
  static_assert(sizeof(E) == sizeof(int), "C enums are int-sized");
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

// Offset of the first invalid byte of `text` as UTF-8 (overlong forms, surrogates, code points past
// U+10FFFF and truncated sequences are invalid), or npos when it is valid.
size_t FindInvalidUtf8(std::string_view text);

// INVALID_ARGUMENT naming `what` and the byte offset when `text` is not valid UTF-8.
Status CheckUtf8(std::string_view text, const char* what);

// A C string argument: null is allowed (as "") only when `null_ok`; the text must be valid UTF-8.
Status CheckCString(const char* text, const char* what, bool null_ok);

// Copies `text` and a NUL into a caller buffer: *needed = text.size() + 1 always; BUFFER_TOO_SMALL
// when capacity is less. `needed` must not be null; `buf` may be null only with capacity 0.
Status CopyString(std::string_view text, char* buf, size_t capacity, size_t* needed);

// Copies `n` elements into a caller array: *count = n always; BUFFER_TOO_SMALL when capacity < n.
template <typename T>
Status CopyArray(const T* src, size_t n, T* dst, size_t capacity, size_t* count, const char* what) {
  *count = n;
  if (n > capacity) return BufferTooSmall("{} {} do not fit in capacity {}", n, what, capacity);
  if (n > 0) std::memcpy(dst, src, n * sizeof(T));
  return OkStatus();
}

}  // namespace qwenrt::capi
