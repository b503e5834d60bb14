// qwenrt/gguf_writer.hpp: header-only writer of GGUF v3 files (layout: see gguf.hpp), to a byte
// vector or a file. Tests use it to build valid and deliberately malformed files in memory; tools
// use it to write synthetic models and vocab-only files. It does not quantize: tensor bytes are
// given already in their block format.
//
// Usage:
//   qwenrt::gguf::Writer w;                      // alignment 32 (else general.alignment is added)
//   w.AddString("general.architecture", "qwen35");
//   w.AddU32("qwen35.block_count", 4);
//   w.AddStringArray("tokenizer.ggml.tokens", {"a", "b"});
//   w.AddTensor("output_norm.weight", qwenrt::gguf::Type::F32, {64}, norm.data(), 64 * 4);
//   qwenrt::gguf::Error err;
//   std::vector<uint8_t> bytes;
//   if (!w.WriteToBuffer(&bytes, &err)) ...
//
// Errors are sticky: the Add* calls record the first problem (e.g. a byte count that does not match
// the tensor's shape) and WriteToBuffer/WriteToFile report it. The Raw variants skip all checks so
// tests can produce invalid records. Thread safety: one thread per Writer.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "qwenrt/gguf.hpp"

namespace qwenrt {
namespace gguf {

class Writer {
 public:
  // `alignment` pads the tensor-info section and every tensor; a value other than 32 is recorded
  // as the u32 key general.alignment (added first).
  explicit Writer(uint32_t alignment = kDefaultAlignment) : alignment_(alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
      SetError(ErrorCode::kBadAlignment,
               detail::Format("alignment %u is not a non-zero power of two", alignment));
      alignment_ = kDefaultAlignment;
    } else if (alignment != kDefaultAlignment) {
      AddU32("general.alignment", alignment);
    }
  }

  // Header version written (default 3); tests set other values.
  void set_version(uint32_t v) { version_ = v; }
  uint32_t alignment() const { return alignment_; }

  // ---- metadata (keys are written in the order added; duplicates are the caller's business)
  void AddU8(std::string_view key, uint8_t v) { AddScalar(key, ValueType::U8, &v, 1); }
  void AddI8(std::string_view key, int8_t v) { AddScalar(key, ValueType::I8, &v, 1); }
  void AddU16(std::string_view key, uint16_t v) { AddScalar(key, ValueType::U16, &v, 2); }
  void AddI16(std::string_view key, int16_t v) { AddScalar(key, ValueType::I16, &v, 2); }
  void AddU32(std::string_view key, uint32_t v) { AddScalar(key, ValueType::U32, &v, 4); }
  void AddI32(std::string_view key, int32_t v) { AddScalar(key, ValueType::I32, &v, 4); }
  void AddF32(std::string_view key, float v) { AddScalar(key, ValueType::F32, &v, 4); }
  void AddU64(std::string_view key, uint64_t v) { AddScalar(key, ValueType::U64, &v, 8); }
  void AddI64(std::string_view key, int64_t v) { AddScalar(key, ValueType::I64, &v, 8); }
  void AddF64(std::string_view key, double v) { AddScalar(key, ValueType::F64, &v, 8); }
  void AddBool(std::string_view key, bool v) {
    uint8_t b = v ? 1 : 0;
    AddScalar(key, ValueType::BOOL, &b, 1);
  }
  void AddString(std::string_view key, std::string_view v) {
    std::vector<uint8_t> payload;
    PutString(&payload, v);
    AddRaw(key, static_cast<uint32_t>(ValueType::STRING), std::move(payload));
  }

  // Arrays of fixed-size elements: T is one of uint8_t ... double (bool via AddBoolArray).
  template <typename T>
  void AddArray(std::string_view key, const std::vector<T>& v) {
    static_assert(!std::is_same<T, bool>::value, "use AddBoolArray");
    std::vector<uint8_t> payload;
    PutPod(&payload, static_cast<int32_t>(ValueTypeOf<T>::value));
    PutPod(&payload, static_cast<uint64_t>(v.size()));
    const uint8_t* p = reinterpret_cast<const uint8_t*>(v.data());
    payload.insert(payload.end(), p, p + v.size() * sizeof(T));
    AddRaw(key, static_cast<uint32_t>(ValueType::ARRAY), std::move(payload));
  }
  void AddU32Array(std::string_view key, const std::vector<uint32_t>& v) { AddArray(key, v); }
  void AddI32Array(std::string_view key, const std::vector<int32_t>& v) { AddArray(key, v); }
  void AddF32Array(std::string_view key, const std::vector<float>& v) { AddArray(key, v); }
  void AddBoolArray(std::string_view key, const std::vector<bool>& v) {
    std::vector<uint8_t> payload;
    PutPod(&payload, static_cast<int32_t>(ValueType::BOOL));
    PutPod(&payload, static_cast<uint64_t>(v.size()));
    for (bool b : v) payload.push_back(b ? 1 : 0);
    AddRaw(key, static_cast<uint32_t>(ValueType::ARRAY), std::move(payload));
  }
  template <typename S>  // S: std::string or std::string_view
  void AddStringArray(std::string_view key, const std::vector<S>& v) {
    std::vector<uint8_t> payload;
    PutPod(&payload, static_cast<int32_t>(ValueType::STRING));
    PutPod(&payload, static_cast<uint64_t>(v.size()));
    for (const S& s : v) PutString(&payload, std::string_view(s));
    AddRaw(key, static_cast<uint32_t>(ValueType::ARRAY), std::move(payload));
  }
  void AddStringArray(std::string_view key, std::initializer_list<std::string_view> v) {
    AddStringArray(key, std::vector<std::string_view>(v));
  }

