// qwenrt/gguf.hpp: header-only reader for GGUF v3 (and v2) files, over an mmap'd file or a memory
// buffer. It parses and validates the container (header, typed metadata, tensor table, alignment,
// data offsets) and hands out views; it knows nothing about model architectures, and it never
// dequantizes. Standard C++17 and POSIX only; no exceptions escape; hostile input gives an `Error`.
//
// File layout (all values little-endian; spec: docs/gguf.md, docs/spec/gguf-and-quants.md §1):
//
//   offset 0   magic          4 bytes "GGUF"
//          4   version        u32     (3; 2 has the same layout; 1, 0, >3 rejected)
//          8   tensor_count   i64
//         16   kv_count       i64
//         24   kv_count x KV record:
//                key        : string   = u64 length + bytes (no NUL), non-empty, unique
//                value_type : i32      (ValueType: 0..12)
//                value      : scalar | string | ARRAY = { elem_type: i32, count: u64, count x elem
//                }
//              tensor_count x tensor-info record:
//                name   : string   (1..63 bytes, unique)
//                n_dims : u32      (<= 4)
//                ne     : n_dims x i64  (fastest-varying first; missing trailing dims are 1)
//                type   : i32      (ggml type id, Type)
//                offset : u64      (relative to data_start; a multiple of `alignment`)
//              zero padding up to data_start = align_up(end of tensor infos, alignment)
//   data_start tensor data: tensor i at [data_start + offset_i, + nbytes_i), in tensor-info order,
//              each padded to `alignment` (offset_{i+1} = offset_i + align_up(nbytes_i, alignment))
//
// `alignment` is the u32 `general.alignment` (non-zero power of two) or 32 when absent.
// nbytes = (ne0 / BlockSize(type)) * TypeSize(type) * ne1 * ne2 * ne3, with ne0 % BlockSize == 0.
//
// Usage:
//   qwenrt::gguf::Error err;
//   std::optional<qwenrt::gguf::File> f = qwenrt::gguf::File::Open("model.gguf", &err);
//   if (!f) { fprintf(stderr, "%s\n", err.ToString().c_str()); return; }
//   uint32_t n_layer;
//   if (!f->GetU32("qwen35.block_count", &n_layer, &err)) ...   // kMissingKey / kWrongType
//   const qwenrt::gguf::TensorInfo* t = f->FindTensor("token_embd.weight");
//
// Thread safety: a File is immutable after Open/FromMemory; any number of threads may read it.
// Views (string_view, TensorInfo::data, Value) stay valid for the lifetime of the File, also
// across moves of the File object.
//
// A mapped file must not change while the File lives. The mapping is MAP_PRIVATE, but pages not
// yet read still come from the file: if another process truncates it, touching a page past the
// new end raises SIGBUS in this process (no library can turn that into an error), and if it
// rewrites it, tensor data may silently change. Where the file may be replaced or truncated in
// place, open it with `OpenMode::kRead`: the bytes are copied into memory once, checked, and the
// file is closed (docs/gguf.md, "Files that change under a mapping").
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace qwenrt {
namespace gguf {

inline constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr uint64_t kHeaderSize = 24;
inline constexpr uint64_t kMaxNameLength = 63;    // tensor names: GGML_MAX_NAME = 64 incl. NUL
inline constexpr uint64_t kMaxKeyLength = 65535;  // tighter than llama.cpp's 2^30: keys are short
inline constexpr uint64_t kMaxStringLength = 1ull << 30;
inline constexpr uint64_t kMaxArrayCount = 1ull << 30;
inline constexpr int kMaxDims = 4;
inline constexpr uint64_t kMinKvRecordBytes = 8 + 1 + 4 + 1;        // key len, 1-byte key, type, u8
inline constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 4 + 8;  // name, n_dims=0, type, offset

// ---------------------------------------------------------------------------------------------
// Tensor types (ggml_type ids). Removed ids (4, 5, 31-33, 36-38) have block size 0.

enum class Type : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
  NVFP4 = 40,
  Q1_0 = 41,
  Q2_0 = 42,
};
inline constexpr uint32_t kTypeCount = 43;  // ids are [0, kTypeCount)

struct TypeTraits {
  const char* name;
  int64_t block_size;  // elements per block; 0 for removed ids
  int64_t type_size;   // bytes per block
};

inline const TypeTraits& TraitsOf(uint32_t id) {
  static const TypeTraits kTable[kTypeCount] = {
      {"F32", 1, 4},
      {"F16", 1, 2},
      {"Q4_0", 32, 18},
      {"Q4_1", 32, 20},
      {"Q4_2(removed)", 0, 0},
      {"Q4_3(removed)", 0, 0},
      {"Q5_0", 32, 22},
      {"Q5_1", 32, 24},
      {"Q8_0", 32, 34},
      {"Q8_1", 32, 36},
      {"Q2_K", 256, 84},
      {"Q3_K", 256, 110},
      {"Q4_K", 256, 144},
      {"Q5_K", 256, 176},
      {"Q6_K", 256, 210},
      {"Q8_K", 256, 292},
      {"IQ2_XXS", 256, 66},
      {"IQ2_XS", 256, 74},
      {"IQ3_XXS", 256, 98},
      {"IQ1_S", 256, 50},
      {"IQ4_NL", 32, 18},
      {"IQ3_S", 256, 110},
      {"IQ2_S", 256, 82},
      {"IQ4_XS", 256, 136},
      {"I8", 1, 1},
      {"I16", 1, 2},
      {"I32", 1, 4},
      {"I64", 1, 8},
      {"F64", 1, 8},
      {"IQ1_M", 256, 56},
      {"BF16", 1, 2},
      {"Q4_0_4_4(removed)", 0, 0},
      {"Q4_0_4_8(removed)", 0, 0},
      {"Q4_0_8_8(removed)", 0, 0},
      {"TQ1_0", 256, 54},
      {"TQ2_0", 256, 66},
      {"IQ4_NL_4_4(removed)", 0, 0},
      {"IQ4_NL_4_8(removed)", 0, 0},
      {"IQ4_NL_8_8(removed)", 0, 0},
      {"MXFP4", 32, 17},
      {"NVFP4", 64, 36},
      {"Q1_0", 128, 18},
      {"Q2_0", 64, 18},
  };
  static const TypeTraits kInvalid = {"INVALID", 0, 0};
  return id < kTypeCount ? kTable[id] : kInvalid;
}

// "Q4_K"; "INVALID" for ids >= kTypeCount.
inline const char* TypeName(Type t) { return TraitsOf(static_cast<uint32_t>(t)).name; }
// Elements per block (1 for plain types, 32/256/... for quantized ones, 0 for removed/invalid ids).
inline int64_t BlockSize(Type t) { return TraitsOf(static_cast<uint32_t>(t)).block_size; }
// Bytes per block (0 for removed/invalid ids).
inline int64_t TypeSize(Type t) { return TraitsOf(static_cast<uint32_t>(t)).type_size; }
// A valid, non-removed ggml type id.
inline bool IsKnownType(uint32_t id) { return id < kTypeCount && TraitsOf(id).block_size > 0; }
// The weight types qwenrt can compute with (docs/quant.md).
inline bool IsSupported(Type t) {
  switch (t) {
    case Type::F32:
    case Type::F16:
    case Type::BF16:
    case Type::Q8_0:
    case Type::Q4_0:
    case Type::Q4_1:
    case Type::Q5_0:
    case Type::Q5_1:
    case Type::IQ4_NL:
    case Type::MXFP4:
    case Type::Q2_K:
    case Type::Q3_K:
    case Type::Q4_K:
    case Type::Q5_K:
    case Type::Q6_K:
    case Type::IQ4_XS:
    case Type::IQ1_S:
    case Type::IQ1_M:
    case Type::IQ2_XXS:
    case Type::IQ2_XS:  // grid i-quants
    case Type::IQ2_S:
    case Type::IQ3_XXS:
    case Type::IQ3_S:  // (src/ops/quant_iq.h)
      return true;
    default:
      return false;
  }
}
// "F32 F16 Q4_0 ..." : the IsSupported types in id order (for error messages).
inline std::string SupportedTypeNames() {
  std::string names;
  for (uint32_t id = 0; id < kTypeCount; ++id) {
    if (IsKnownType(id) && IsSupported(static_cast<Type>(id))) {
      if (!names.empty()) names += ' ';
      names += TraitsOf(id).name;
    }
  }
  return names;
}

// ---------------------------------------------------------------------------------------------
// Metadata value types.

enum class ValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
inline constexpr uint32_t kValueTypeCount = 13;

inline const char* ValueTypeName(ValueType t) {
  static const char* const kNames[kValueTypeCount] = {"u8",  "i8",  "u16",  "i16",    "u32",
                                                      "i32", "f32", "bool", "string", "array",
                                                      "u64", "i64", "f64"};
  uint32_t i = static_cast<uint32_t>(t);
  return i < kValueTypeCount ? kNames[i] : "invalid";
}

// Encoded size of one element of a fixed-size value type; 0 for STRING, ARRAY and invalid ids.
inline uint64_t ValueTypeSize(ValueType t) {
  switch (t) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::BOOL:
      return 1;
    case ValueType::U16:
    case ValueType::I16:
      return 2;
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::F32:
      return 4;
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::F64:
      return 8;
    default:
      return 0;
  }
}

