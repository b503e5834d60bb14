// Typed metadata access for the model loader on top of gguf.hpp: exact-type getters that turn a
// missing or wrongly typed key into a BadFormat Status naming the key, and small readers for the
// integer arrays/scalars of the architecture keys.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "qwenrt/gguf.hpp"

namespace qwenrt::meta {

// "u32", "array[5] of i32", ...
inline std::string Describe(const gguf::Value& v) {
  if (v.type() != gguf::ValueType::ARRAY) return gguf::ValueTypeName(v.type());
  return fmt::format("array[{}] of {}", v.size(), gguf::ValueTypeName(v.element_type()));
}

// Integer/bool scalar as int64 (0 for other types).
inline int64_t ScalarInt(const gguf::Value& v) {
  switch (v.type()) {
    case gguf::ValueType::BOOL:
      return v.AsBool() ? 1 : 0;
    case gguf::ValueType::U8:
      return v.AsU8();
    case gguf::ValueType::I8:
      return v.AsI8();
    case gguf::ValueType::U16:
      return v.AsU16();
    case gguf::ValueType::I16:
      return v.AsI16();
    case gguf::ValueType::U32:
      return v.AsU32();
    case gguf::ValueType::I32:
      return v.AsI32();
    case gguf::ValueType::U64:
      return static_cast<int64_t>(v.AsU64());
    case gguf::ValueType::I64:
      return v.AsI64();
    default:
      return 0;
  }
}

// Element i of an integer/bool array as int64 (0 for other element types).
inline int64_t ArrayInt(const gguf::Value& v, uint64_t i) {
  switch (v.element_type()) {
    case gguf::ValueType::BOOL:
      return v.At<bool>(i) ? 1 : 0;
    case gguf::ValueType::U8:
      return v.At<uint8_t>(i);
    case gguf::ValueType::I8:
      return v.At<int8_t>(i);
    case gguf::ValueType::U16:
      return v.At<uint16_t>(i);
    case gguf::ValueType::I16:
      return v.At<int16_t>(i);
    case gguf::ValueType::U32:
      return v.At<uint32_t>(i);
    case gguf::ValueType::I32:
      return v.At<int32_t>(i);
    case gguf::ValueType::U64:
      return static_cast<int64_t>(v.At<uint64_t>(i));
    case gguf::ValueType::I64:
      return v.At<int64_t>(i);
    default:
      return 0;
  }
}

template <typename T>
Status GetScalar(const gguf::File& f, const std::string& key, bool required, T dflt, T* out) {
  const gguf::Value* v = f.Find(key);
  if (v == nullptr) {
    if (required) return BadFormat("missing required key '{}'", key);
    *out = dflt;
    return OkStatus();
  }
  if (!v->Is<T>()) {
    return BadFormat("key '{}' has type {}, expected {}", key, Describe(*v),
                     gguf::ValueTypeName(gguf::ValueTypeOf<T>::value));
  }
  *out = v->As<T>();
  return OkStatus();
}

inline Status GetU32(const gguf::File& f, const std::string& key, bool required, uint32_t dflt,
                     uint32_t* out) {
  return GetScalar<uint32_t>(f, key, required, dflt, out);
}
inline Status GetF32(const gguf::File& f, const std::string& key, bool required, float dflt,
                     float* out) {
  return GetScalar<float>(f, key, required, dflt, out);
}
inline Status GetBool(const gguf::File& f, const std::string& key, bool required, bool dflt,
                      bool* out) {
  return GetScalar<bool>(f, key, required, dflt, out);
}
inline Status GetString(const gguf::File& f, const std::string& key, bool required,
                        const std::string& dflt, std::string* out) {
  const gguf::Value* v = f.Find(key);
  if (v == nullptr) {
    if (required) return BadFormat("missing required key '{}'", key);
    *out = dflt;
    return OkStatus();
  }
  if (v->type() != gguf::ValueType::STRING) {
    return BadFormat("key '{}' has type {}, expected string", key, Describe(*v));
  }
  *out = std::string(v->AsString());
  return OkStatus();
}

}  // namespace qwenrt::meta