  // A KV record with any type id and an already-encoded payload (what follows the type id). For
  // building malformed files.
  void AddRaw(std::string_view key, uint32_t value_type, std::vector<uint8_t> payload) {
    Kv kv;
    PutString(&kv.bytes, key);
    PutPod(&kv.bytes, value_type);
    kv.bytes.insert(kv.bytes.end(), payload.begin(), payload.end());
    kvs_.push_back(std::move(kv));
  }

  // ---- tensors (written in the order added; offsets are the running padded sum)
  // Copies `nbytes` bytes; they must equal the size the type and shape imply (else a sticky error).
  void AddTensor(std::string_view name, Type type, const std::vector<int64_t>& ne, const void* data,
                 uint64_t nbytes) {
    if (!CheckTensor(name, type, ne, nbytes)) return;
    const uint8_t* p = static_cast<const uint8_t*>(data);
    AddTensorRaw(name, static_cast<uint32_t>(type), ne, std::vector<uint8_t>(p, p + nbytes));
  }
  // Like AddTensor but borrows `data`: it must stay valid until the last Write call. For large
  // synthetic models written with WriteToFile.
  void AddTensorView(std::string_view name, Type type, const std::vector<int64_t>& ne,
                     const void* data, uint64_t nbytes) {
    if (!CheckTensor(name, type, ne, nbytes)) return;
    Tensor t;
    t.name = std::string(name);
    t.type = static_cast<uint32_t>(type);
    t.ne = ne;
    t.view = static_cast<const uint8_t*>(data);
    t.nbytes = nbytes;
    tensors_.push_back(std::move(t));
  }
  // No checks: any type id, shape and byte count; `offset` overrides the recorded data offset
  // (the bytes are still written at the running padded position). For malformed files.
  void AddTensorRaw(std::string_view name, uint32_t type_id, const std::vector<int64_t>& ne,
                    std::vector<uint8_t> data, std::optional<uint64_t> offset = std::nullopt) {
    Tensor t;
    t.name = std::string(name);
    t.type = type_id;
    t.ne = ne;
    t.owned = std::move(data);
    t.nbytes = t.owned.size();
    t.offset_override = offset;
    tensors_.push_back(std::move(t));
  }

  // Bytes a tensor of `type` and shape `ne` occupies; 0 if the shape is invalid for the type.
  static uint64_t TensorBytes(Type type, const std::vector<int64_t>& ne) {
    const int64_t blck = BlockSize(type);
    if (blck <= 0 || ne.empty() || ne.size() > static_cast<size_t>(kMaxDims)) return 0;
    uint64_t n = 1;
    for (size_t j = 0; j < ne.size(); ++j) {
      if (ne[j] <= 0) return 0;
      uint64_t d = static_cast<uint64_t>(ne[j]);
      if (j == 0) {
        if (d % static_cast<uint64_t>(blck) != 0) return 0;
        d = d / static_cast<uint64_t>(blck) * static_cast<uint64_t>(TypeSize(type));
      }
      if (!detail::MulU64(n, d, &n)) return 0;
    }
    return n;
  }