// The ValueType that stores a C++ type (bool is BOOL, float F32, double F64).
template <typename T>
struct ValueTypeOf;
template <>
struct ValueTypeOf<uint8_t> {
  static constexpr ValueType value = ValueType::U8;
};
template <>
struct ValueTypeOf<int8_t> {
  static constexpr ValueType value = ValueType::I8;
};
template <>
struct ValueTypeOf<uint16_t> {
  static constexpr ValueType value = ValueType::U16;
};
template <>
struct ValueTypeOf<int16_t> {
  static constexpr ValueType value = ValueType::I16;
};
template <>
struct ValueTypeOf<uint32_t> {
  static constexpr ValueType value = ValueType::U32;
};
template <>
struct ValueTypeOf<int32_t> {
  static constexpr ValueType value = ValueType::I32;
};
template <>
struct ValueTypeOf<float> {
  static constexpr ValueType value = ValueType::F32;
};
template <>
struct ValueTypeOf<bool> {
  static constexpr ValueType value = ValueType::BOOL;
};
template <>
struct ValueTypeOf<uint64_t> {
  static constexpr ValueType value = ValueType::U64;
};
template <>
struct ValueTypeOf<int64_t> {
  static constexpr ValueType value = ValueType::I64;
};
template <>
struct ValueTypeOf<double> {
  static constexpr ValueType value = ValueType::F64;
};

// ---------------------------------------------------------------------------------------------
// Errors. One code per check of the malformed-file checklist (gguf-and-quants.md §5; item numbers
// in brackets).

enum class ErrorCode : int {
  kOk = 0,
  kIo,                // open / stat / mmap / read failed, or not a regular file
  kOutOfMemory,       // allocation failed while building the tables
  kTooSmall,          // [1] shorter than the 24-byte header
  kBadMagic,          // [2] magic is not "GGUF"
  kBadVersion,        // [3] version 0, 1 or > 3
  kByteSwapped,       // [3] version with zero low 16 bits: a big-endian / byte-swapped file
  kBadCount,          // [4] negative tensor/kv count, or more records than the file can hold
  kTruncated,         // a fixed-size field runs past the end of the file
  kBadKey,            // [5] empty, absurdly long, or out-of-file key
  kDuplicateKey,      // [6]
  kBadValueType,      // [7] unknown value type, nested array or unknown array element type
  kBadArray,          // [8] array count > 2^30 or larger than the bytes remaining
  kBadString,         // [9] string length > 2^30 or larger than the bytes remaining
  kBadAlignment,      // [10] general.alignment not u32, zero or not a power of two
  kWrongType,         // [11] a key has a different type than requested / than its known type
  kWrongArrayLength,  // [11] a known array key has the wrong number of elements
  kMissingKey,        // [12] a requested key is absent
  kBadValue,          // [13] a key's value is out of its valid range
  kBadTensorName,     // [14] empty name, or >= 64 bytes
  kDuplicateTensor,   // [14]
  kBadDims,           // [15] n_dims > 4, or some ne[j] <= 0
  kElementOverflow,   // [16] ne0*ne1*ne2*ne3 does not fit in int64
  kBadTensorType,     // [17] type id outside [0, 43) or a removed id
  kUnsupportedType,   // [17] a valid type qwenrt does not implement
  kBadBlockMultiple,  // [18] ne0 not a multiple of the block size
  kSizeOverflow,      // [19] byte size overflows
  kMisaligned,        // [20] offset % alignment != 0
  kBadOffset,         // [20] offset differs from the running padded sum (overlap / reordering)
  kDataOutOfBounds,   // [21] data section or a tensor's bytes beyond the end of the file
  kSplitFile,         // [28] a split part where a whole file is needed (from memory, not part 1)
  kBadTensorData,     // [27] deep check: NaN/Inf in float data or block scales
  kSplitPart,         // [28] a split file's part is missing, misnamed or does not match the first
};

inline const char* ErrorCodeName(ErrorCode c) {
  switch (c) {
    case ErrorCode::kOk:
      return "OK";
    case ErrorCode::kIo:
      return "IO";
    case ErrorCode::kOutOfMemory:
      return "OUT_OF_MEMORY";
    case ErrorCode::kTooSmall:
      return "TOO_SMALL";
    case ErrorCode::kBadMagic:
      return "BAD_MAGIC";
    case ErrorCode::kBadVersion:
      return "BAD_VERSION";
    case ErrorCode::kByteSwapped:
      return "BYTE_SWAPPED";
    case ErrorCode::kBadCount:
      return "BAD_COUNT";
    case ErrorCode::kTruncated:
      return "TRUNCATED";
    case ErrorCode::kBadKey:
      return "BAD_KEY";
    case ErrorCode::kDuplicateKey:
      return "DUPLICATE_KEY";
    case ErrorCode::kBadValueType:
      return "BAD_VALUE_TYPE";
    case ErrorCode::kBadArray:
      return "BAD_ARRAY";
    case ErrorCode::kBadString:
      return "BAD_STRING";
    case ErrorCode::kBadAlignment:
      return "BAD_ALIGNMENT";
    case ErrorCode::kWrongType:
      return "WRONG_TYPE";
    case ErrorCode::kWrongArrayLength:
      return "WRONG_ARRAY_LENGTH";
    case ErrorCode::kMissingKey:
      return "MISSING_KEY";
    case ErrorCode::kBadValue:
      return "BAD_VALUE";
    case ErrorCode::kBadTensorName:
      return "BAD_TENSOR_NAME";
    case ErrorCode::kDuplicateTensor:
      return "DUPLICATE_TENSOR";
    case ErrorCode::kBadDims:
      return "BAD_DIMS";
    case ErrorCode::kElementOverflow:
      return "ELEMENT_OVERFLOW";
    case ErrorCode::kBadTensorType:
      return "BAD_TENSOR_TYPE";
    case ErrorCode::kUnsupportedType:
      return "UNSUPPORTED_TYPE";
    case ErrorCode::kBadBlockMultiple:
      return "BAD_BLOCK_MULTIPLE";
    case ErrorCode::kSizeOverflow:
      return "SIZE_OVERFLOW";
    case ErrorCode::kMisaligned:
      return "MISALIGNED";
    case ErrorCode::kBadOffset:
      return "BAD_OFFSET";
    case ErrorCode::kDataOutOfBounds:
      return "DATA_OUT_OF_BOUNDS";
    case ErrorCode::kSplitFile:
      return "SPLIT_FILE";
    case ErrorCode::kBadTensorData:
      return "BAD_TENSOR_DATA";
    case ErrorCode::kSplitPart:
      return "SPLIT_PART";
  }
  return "UNKNOWN";
}

struct Error {
  ErrorCode code = ErrorCode::kOk;
  std::string message;  // names the offending key / tensor and the values involved

  bool ok() const { return code == ErrorCode::kOk; }
  // "BAD_VERSION: unsupported GGUF version 1 (expected 2 or 3)".
  std::string ToString() const { return std::string(ErrorCodeName(code)) + ": " + message; }
};

