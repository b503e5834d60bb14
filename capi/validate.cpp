// The struct_size rule and UTF-8 validation for the C ABI (see docs/c-abi.md).
#include "validate.h"

#include "qwenrt/qwenrt.h"

namespace qwenrt::capi {

Status CheckStructSize(uint32_t struct_size, size_t known_size, const char* what,
                       const char* type) {
  if (struct_size == 0) {
    return InvalidArgument(
        "{}->struct_size is 0: initialise the {} with its default function or set "
        "struct_size = sizeof({})",
        what, type, type);
  }
  if (struct_size < sizeof(uint32_t) || struct_size % sizeof(uint32_t) != 0 ||
      struct_size > kMaxStructSize) {
    return InvalidArgument(
        "{}->struct_size {} is not the size of any version of {} (this library's "
        "is {})",
        what, struct_size, type, known_size);
  }
  return OkStatus();
}

Status ReadStruct(const void* in, const void* defaults, void* out, size_t known_size,
                  std::initializer_list<FieldSpan> fields, const char* what, const char* type) {
  std::memcpy(out, defaults, known_size);
  if (in == nullptr) return OkStatus();
  uint32_t size = 0;
  std::memcpy(&size, in, sizeof size);
  QWENRT_RETURN_IF_ERROR(CheckStructSize(size, known_size, what, type));
  const auto* bytes = static_cast<const unsigned char*>(in);
  for (size_t i = known_size; i < size; ++i) {
    if (bytes[i] != 0) {
      return InvalidArgument(
          "{}->struct_size {} is larger than this library's {} ({} bytes) and byte "
          "{} is not zero: the struct has fields this library version does not know "
          "(library {}, ABI {})",
          what, size, type, known_size, i, QWENRT_VERSION_STRING, QWENRT_ABI_VERSION);
    }
  }
  auto* dst = static_cast<unsigned char*>(out);
  for (const FieldSpan& f : fields) {
    if (f.offset + f.size <= size && size >= f.since) {
      std::memcpy(dst + f.offset, bytes + f.offset, f.size);
    }
  }
  std::memcpy(dst, &size, sizeof size);  // keep the caller's struct_size (its version)
  return OkStatus();
}

Status InitStruct(void* p, const void* defaults, size_t known_size, size_t first_size,
                  const char* type) {
  if (p == nullptr) return InvalidArgument("params is NULL");
  uint32_t size = 0;
  std::memcpy(&size, p, sizeof size);
  if (size == 0) {
    return InvalidArgument(
        "params->struct_size is 0: set it to sizeof({}) before the call (QWENRT_INIT does)", type);
  }
  if (size < first_size) {
    return InvalidArgument(
        "params->struct_size {} is smaller than the first version of {} ({} bytes; this "
        "library's is {}): set it to sizeof({})",
        size, type, first_size, known_size, type);
  }
  return WriteStruct(defaults, p, known_size, "params", type);
}

Status WriteStruct(const void* value, void* out, size_t known_size, const char* what,
                   const char* type) {
  uint32_t size = 0;
  std::memcpy(&size, out, sizeof size);
  QWENRT_RETURN_IF_ERROR(CheckStructSize(size, known_size, what, type));
  auto* dst = static_cast<unsigned char*>(out);
  const auto* src = static_cast<const unsigned char*>(value);
  size_t n = size < known_size ? size : known_size;
  if (n > sizeof size) std::memcpy(dst + sizeof size, src + sizeof size, n - sizeof size);
  if (size > known_size) std::memset(dst + known_size, 0, size - known_size);
  return OkStatus();
}

size_t FindInvalidUtf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return i;  // continuation byte, 0xC0/0xC1 (overlong) or 0xF5.. (past U+10FFFF)
    }
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return i;
    }
    i += len;
  }
  return std::string_view::npos;
}

Status CheckUtf8(std::string_view text, const char* what) {
  size_t bad = FindInvalidUtf8(text);
  if (bad == std::string_view::npos) return OkStatus();
  return InvalidArgument("{} is not valid UTF-8 (byte 0x{:02X} at offset {})", what,
                         static_cast<unsigned>(static_cast<unsigned char>(text[bad])), bad);
}

Status CheckCString(const char* text, const char* what, bool null_ok) {
  if (text == nullptr) {
    if (null_ok) return OkStatus();
    return InvalidArgument("{} is NULL", what);
  }
  return CheckUtf8(text, what);
}

Status CopyString(std::string_view text, char* buf, size_t capacity, size_t* needed) {
  *needed = text.size() + 1;
  if (capacity < text.size() + 1) {
    return BufferTooSmall("{} bytes (with the terminating NUL) do not fit in capacity {}",
                          text.size() + 1, capacity);
  }
  if (!text.empty()) std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  return OkStatus();
}

}  // namespace qwenrt::capi