  // ---- output
  bool WriteToBuffer(std::vector<uint8_t>* out, Error* err) const {
    if (!error_.ok()) return detail::Fail(err, error_.code, error_.message);
    try {
      std::vector<uint8_t> head = EncodeHead();
      uint64_t total = head.size();
      for (const Tensor& t : tensors_) total += Padded(t.nbytes);
      out->clear();
      out->reserve(total);
      out->insert(out->end(), head.begin(), head.end());
      for (const Tensor& t : tensors_) {
        const uint8_t* p = t.view != nullptr ? t.view : t.owned.data();
        out->insert(out->end(), p, p + t.nbytes);
        out->resize(out->size() + (Padded(t.nbytes) - t.nbytes), 0);
      }
      return true;
    } catch (const std::bad_alloc&) {
      return detail::Fail(err, ErrorCode::kOutOfMemory,
                          "out of memory while writing a GGUF buffer");
    }
  }
  // Convenience for tests: the encoded file (empty if a sticky error was recorded).
  std::vector<uint8_t> Build() const {
    std::vector<uint8_t> out;
    if (!WriteToBuffer(&out, nullptr)) out.clear();
    return out;
  }
  bool WriteToFile(const std::string& path, Error* err) const {
    if (!error_.ok()) return detail::Fail(err, error_.code, error_.message);
    std::vector<uint8_t> head;
    try {
      head = EncodeHead();
    } catch (const std::bad_alloc&) {
      return detail::Fail(err, ErrorCode::kOutOfMemory, "out of memory while writing " + path);
    }
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) {
      return detail::Fail(err, ErrorCode::kIo,
                          "cannot create " + path + ": " + std::strerror(errno));
    }
    static const uint8_t kZeros[256] = {};
    bool ok = std::fwrite(head.data(), 1, head.size(), f) == head.size();
    for (size_t i = 0; ok && i < tensors_.size(); ++i) {
      const Tensor& t = tensors_[i];
      const uint8_t* p = t.view != nullptr ? t.view : t.owned.data();
      ok = t.nbytes == 0 || std::fwrite(p, 1, t.nbytes, f) == t.nbytes;
      uint64_t pad = Padded(t.nbytes) - t.nbytes;
      while (ok && pad > 0) {
        size_t n = pad < sizeof(kZeros) ? static_cast<size_t>(pad) : sizeof(kZeros);
        ok = std::fwrite(kZeros, 1, n, f) == n;
        pad -= n;
      }
    }
    if (std::fclose(f) != 0) ok = false;
    if (!ok)
      return detail::Fail(err, ErrorCode::kIo,
                          "cannot write " + path + ": " + std::strerror(errno));
    return true;
  }

 private:
  struct Kv {
    std::vector<uint8_t> bytes;  // key string + type id + payload
  };
  struct Tensor {
    std::string name;
    uint32_t type = 0;
    std::vector<int64_t> ne;
    std::vector<uint8_t> owned;
    const uint8_t* view = nullptr;
    uint64_t nbytes = 0;
    std::optional<uint64_t> offset_override;
  };

  template <typename T>
  static void PutPod(std::vector<uint8_t>* out, const T& v) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(&v);
    out->insert(out->end(), p, p + sizeof(T));
  }
  static void PutString(std::vector<uint8_t>* out, std::string_view s) {
    PutPod(out, static_cast<uint64_t>(s.size()));
    out->insert(out->end(), s.begin(), s.end());
  }
  void AddScalar(std::string_view key, ValueType t, const void* v, size_t n) {
    const uint8_t* p = static_cast<const uint8_t*>(v);
    AddRaw(key, static_cast<uint32_t>(t), std::vector<uint8_t>(p, p + n));
  }
  void SetError(ErrorCode code, std::string message) {
    if (error_.ok()) {
      error_.code = code;
      error_.message = std::move(message);
    }
  }
  bool CheckTensor(std::string_view name, Type type, const std::vector<int64_t>& ne,
                   uint64_t nbytes) {
    uint64_t expect = TensorBytes(type, ne);
    if (expect == 0 || expect != nbytes) {
      SetError(ErrorCode::kSizeOverflow,
               detail::Format("writer: tensor %s of type %s: %llu bytes given, shape implies %llu",
                              detail::Quote(name).c_str(), TypeName(type),
                              static_cast<unsigned long long>(nbytes),
                              static_cast<unsigned long long>(expect)));
      return false;
    }
    return true;
  }
  uint64_t Padded(uint64_t n) const {
    uint64_t a = alignment_;
    return (n + a - 1) / a * a;
  }

  // Header, KV records, tensor infos and the padding before the data section.
  std::vector<uint8_t> EncodeHead() const {
    std::vector<uint8_t> out;
    PutPod(&out, kMagic);
    PutPod(&out, version_);
    PutPod(&out, static_cast<int64_t>(tensors_.size()));
    PutPod(&out, static_cast<int64_t>(kvs_.size()));
    for (const Kv& kv : kvs_) out.insert(out.end(), kv.bytes.begin(), kv.bytes.end());
    uint64_t offset = 0;
    for (const Tensor& t : tensors_) {
      PutString(&out, t.name);
      PutPod(&out, static_cast<uint32_t>(t.ne.size()));
      for (int64_t d : t.ne) PutPod(&out, d);
      PutPod(&out, t.type);
      PutPod(&out, t.offset_override ? *t.offset_override : offset);
      offset += Padded(t.nbytes);
    }
    out.resize(Padded(out.size()), 0);
    return out;
  }

  uint32_t alignment_;
  uint32_t version_ = 3;
  std::vector<Kv> kvs_;
  std::vector<Tensor> tensors_;
  Error error_;
};

}  // namespace gguf
}  // namespace qwenrt