namespace detail {

// printf into a std::string (messages only; never on a hot path).
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
inline std::string
Format(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (n < 0) return std::string(fmt);
  return std::string(
      buf, static_cast<size_t>(n) < sizeof(buf) ? static_cast<size_t>(n) : sizeof(buf) - 1);
}

// Sets *err (if non-null) and returns false, so that checks read `return Fail(err, ...)`.
inline bool Fail(Error* err, ErrorCode code, std::string message) {
  if (err != nullptr) {
    err->code = code;
    err->message = std::move(message);
  }
  return false;
}

// A printable rendering of untrusted bytes for messages, at most `limit` of them: 'abc\x01...'.
// Every byte outside printable ASCII is escaped, so a message is always valid UTF-8.
inline std::string Quote(std::string_view s, size_t limit = 96) {
  std::string out = "'";
  const size_t n = s.size() < limit ? s.size() : limit;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  if (n < s.size()) out += "...";
  out += "'";
  return out;
}

// A path for messages: quoted like Quote, but kept whole up to 1024 bytes.
inline std::string QuotePath(const std::string& path) { return Quote(path, 1024); }

// Overflow-checked u64 arithmetic: return false on overflow.
inline bool AddU64(uint64_t a, uint64_t b, uint64_t* out) {
  if (a > std::numeric_limits<uint64_t>::max() - b) return false;
  *out = a + b;
  return true;
}
inline bool MulU64(uint64_t a, uint64_t b, uint64_t* out) {
  if (b != 0 && a > std::numeric_limits<uint64_t>::max() / b) return false;
  *out = a * b;
  return true;
}
// align_up(x, a) for a power of two a.
inline bool AlignUp(uint64_t x, uint64_t a, uint64_t* out) {
  uint64_t t;
  if (!AddU64(x, a - 1, &t)) return false;
  *out = t & ~(a - 1);
  return true;
}

template <typename T>
inline T LoadLE(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));  // hosts are little-endian (x86-64, aarch64), like the files
  return v;
}

// Bounds-checked forward reader over the file bytes.
class Cursor {
 public:
  Cursor(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }
  template <typename T>
  bool Read(T* v) {
    if (sizeof(T) > remaining()) return false;
    std::memcpy(v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  // Returns a pointer to the next n bytes and advances, or nullptr if fewer remain.
  const uint8_t* Take(uint64_t n) {
    if (n > remaining()) return nullptr;
    const uint8_t* p = data_ + pos_;
    pos_ += n;
    return p;
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

// Owner of the file bytes: an mmap'd region, an aligned heap copy, or nothing (borrowed memory).
class Storage {
 public:
  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  Storage(Storage&& o) noexcept { *this = std::move(o); }
  Storage& operator=(Storage&& o) noexcept {
    if (this != &o) {
      Release();
      map_ = o.map_;
      map_size_ = o.map_size_;
      heap_ = o.heap_;
      o.map_ = nullptr;
      o.map_size_ = 0;
      o.heap_ = nullptr;
    }
    return *this;
  }
  ~Storage() { Release(); }

  void SetMapping(void* p, size_t n) {
    map_ = p;
    map_size_ = n;
  }
  // True when [p, p + n) lies inside the file mapping (not a heap copy or borrowed memory).
  bool Mapped(const void* p, size_t n) const {
    const auto* b = static_cast<const uint8_t*>(map_);
    const auto* q = static_cast<const uint8_t*>(p);
    return b != nullptr && q >= b && n <= map_size_ && static_cast<size_t>(q - b) <= map_size_ - n;
  }
  // 64-byte aligned so that tensor data (aligned relative to the file start) is aligned in memory.
  uint8_t* AllocateHeap(size_t n) {
    heap_ =
        static_cast<uint8_t*>(::operator new (n == 0 ? 1 : n, std::align_val_t{64}, std::nothrow));
    return heap_;
  }

 private:
  void Release() {
    if (map_ != nullptr) munmap(map_, map_size_);
    if (heap_ != nullptr) ::operator delete (heap_, std::align_val_t{64});
    map_ = nullptr;
    heap_ = nullptr;
  }
  void* map_ = nullptr;
  size_t map_size_ = 0;
  uint8_t* heap_ = nullptr;
};

}  // namespace detail

// A printable, bounded rendering of untrusted bytes (from a file or a caller) for error messages:
// quoted, non-printable and non-ASCII bytes as \xNN, cut to 96 bytes ("..."). The result is
// always ASCII, so a message built from it is valid UTF-8 without NULs.
inline std::string QuoteBytes(std::string_view s) { return detail::Quote(s); }

// ---------------------------------------------------------------------------------------------
// A typed metadata value: a scalar, a string, or an array of one element type. Strings and array
// elements are views into the file bytes.

class Value {
 public:
  ValueType type() const { return type_; }
  bool is_array() const { return type_ == ValueType::ARRAY; }
  // Element type of an array; type() for scalars.
  ValueType element_type() const { return is_array() ? elem_type_ : type_; }
  // Number of array elements; 1 for scalars.
  uint64_t size() const { return is_array() ? count_ : 1; }

  // True if this is a scalar of C++ type T (uint32_t -> U32, float -> F32, bool -> BOOL, ...).
  template <typename T>
  bool Is() const {
    return type_ == ValueTypeOf<T>::value;
  }
  // The scalar payload as T; T{} when the stored type is not exactly T.
  template <typename T>
  T As() const {
    if (!Is<T>()) return T{};
    if constexpr (std::is_same<T, bool>::value) {
      return scalar_[0] != 0;  // any non-zero byte is true, as in llama.cpp
    } else {
      T v;
      std::memcpy(&v, scalar_, sizeof(T));
      return v;
    }
  }
  uint8_t AsU8() const { return As<uint8_t>(); }
  int8_t AsI8() const { return As<int8_t>(); }
  uint16_t AsU16() const { return As<uint16_t>(); }
  int16_t AsI16() const { return As<int16_t>(); }
  uint32_t AsU32() const { return As<uint32_t>(); }
  int32_t AsI32() const { return As<int32_t>(); }
  uint64_t AsU64() const { return As<uint64_t>(); }
  int64_t AsI64() const { return As<int64_t>(); }
  float AsF32() const { return As<float>(); }
  double AsF64() const { return As<double>(); }
  bool AsBool() const { return As<bool>(); }
  // The string of a STRING value; empty for other types.
  std::string_view AsString() const {
    return type_ == ValueType::STRING ? str_ : std::string_view();
  }

  // Element i of a numeric/bool array whose element type is exactly T; T{} otherwise or if i is
  // out of range.
  template <typename T>
  T At(uint64_t i) const {
    if (!is_array() || elem_type_ != ValueTypeOf<T>::value || i >= count_) return T{};
    if constexpr (std::is_same<T, bool>::value) {
      return array_data_[i] != 0;
    } else {
      return detail::LoadLE<T>(array_data_ + i * sizeof(T));
    }
  }
  // Element i of a string array; empty if not a string array or out of range.
  std::string_view StringAt(uint64_t i) const {
    if (!is_array() || elem_type_ != ValueType::STRING || i >= strings_.size()) return {};
    return strings_[i];
  }
  // All elements of a string array (empty for other values).
  const std::vector<std::string_view>& strings() const { return strings_; }
  // Raw little-endian bytes of a fixed-size-element array (count * ValueTypeSize(element_type())
  // bytes, unaligned); nullptr for scalars and string arrays.
  const uint8_t* array_data() const { return array_data_; }

  // Integer scalar of any integer type (not BOOL) widened to int64, for messages and lenient
  // readers; false for non-integer values or a U64 above INT64_MAX.
  bool ToInt64(int64_t* out) const {
    switch (type_) {
      case ValueType::U8:
        *out = AsU8();
        return true;
      case ValueType::I8:
        *out = AsI8();
        return true;
      case ValueType::U16:
        *out = AsU16();
        return true;
      case ValueType::I16:
        *out = AsI16();
        return true;
      case ValueType::U32:
        *out = AsU32();
        return true;
      case ValueType::I32:
        *out = AsI32();
        return true;
      case ValueType::I64:
        *out = AsI64();
        return true;
      case ValueType::U64:
        if (AsU64() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
        *out = static_cast<int64_t>(AsU64());
        return true;
      default:
        return false;
    }
  }

  // "u32 42", "string 'qwen35'", "array<string>[512]": for messages and dump tools.
  std::string Describe() const {
    switch (type_) {
      case ValueType::STRING:
        return "string " + detail::Quote(str_);
      case ValueType::ARRAY:
        return detail::Format("array<%s>[%llu]", ValueTypeName(elem_type_),
                              static_cast<unsigned long long>(count_));
      case ValueType::F32:
        return detail::Format("f32 %g", static_cast<double>(AsF32()));
      case ValueType::F64:
        return detail::Format("f64 %g", AsF64());
      case ValueType::BOOL:
        return AsBool() ? "bool true" : "bool false";
      case ValueType::U64:
        return detail::Format("u64 %llu", static_cast<unsigned long long>(AsU64()));
      default: {
        int64_t v = 0;
        ToInt64(&v);
        return detail::Format("%s %lld", ValueTypeName(type_), static_cast<long long>(v));
      }
    }
  }

 private:
  friend class File;
  ValueType type_ = ValueType::U8;
  uint8_t scalar_[8] = {};                 // raw little-endian scalar payload
  std::string_view str_;                   // STRING
  ValueType elem_type_ = ValueType::U8;    // ARRAY
  uint64_t count_ = 0;                     // ARRAY
  const uint8_t* array_data_ = nullptr;    // ARRAY of fixed-size elements
  std::vector<std::string_view> strings_;  // ARRAY of strings
};

// One tensor-info record plus what the reader derived from it.
struct TensorInfo {
  std::string name;
  Type type = Type::F32;
  int n_dims = 0;                       // as stored (0..4)
  int64_t ne[kMaxDims] = {1, 1, 1, 1};  // fastest-varying first; trailing dims are 1
  uint64_t offset = 0;                  // relative to the data section (File::data_offset())
  uint64_t nbytes = 0;                  // bytes of data
  const uint8_t* data = nullptr;        // = File::bytes() + data_offset() + offset

  int64_t nelements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }  // fits: checked at load
  uint64_t row_bytes() const {                                         // bytes of one ne0-row
    return static_cast<uint64_t>(ne[0] / BlockSize(type)) * static_cast<uint64_t>(TypeSize(type));
  }
  uint64_t nrows() const { return static_cast<uint64_t>(ne[1] * ne[2] * ne[3]); }
  // "{256, 512}" (stored dims only).
  std::string ShapeString() const {
    std::string s = "{";
    for (int j = 0; j < n_dims; ++j) {
      if (j) s += ", ";
      s += std::to_string(ne[j]);
    }
    return s + "}";
  }
};

struct ParseOptions {
  // Reject tensors of valid types qwenrt cannot compute with (checklist item 17). Tools that only
  // inspect files may turn this off.
  bool require_supported_types = true;
  // Require each tensor offset to equal the running padded sum, as llama.cpp does (item 20); when
  // false only alignment and bounds are checked.
  bool require_contiguous_offsets = true;
};

// How `File::Open` gets the bytes. kMap maps the file (zero copy, pages load on first use; the file
// must not be truncated while mapped, see the top of this file). kRead copies the whole file into
// an aligned heap buffer after checking its header, and keeps nothing open: it costs the file's
// size in memory and a full read, and nothing another process does to the file can reach it.
enum class OpenMode { kMap, kRead };

// ---------------------------------------------------------------------------------------------
// A parsed GGUF file. Move-only; owns the mapping (or the copy) of the bytes.

class File {
 public:
  File(File&&) = default;
  File& operator=(File&&) = default;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  // Maps (kMap) or reads (kRead) `path` and parses it. Returns nullopt and sets *err (may be
  // null) on failure. Only regular files are accepted; a FIFO or device is refused without
  // blocking. The 24-byte header is checked before anything proportional to the file's size is
  // read or allocated.
  static std::optional<File> Open(const std::string& path, Error* err,
                                  const ParseOptions& options = ParseOptions(),
                                  OpenMode mode = OpenMode::kMap) {
    try {
      File f;
      if (!f.LoadFile(path, mode, err) || !f.Parse(options, err)) return std::nullopt;
      if (f.split_count_ > 1 && !f.LoadSplitParts(path, options, mode, err)) return std::nullopt;
      return std::optional<File>(std::move(f));
    } catch (const std::bad_alloc&) {
      detail::Fail(err, ErrorCode::kOutOfMemory, "out of memory while reading " + path);
      return std::nullopt;
    }
  }

  // Parses `size` bytes at `data`. With copy=false the caller keeps the bytes alive and unchanged
  // for the lifetime of the File; with copy=true they are copied into a 64-byte aligned buffer.
  static std::optional<File> FromMemory(const void* data, size_t size, bool copy, Error* err,
                                        const ParseOptions& options = ParseOptions()) {
    try {
      File f;
      if (data == nullptr && size != 0) {
        detail::Fail(err, ErrorCode::kIo, "null buffer");
        return std::nullopt;
      }
      // Refuse a non-GGUF buffer before copying it (a 2 GiB blob is not copied to learn that).
      if (!CheckHeader(static_cast<const uint8_t*>(data), size, err)) return std::nullopt;
      if (copy) {
        uint8_t* p = f.storage_.AllocateHeap(size);
        if (p == nullptr) {
          detail::Fail(err, ErrorCode::kOutOfMemory,
                       detail::Format("cannot allocate %zu bytes for a copy of the buffer", size));
          return std::nullopt;
        }
        if (size != 0) std::memcpy(p, data, size);
        f.bytes_ = p;
      } else {
        f.bytes_ = static_cast<const uint8_t*>(data);
      }
      f.size_ = size;
      if (!f.Parse(options, err)) return std::nullopt;
      if (f.split_count_ > 1) {
        detail::Fail(
            err, ErrorCode::kSplitFile,
            detail::Format("this buffer is part %u of a %u-part split GGUF: open the first part "
                           "by path (the other parts are found beside it) or merge the parts "
                           "with llama-gguf-split --merge",
                           f.split_no_ + 1, f.split_count_));
        return std::nullopt;
      }
      return std::optional<File>(std::move(f));
    } catch (const std::bad_alloc&) {
      detail::Fail(err, ErrorCode::kOutOfMemory, "out of memory while parsing a GGUF buffer");
      return std::nullopt;
    }
  }

  uint32_t version() const { return version_; }
  // Split GGUF (*-00001-of-0000N.gguf): Open on the first part also opens parts 2..N from beside
  // it; tensors() and FindTensor() then cover every part (each tensor's data points into its own
  // part) while metadata, bytes(), size() and data_offset() are those of the first part. 1 for a
  // whole file.
  uint32_t split_count() const { return split_count_; }
  // Parts 2..N of a split file (empty for a whole file).
  const std::vector<File>& split_parts() const { return parts_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // absolute offset of the data section
  const uint8_t* bytes() const { return bytes_; }
  uint64_t size() const { return size_; }

  // Drops this process's copy of the mapped pages of [p, p + n), which must be page-aligned and lie
  // inside the mapping of this file or of one of its split parts: the memory is given back at
  // once (madvise MADV_DONTNEED of a private, never-written file mapping), and a later read of
  // those bytes loads them from the file again, so every view stays valid (and, like any page not
  // yet read, can then see a file changed or truncated since; see the top of this file). Returns
  // false, and does nothing, for a File that was read or copied into memory (kRead, FromMemory,
  // the fallback where mmap fails), whose bytes could not be read again, or a range it does not
  // map. Thread safety: call it while no other thread reads those bytes' pages for the first time.
  bool ReleasePages(const void* p, size_t n) const {
    const File* owner = storage_.Mapped(p, n) ? this : nullptr;
    for (const File& part : parts_) {
      if (owner == nullptr && part.storage_.Mapped(p, n)) owner = &part;
    }
    if (owner == nullptr || n == 0) return false;
    return ::madvise(const_cast<void*>(p), n, MADV_DONTNEED) == 0;
  }

  // ---- metadata
  const std::vector<std::pair<std::string, Value>>& metadata() const { return kv_; }
  // nullptr if absent.
  const Value* Find(std::string_view key) const {
    auto it = kv_index_.find(key);
    return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
  }
  bool Has(std::string_view key) const { return Find(key) != nullptr; }

  // Typed getters: true and *out set when `key` exists with exactly the requested type; otherwise
  // false with kMissingKey or kWrongType in *err (may be null) and *out unchanged.
  bool GetU8(std::string_view key, uint8_t* out, Error* err) const {
    return GetScalar(key, out, err);
  }
  bool GetI8(std::string_view key, int8_t* out, Error* err) const {
    return GetScalar(key, out, err);
  }
  bool GetU16(std::string_view key, uint16_t* out, Error* err) const {
    return GetScalar(key, out, err);
  }
  bool GetI16(std::string_view key, int16_t* out, Error* err) const {
    return GetScalar(key, out, err);
  }
  bool GetU32(std::string_view key, uint32_t* out, Error* err) const {
    return GetScalar(key, out, err);
  }
  bool GetI32(std::string_view key, int32_t* out, Error* err) const {
    return GetScalar(key, out, err);
  }
  bool GetU64(std::string_view key, uint64_t* out, Error* err) const {
    return GetScalar(key, out, err);
  }
  bool GetI64(std::string_view key, int64_t* out, Error* err) const {
    return GetScalar(key, out, err);
  }
  bool GetF32(std::string_view key, float* out, Error* err) const {
    return GetScalar(key, out, err);
  }
  bool GetF64(std::string_view key, double* out, Error* err) const {
    return GetScalar(key, out, err);
  }
  bool GetBool(std::string_view key, bool* out, Error* err) const {
    return GetScalar(key, out, err);
  }

  bool GetString(std::string_view key, std::string_view* out, Error* err) const {
    const Value* v = Lookup(key, err);
    if (v == nullptr) return false;
    if (v->type() != ValueType::STRING) return WrongType(key, *v, "string", err);
    *out = v->AsString();
    return true;
  }
  bool GetString(std::string_view key, std::string* out, Error* err) const {
    std::string_view sv;
    if (!GetString(key, &sv, err)) return false;
    out->assign(sv.data(), sv.size());
    return true;
  }

  // Array getters: the value must be an ARRAY with the right element type. Integer arrays accept
  // I32 and U32 elements interchangeably (as llama.cpp does), with a range check on conversion.
  bool GetStringArray(std::string_view key, std::vector<std::string_view>* out, Error* err) const {
    const Value* v = LookupArray(key, ValueType::STRING, ValueType::STRING, "array<string>", err);
    if (v == nullptr) return false;
    *out = v->strings();
    return true;
  }
  bool GetStringArray(std::string_view key, std::vector<std::string>* out, Error* err) const {
    const Value* v = LookupArray(key, ValueType::STRING, ValueType::STRING, "array<string>", err);
    if (v == nullptr) return false;
    out->assign(v->strings().begin(), v->strings().end());
    return true;
  }
  bool GetF32Array(std::string_view key, std::vector<float>* out, Error* err) const {
    const Value* v = LookupArray(key, ValueType::F32, ValueType::F32, "array<f32>", err);
    if (v == nullptr) return false;
    out->resize(v->size());
    if (!out->empty()) std::memcpy(out->data(), v->array_data(), out->size() * sizeof(float));
    return true;
  }
  bool GetBoolArray(std::string_view key, std::vector<bool>* out, Error* err) const {
    const Value* v = LookupArray(key, ValueType::BOOL, ValueType::BOOL, "array<bool>", err);
    if (v == nullptr) return false;
    out->resize(v->size());
    for (uint64_t i = 0; i < v->size(); ++i) (*out)[i] = v->array_data()[i] != 0;
    return true;
  }
  bool GetI32Array(std::string_view key, std::vector<int32_t>* out, Error* err) const {
    const Value* v = LookupArray(key, ValueType::I32, ValueType::U32, "array<i32|u32>", err);
    if (v == nullptr) return false;
    std::vector<int32_t> tmp(v->size());
    for (uint64_t i = 0; i < v->size(); ++i) {
      uint32_t raw = detail::LoadLE<uint32_t>(v->array_data() + 4 * i);
      if (v->element_type() == ValueType::U32 && raw > 0x7fffffffu) {
        return detail::Fail(
            err, ErrorCode::kBadValue,
            detail::Format("key %s: element %llu = %u does not fit in i32",
                           detail::Quote(key).c_str(), static_cast<unsigned long long>(i), raw));
      }
      std::memcpy(&tmp[i], &raw, 4);
    }
    *out = std::move(tmp);
    return true;
  }
  bool GetU32Array(std::string_view key, std::vector<uint32_t>* out, Error* err) const {
    const Value* v = LookupArray(key, ValueType::U32, ValueType::I32, "array<u32|i32>", err);
    if (v == nullptr) return false;
    std::vector<uint32_t> tmp(v->size());
    for (uint64_t i = 0; i < v->size(); ++i) {
      uint32_t raw = detail::LoadLE<uint32_t>(v->array_data() + 4 * i);
      if (v->element_type() == ValueType::I32 && raw > 0x7fffffffu) {
        return detail::Fail(
            err, ErrorCode::kBadValue,
            detail::Format("key %s: element %llu = %d is negative", detail::Quote(key).c_str(),
                           static_cast<unsigned long long>(i), static_cast<int32_t>(raw)));
      }
      tmp[i] = raw;
    }
    *out = std::move(tmp);
    return true;
  }

  // ---- tensors
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // nullptr if absent.
  const TensorInfo* FindTensor(std::string_view name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
  }

 private:
  File() = default;

  // Opens `path`, checks it is a regular file of at least a GGUF header whose header is valid,
  // then maps it (kMap) or reads it into an aligned buffer (kRead, and the fallback where mmap
  // fails). The open is non-blocking: a blocking open of a FIFO would wait for a writer forever,
  // before fstat could tell it is not a regular file.
  bool LoadFile(const std::string& path, OpenMode mode, Error* err) {
    using detail::Fail;
    const std::string qpath = detail::QuotePath(path);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      return Fail(err, ErrorCode::kIo, "cannot open " + qpath + ": " + std::strerror(errno));
    }
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      return Fail(err, ErrorCode::kIo, "cannot stat " + qpath + ": " + std::strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) return Fail(err, ErrorCode::kIo, qpath + " is not a regular file");
    const int fl = ::fcntl(fd, F_GETFL);
    if (fl >= 0) ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);  // regular files ignore it; tidiness
    uint64_t size = static_cast<uint64_t>(st.st_size);
    if (size < kHeaderSize) {
      return Fail(err, ErrorCode::kTooSmall,
                  detail::Format("%s is %llu bytes, shorter than the 24-byte GGUF header",
                                 qpath.c_str(), static_cast<unsigned long long>(size)));
    }
    if (size > std::numeric_limits<size_t>::max()) {
      return Fail(err, ErrorCode::kIo, qpath + " is too large to map");
    }
    uint8_t header[kHeaderSize];
    if (!ReadFully(fd, header, kHeaderSize, 0, qpath, err)) return false;
    if (!CheckHeader(header, kHeaderSize, err)) {
      if (err != nullptr) err->message = qpath + ": " + err->message;
      return false;
    }
    if (mode == OpenMode::kMap) {
      void* p = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        storage_.SetMapping(p, static_cast<size_t>(size));
        bytes_ = static_cast<const uint8_t*>(p);
        size_ = size;
        return true;
      }
      // Some file systems cannot mmap: fall back to reading into an aligned buffer.
    }
    uint8_t* buf = storage_.AllocateHeap(static_cast<size_t>(size));
    if (buf == nullptr) {
      return Fail(err, ErrorCode::kOutOfMemory,
                  detail::Format("cannot allocate %llu bytes to read %s",
                                 static_cast<unsigned long long>(size), qpath.c_str()));
    }
    if (!ReadFully(fd, buf, size, 0, qpath, err)) return false;
    bytes_ = buf;
    size_ = size;
    return true;
  }

  // pread()s exactly n bytes at `offset`; a short file (truncated since fstat) is kIo.
  static bool ReadFully(int fd, uint8_t* dst, uint64_t n, uint64_t offset, const std::string& qpath,
                        Error* err) {
    uint64_t done = 0;
    while (done < n) {
      ssize_t r =
          ::pread(fd, dst + done, static_cast<size_t>(n - done), static_cast<off_t>(offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        return detail::Fail(err, ErrorCode::kIo,
                            "cannot read " + qpath + ": " +
                                (r == 0 ? "unexpected end of file" : std::strerror(errno)));
      }
      done += static_cast<uint64_t>(r);
    }
    return true;
  }

  // Checklist items 1-3 on the first bytes: size, magic, version. Parse repeats them; Open and
  // FromMemory call this first so that a non-GGUF input is refused before it is read or copied.
  static bool CheckHeader(const uint8_t* p, uint64_t n, Error* err) {
    using detail::Fail;
    using detail::Format;
    if (n < kHeaderSize) {
      return Fail(err, ErrorCode::kTooSmall,
                  Format("file is %llu bytes, shorter than the 24-byte GGUF header",
                         static_cast<unsigned long long>(n)));
    }
    const uint32_t magic = detail::LoadLE<uint32_t>(p);
    const uint32_t version = detail::LoadLE<uint32_t>(p + 4);
    if (magic != kMagic) {
      return Fail(
          err, ErrorCode::kBadMagic,
          Format("bad magic %s (expected 'GGUF')",
                 detail::Quote(std::string_view(reinterpret_cast<const char*>(p), 4)).c_str()));
    }
    if (version != 0 && (version & 0xffffu) == 0) {
      return Fail(err, ErrorCode::kByteSwapped,
                  Format("version field 0x%08x looks byte-swapped: big-endian GGUF files are not "
                         "supported",
                         version));
    }
    if (version < 2 || version > 3) {
      return Fail(err, ErrorCode::kBadVersion,
                  Format("unsupported GGUF version %u (expected 2 or 3)", version));
    }
    return true;
  }

  // ---- typed lookup helpers
  const Value* Lookup(std::string_view key, Error* err) const {
    const Value* v = Find(key);
    if (v == nullptr) {
      detail::Fail(err, ErrorCode::kMissingKey,
                   "required key " + detail::Quote(key) + " not found");
    }
    return v;
  }
  static bool WrongType(std::string_view key, const Value& v, const char* expected, Error* err) {
    std::string have = v.is_array() ? std::string("array<") + ValueTypeName(v.element_type()) + ">"
                                    : std::string(ValueTypeName(v.type()));
    return detail::Fail(
        err, ErrorCode::kWrongType,
        "key " + detail::Quote(key) + " has type " + have + ", expected " + expected);
  }
  template <typename T>
  bool GetScalar(std::string_view key, T* out, Error* err) const {
    const Value* v = Lookup(key, err);
    if (v == nullptr) return false;
    if (!v->Is<T>()) return WrongType(key, *v, ValueTypeName(ValueTypeOf<T>::value), err);
    *out = v->As<T>();
    return true;
  }
  const Value* LookupArray(std::string_view key, ValueType a, ValueType b, const char* expected,
                           Error* err) const {
    const Value* v = Lookup(key, err);
    if (v == nullptr) return nullptr;
    if (!v->is_array() || (v->element_type() != a && v->element_type() != b)) {
      WrongType(key, *v, expected, err);
      return nullptr;
    }
    return v;
  }

  // ---- parsing
  // Reads a GGUF string (u64 length + bytes) as a view. `key` and `element` (-1: the value itself)
  // only name the string in error messages, which are built on failure only (string arrays can
  // hold hundreds of thousands of elements).
  static bool ReadString(detail::Cursor& c, std::string_view* out, std::string_view key,
                         int64_t element, Error* err) {
    auto what = [&] {
      std::string w = element < 0
                          ? std::string("value of key ")
                          : detail::Format("element %lld of key ", static_cast<long long>(element));
      return w + detail::Quote(key);
    };
    uint64_t len;
    if (!c.Read(&len)) {
      return detail::Fail(err, ErrorCode::kTruncated, "file ends inside the length of " + what());
    }
    if (len > kMaxStringLength) {
      return detail::Fail(err, ErrorCode::kBadString,
                          detail::Format("%s: string length %llu exceeds the 2^30-byte limit",
                                         what().c_str(), static_cast<unsigned long long>(len)));
    }
    const uint8_t* p = c.Take(len);
    if (p == nullptr) {
      return detail::Fail(err, ErrorCode::kBadString,
                          detail::Format("%s: string length %llu exceeds the %llu bytes remaining",
                                         what().c_str(), static_cast<unsigned long long>(len),
                                         static_cast<unsigned long long>(c.remaining())));
    }
    *out = std::string_view(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
    return true;
  }

  static bool ReadValue(detail::Cursor& c, std::string_view key, Value* v, Error* err) {
    const std::string qkey = "key " + detail::Quote(key);  // a few dozen keys per file: cheap
    int32_t raw_type;
    if (!c.Read(&raw_type)) {
      return detail::Fail(err, ErrorCode::kTruncated, "file ends inside the value type of " + qkey);
    }
    if (raw_type < 0 || static_cast<uint32_t>(raw_type) >= kValueTypeCount) {
      return detail::Fail(err, ErrorCode::kBadValueType,
                          detail::Format("%s: unknown value type id %d", qkey.c_str(), raw_type));
    }
    v->type_ = static_cast<ValueType>(raw_type);
    if (v->type_ == ValueType::STRING) return ReadString(c, &v->str_, key, -1, err);
    if (v->type_ != ValueType::ARRAY) {
      const uint8_t* p = c.Take(ValueTypeSize(v->type_));
      if (p == nullptr) {
        return detail::Fail(err, ErrorCode::kTruncated, "file ends inside the value of " + qkey);
      }
      std::memcpy(v->scalar_, p, ValueTypeSize(v->type_));
      return true;
    }
    int32_t raw_elem;
    uint64_t count;
    if (!c.Read(&raw_elem) || !c.Read(&count)) {
      return detail::Fail(err, ErrorCode::kTruncated,
                          "file ends inside the array header of " + qkey);
    }
    if (raw_elem == static_cast<int32_t>(ValueType::ARRAY)) {
      return detail::Fail(err, ErrorCode::kBadValueType, qkey + ": nested arrays are not allowed");
    }
    if (raw_elem < 0 || static_cast<uint32_t>(raw_elem) >= kValueTypeCount) {
      return detail::Fail(
          err, ErrorCode::kBadValueType,
          detail::Format("%s: unknown array element type id %d", qkey.c_str(), raw_elem));
    }
    v->elem_type_ = static_cast<ValueType>(raw_elem);
    if (count > kMaxArrayCount) {
      return detail::Fail(err, ErrorCode::kBadArray,
                          detail::Format("%s: array count %llu exceeds the 2^30 limit",
                                         qkey.c_str(), static_cast<unsigned long long>(count)));
    }
    // Each string element needs at least its 8-byte length; reject before allocating.
    uint64_t esize = v->elem_type_ == ValueType::STRING ? 8 : ValueTypeSize(v->elem_type_);
    if (count > c.remaining() / esize) {
      return detail::Fail(err, ErrorCode::kBadArray,
                          detail::Format("%s: array of %llu %s elements needs at least %llu bytes, "
                                         "only %llu remain",
                                         qkey.c_str(), static_cast<unsigned long long>(count),
                                         ValueTypeName(v->elem_type_),
                                         static_cast<unsigned long long>(count * esize),
                                         static_cast<unsigned long long>(c.remaining())));
    }
    v->count_ = count;
    if (v->elem_type_ != ValueType::STRING) {
      v->array_data_ = c.Take(count * esize);  // cannot fail: checked above
      return true;
    }
    v->strings_.resize(static_cast<size_t>(count));
    for (uint64_t i = 0; i < count; ++i) {
      if (!ReadString(c, &v->strings_[i], key, static_cast<int64_t>(i), err)) return false;
    }
    return true;
  }

  // After Parse of the first part of a split file at `path`: opens parts 2..N (named as
  // llama-gguf-split names them, PREFIX-%05d-of-%05d.gguf), checks that each says it is part k of
  // the same N, and appends their tensors. A missing, misnamed or mismatched part, a tensor in two
  // parts, or a total that differs from split.tensors.count is kSplitPart.
  bool LoadSplitParts(const std::string& path, const ParseOptions& options, OpenMode mode,
                      Error* err) {
    using detail::Fail;
    using detail::Format;
    const std::string qpath = detail::QuotePath(path);
    if (split_no_ != 0) {
      return Fail(
          err, ErrorCode::kSplitFile,
          Format("%s is part %u of a %u-part split GGUF: open the first part (-00001-of-%05u.gguf)",
                 qpath.c_str(), split_no_ + 1, split_count_, split_count_));
    }
    const std::string suffix = Format("-00001-of-%05u.gguf", split_count_);
    if (path.size() <= suffix.size() ||
        path.compare(path.size() - suffix.size(), suffix.size(), suffix) != 0) {
      return Fail(
          err, ErrorCode::kSplitPart,
          Format("%s has split.count = %u but its name does not end in %s, so its other parts "
                 "cannot be found (llama-gguf-split names them PREFIX-0000k-of-%05u.gguf)",
                 qpath.c_str(), split_count_, suffix.c_str(), split_count_));
    }
    const std::string prefix = path.substr(0, path.size() - suffix.size());
    parts_.reserve(split_count_ - 1);
    for (uint32_t k = 1; k < split_count_; ++k) {
      const std::string part_path = prefix + Format("-%05u-of-%05u.gguf", k + 1, split_count_);
      const std::string qpart = detail::QuotePath(part_path);
      File part;
      Error part_err;
      if (!part.LoadFile(part_path, mode, &part_err) || !part.Parse(options, &part_err)) {
        const bool missing =
            part_err.code == ErrorCode::kIo && ::access(part_path.c_str(), F_OK) != 0;
        return Fail(err, ErrorCode::kSplitPart,
                    missing ? Format("split part %u of %u is missing: %s does not exist", k + 1,
                                     split_count_, qpart.c_str())
                            : Format("split part %u of %u (%s): %s", k + 1, split_count_,
                                     qpart.c_str(), part_err.message.c_str()));
      }
      if (part.split_count_ != split_count_ || part.split_no_ != k) {
        return Fail(
            err, ErrorCode::kSplitPart,
            Format("%s says it is part %u of %u, expected part %u of %u (from %s)", qpart.c_str(),
                   part.split_no_ + 1, part.split_count_, k + 1, split_count_, qpath.c_str()));
      }
      parts_.push_back(std::move(part));
    }
    for (const File& part : parts_) {
      for (const TensorInfo& t : part.tensors_) {
        std::string_view key =
            part.tensor_index_.find(t.name)->first;  // view into the part's bytes
        if (!tensor_index_.emplace(key, tensors_.size()).second) {
          return Fail(err, ErrorCode::kSplitPart,
                      "tensor " + detail::Quote(t.name) + " appears in more than one split part");
        }
        tensors_.push_back(t);
      }
    }
    if (split_tensors_ >= 0 && static_cast<uint64_t>(split_tensors_) != tensors_.size()) {
      return Fail(
          err, ErrorCode::kSplitPart,
          Format("the %u split parts hold %llu tensors but split.tensors.count is %lld",
                 split_count_, (unsigned long long)tensors_.size(), (long long)split_tensors_));
    }
    return true;
  }

  bool Parse(const ParseOptions& options, Error* err) {
    using detail::Fail;
    using detail::Format;
    using ull = unsigned long long;
    if (!CheckHeader(bytes_, size_, err)) return false;
    detail::Cursor c(bytes_, size_);
    uint32_t magic = 0, version = 0;
    int64_t n_tensors = 0, n_kv = 0;
    c.Read(&magic);
    c.Read(&version);
    c.Read(&n_tensors);
    c.Read(&n_kv);
    (void)magic;  // checked by CheckHeader
    version_ = version;
    if (n_tensors < 0 || n_kv < 0) {
      return Fail(err, ErrorCode::kBadCount,
                  Format("negative counts: tensor_count %lld, kv_count %lld", (long long)n_tensors,
                         (long long)n_kv));
    }
    // Plausibility before allocating anything proportional to the counts.
    const uint64_t rest = c.remaining();
    const uint64_t nt = static_cast<uint64_t>(n_tensors), nkv = static_cast<uint64_t>(n_kv);
    if (nkv > rest / kMinKvRecordBytes || nt > rest / kMinTensorInfoBytes ||
        nkv * kMinKvRecordBytes + nt * kMinTensorInfoBytes > rest) {
      return Fail(err, ErrorCode::kBadCount,
                  Format("kv_count %llu and tensor_count %llu cannot fit in the %llu bytes after "
                         "the header",
                         (ull)nkv, (ull)nt, (ull)rest));
    }

    // ---- metadata
    kv_.reserve(static_cast<size_t>(nkv));
    kv_index_.reserve(static_cast<size_t>(nkv));
    for (uint64_t i = 0; i < nkv; ++i) {
      uint64_t klen;
      if (!c.Read(&klen)) {
        return Fail(err, ErrorCode::kTruncated,
                    Format("file ends inside the key length of KV #%llu", (ull)i));
      }
      if (klen == 0)
        return Fail(err, ErrorCode::kBadKey, Format("KV #%llu has an empty key", (ull)i));
      if (klen > kMaxKeyLength) {
        return Fail(err, ErrorCode::kBadKey,
                    Format("KV #%llu: key length %llu exceeds the %llu-byte limit", (ull)i,
                           (ull)klen, (ull)kMaxKeyLength));
      }
      const uint8_t* kp = c.Take(klen);
      if (kp == nullptr) {
        return Fail(err, ErrorCode::kBadKey,
                    Format("KV #%llu: key length %llu exceeds the %llu bytes remaining", (ull)i,
                           (ull)klen, (ull)c.remaining()));
      }
      std::string_view key(reinterpret_cast<const char*>(kp), static_cast<size_t>(klen));
      auto dup = kv_index_.find(key);
      if (dup != kv_index_.end()) {
        return Fail(err, ErrorCode::kDuplicateKey,
                    Format("duplicate key %s (KV #%zu and #%llu)", detail::Quote(key).c_str(),
                           dup->second, (ull)i));
      }
      Value v;
      if (!ReadValue(c, key, &v, err)) return false;
      kv_index_.emplace(key, kv_.size());
      kv_.emplace_back(std::string(key), std::move(v));
    }

    // general.alignment [10]
    alignment_ = kDefaultAlignment;
    if (const Value* a = Find("general.alignment")) {
      if (a->type() != ValueType::U32) {
        return Fail(err, ErrorCode::kBadAlignment,
                    "general.alignment must be u32, found " + a->Describe());
      }
      uint32_t av = a->AsU32();
      if (av == 0 || (av & (av - 1)) != 0) {
        return Fail(err, ErrorCode::kBadAlignment,
                    Format("general.alignment %u is not a non-zero power of two", av));
      }
      alignment_ = av;
    }
    // split files [28]: the keys are recorded here; Open loads the other parts (LoadSplitParts).
    if (const Value* s = Find("split.count")) {
      int64_t n = 0, no = 0;
      if (!s->ToInt64(&n)) {
        return Fail(err, ErrorCode::kWrongType,
                    "split.count must be an integer, found " + s->Describe());
      }
      if (n < 1 || n > 99999) {
        return Fail(err, ErrorCode::kBadValue,
                    Format("split.count = %lld is outside [1, 99999]", (long long)n));
      }
      if (const Value* v = Find("split.no")) {
        if (!v->ToInt64(&no)) {
          return Fail(err, ErrorCode::kWrongType,
                      "split.no must be an integer, found " + v->Describe());
        }
      } else if (n > 1) {
        return Fail(err, ErrorCode::kMissingKey,
                    Format("split.count = %lld but split.no is missing", (long long)n));
      }
      if (no < 0 || no >= n) {
        return Fail(err, ErrorCode::kBadValue,
                    Format("split.no = %lld is outside [0, split.count = %lld)", (long long)no,
                           (long long)n));
      }
      split_count_ = static_cast<uint32_t>(n);
      split_no_ = static_cast<uint32_t>(no);
      if (const Value* v = Find("split.tensors.count")) {
        if (!v->ToInt64(&split_tensors_) || split_tensors_ < 0) {
          return Fail(err, ErrorCode::kBadValue,
                      "split.tensors.count must be a non-negative integer, found " + v->Describe());
        }
      }
    }

    // ---- tensor infos
    tensors_.reserve(static_cast<size_t>(nt));
    tensor_index_.reserve(static_cast<size_t>(nt));
    for (uint64_t i = 0; i < nt; ++i) {
      uint64_t nlen;
      if (!c.Read(&nlen)) {
        return Fail(err, ErrorCode::kTruncated,
                    Format("file ends inside the name of tensor #%llu", (ull)i));
      }
      if (nlen == 0)
        return Fail(err, ErrorCode::kBadTensorName,
                    Format("tensor #%llu has an empty name", (ull)i));
      if (nlen > kMaxNameLength) {
        return Fail(err, ErrorCode::kBadTensorName,
                    Format("tensor #%llu: name length %llu exceeds %llu bytes", (ull)i, (ull)nlen,
                           (ull)kMaxNameLength));
      }
      const uint8_t* np = c.Take(nlen);
      if (np == nullptr) {
        return Fail(err, ErrorCode::kTruncated,
                    Format("file ends inside the name of tensor #%llu", (ull)i));
      }
      std::string_view name(reinterpret_cast<const char*>(np), static_cast<size_t>(nlen));
      auto qname = [&] { return "tensor " + detail::Quote(name); };  // built on failure only
      auto dup = tensor_index_.find(name);
      if (dup != tensor_index_.end()) {
        return Fail(
            err, ErrorCode::kDuplicateTensor,
            Format("duplicate %s (tensors #%zu and #%llu)", qname().c_str(), dup->second, (ull)i));
      }
      TensorInfo t;
      t.name.assign(name.data(), name.size());
      uint32_t n_dims;
      if (!c.Read(&n_dims))
        return Fail(err, ErrorCode::kTruncated, "file ends inside n_dims of " + qname());
      if (n_dims > static_cast<uint32_t>(kMaxDims)) {
        return Fail(err, ErrorCode::kBadDims,
                    Format("%s has %u dimensions (max 4)", qname().c_str(), n_dims));
      }
      t.n_dims = static_cast<int>(n_dims);
      for (uint32_t j = 0; j < n_dims; ++j) {
        if (!c.Read(&t.ne[j]))
          return Fail(err, ErrorCode::kTruncated, "file ends inside the shape of " + qname());
      }
      for (uint32_t j = 0; j < n_dims; ++j) {
        if (t.ne[j] <= 0) {
          return Fail(err, ErrorCode::kBadDims,
                      Format("%s: ne[%u] = %lld (every dimension must be >= 1)", qname().c_str(), j,
                             (long long)t.ne[j]));
        }
      }
      int64_t nel = 1;
      for (int j = 0; j < kMaxDims; ++j) {
        if (nel > std::numeric_limits<int64_t>::max() / t.ne[j]) {
          return Fail(err, ErrorCode::kElementOverflow,
                      Format("%s: element count of shape {%lld, %lld, %lld, %lld} overflows int64",
                             qname().c_str(), (long long)t.ne[0], (long long)t.ne[1],
                             (long long)t.ne[2], (long long)t.ne[3]));
        }
        nel *= t.ne[j];
      }
      int32_t raw_type;
      if (!c.Read(&raw_type))
        return Fail(err, ErrorCode::kTruncated, "file ends inside the type of " + qname());
      if (raw_type < 0 || !IsKnownType(static_cast<uint32_t>(raw_type))) {
        return Fail(err, ErrorCode::kBadTensorType,
                    Format("%s: invalid tensor type id %d (%s)", qname().c_str(), raw_type,
                           raw_type >= 0 && raw_type < static_cast<int32_t>(kTypeCount)
                               ? "removed type"
                               : "out of range [0, 43)"));
      }
      t.type = static_cast<Type>(raw_type);
      if (options.require_supported_types && !IsSupported(t.type)) {
        return Fail(err, ErrorCode::kUnsupportedType,
                    Format("%s: type %s (id %d) is not supported (supported: %s)", qname().c_str(),
                           TypeName(t.type), raw_type, SupportedTypeNames().c_str()));
      }
      const uint64_t blck = static_cast<uint64_t>(BlockSize(t.type));
      const uint64_t tsize = static_cast<uint64_t>(TypeSize(t.type));
      if (static_cast<uint64_t>(t.ne[0]) % blck != 0) {
        return Fail(err, ErrorCode::kBadBlockMultiple,
                    Format("%s: ne[0] = %lld is not a multiple of the %s block size %llu",
                           qname().c_str(), (long long)t.ne[0], TypeName(t.type), (ull)blck));
      }
      uint64_t row_bytes, nbytes;
      if (!detail::MulU64(static_cast<uint64_t>(t.ne[0]) / blck, tsize, &row_bytes) ||
          !detail::MulU64(row_bytes, static_cast<uint64_t>(nel / t.ne[0]), &nbytes) ||
          nbytes > static_cast<uint64_t>(std::numeric_limits<size_t>::max())) {
        return Fail(err, ErrorCode::kSizeOverflow,
                    Format("%s: byte size of shape %s in %s overflows", qname().c_str(),
                           t.ShapeString().c_str(), TypeName(t.type)));
      }
      t.nbytes = nbytes;
      if (!c.Read(&t.offset))
        return Fail(err, ErrorCode::kTruncated, "file ends inside the offset of " + qname());
      tensor_index_.emplace(name, tensors_.size());
      tensors_.push_back(std::move(t));
    }

    // ---- data section [20, 21]
    uint64_t data_start;
    if (!detail::AlignUp(c.pos(), alignment_, &data_start))
      data_start = std::numeric_limits<uint64_t>::max();
    if (nt == 0) {
      data_offset_ = data_start <= size_ ? data_start : size_;  // vocab-only files may omit padding
      return true;
    }
    if (data_start > size_) {
      return Fail(err, ErrorCode::kDataOutOfBounds,
                  Format("data section starts at %llu, beyond the end of the file (%llu bytes)",
                         (ull)data_start, (ull)size_));
    }
    data_offset_ = data_start;
    uint64_t expected = 0;
    for (TensorInfo& t : tensors_) {
      auto qname = [&] { return "tensor " + detail::Quote(t.name); };
      if (t.offset % alignment_ != 0) {
        return Fail(err, ErrorCode::kMisaligned,
                    Format("%s: data offset %llu is not a multiple of the alignment %llu",
                           qname().c_str(), (ull)t.offset, (ull)alignment_));
      }
      if (options.require_contiguous_offsets && t.offset != expected) {
        return Fail(
            err, ErrorCode::kBadOffset,
            Format("%s: data offset %llu, expected %llu (tensors must be laid out in order, "
                   "each padded to the alignment)",
                   qname().c_str(), (ull)t.offset, (ull)expected));
      }
      uint64_t begin, end;
      if (!detail::AddU64(data_start, t.offset, &begin) || !detail::AddU64(begin, t.nbytes, &end) ||
          end > size_) {
        return Fail(
            err, ErrorCode::kDataOutOfBounds,
            Format("%s: data [%llu + %llu, +%llu bytes) extends beyond the end of the file "
                   "(%llu bytes)",
                   qname().c_str(), (ull)data_start, (ull)t.offset, (ull)t.nbytes, (ull)size_));
      }
      t.data = bytes_ + begin;
      uint64_t padded = 0;
      // Cannot overflow: end <= size_ and alignment_ <= 2^31.
      detail::AlignUp(t.nbytes, alignment_, &padded);
      expected = t.offset + padded;
    }
    return true;
  }

  detail::Storage storage_;
  const uint8_t* bytes_ = nullptr;
  uint64_t size_ = 0;
  uint32_t version_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> kv_;
  std::unordered_map<std::string_view, size_t> kv_index_;  // views into bytes_
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> tensor_index_;  // views into bytes_ (or a part's)
  uint32_t split_count_ = 1, split_no_ = 0;                    // split.count, split.no (0-based)
  int64_t split_tensors_ = -1;  // split.tensors.count; -1 when absent
  std::vector<File> parts_;     // parts 2..N of a split file, owning their bytes
};

// ---------------------------------------------------------------------------------------------
// Optional deep check of tensor data (checklist item 27, llama.cpp --check-tensors): rejects NaN
// or Inf in F32/F16/BF16 data and non-finite `d`/`dmin` scales in Q8_0/Q4_K/Q5_K/Q6_K blocks.
// Other types pass unchecked. Reads every byte of the tensor (slow on large models: opt-in).

inline bool CheckTensorData(const TensorInfo& t, Error* err) {
  using ull = unsigned long long;
  auto bad = [&](uint64_t index, const char* what) {
    return detail::Fail(err, ErrorCode::kBadTensorData,
                        detail::Format("tensor %s (%s): non-finite %s at %s %llu",
                                       detail::Quote(t.name).c_str(), TypeName(t.type), what,
                                       BlockSize(t.type) == 1 ? "element" : "block", (ull)index));
  };
  const uint8_t* p = t.data;
  if (p == nullptr) return true;
  switch (t.type) {
    case Type::F32: {
      const uint64_t n = t.nbytes / 4;
      for (uint64_t i = 0; i < n; ++i) {
        if ((detail::LoadLE<uint32_t>(p + 4 * i) & 0x7f800000u) == 0x7f800000u)
          return bad(i, "value");
      }
      return true;
    }
    case Type::F16: {
      const uint64_t n = t.nbytes / 2;
      for (uint64_t i = 0; i < n; ++i) {
        if ((detail::LoadLE<uint16_t>(p + 2 * i) & 0x7c00u) == 0x7c00u) return bad(i, "value");
      }
      return true;
    }
    case Type::BF16: {
      const uint64_t n = t.nbytes / 2;
      for (uint64_t i = 0; i < n; ++i) {
        if ((detail::LoadLE<uint16_t>(p + 2 * i) & 0x7f80u) == 0x7f80u) return bad(i, "value");
      }
      return true;
    }
    default:
      break;
  }
  // fp16 scale fields: (offset of d, offset of dmin or -1) within the block.
  int d_off = -1, dmin_off = -1;
  switch (t.type) {
    case Type::Q8_0:
    case Type::Q4_0:
    case Type::Q5_0:
    case Type::IQ4_NL:
    case Type::IQ4_XS:
      d_off = 0;
      break;
    case Type::Q4_1:
    case Type::Q5_1:  // d, then the fp16 min
    case Type::Q4_K:
    case Type::Q5_K:
      d_off = 0;
      dmin_off = 2;
      break;
    case Type::Q2_K:
      d_off = 80;
      dmin_off = 82;
      break;
    case Type::Q3_K:
      d_off = 108;
      break;
    case Type::Q6_K:
      d_off = 208;
      break;
    case Type::MXFP4: {  // E8M0 exponent 0xFF is NaN
      for (uint64_t b = 0; b < t.nbytes / 17; ++b) {
        if (p[17 * b] == 0xFF) return bad(b, "scale");
      }
      return true;
    }
    default:
      return true;
  }
  const uint64_t tsize = static_cast<uint64_t>(TypeSize(t.type));
  const uint64_t nblocks = t.nbytes / tsize;
  for (uint64_t b = 0; b < nblocks; ++b) {
    const uint8_t* blk = p + b * tsize;
    if ((detail::LoadLE<uint16_t>(blk + d_off) & 0x7c00u) == 0x7c00u) return bad(b, "d");
    if (dmin_off >= 0 && (detail::LoadLE<uint16_t>(blk + dmin_off) & 0x7c00u) == 0x7c00u) {
      return bad(b, "dmin");
    }
  }
  return true;
}

// CheckTensorData on every tensor of the file; stops at the first failure.
inline bool CheckAllTensorData(const File& f, Error* err) {
  for (const TensorInfo& t : f.tensors()) {
    if (!CheckTensorData(t, err)) return false;
  }
  return true;
}

}  // namespace gguf
}  // namespace qwenrt
