// How attention reads the KV cache: a KvView names the K (or V) rows of one attention layer stored
// in fixed-size pages (model/kv_cache.h owns the pages), in one of three storage types. The ops
// read rows through it (attention.h) and never see the pages' owners or reference counts.
//
//   row j (position j) = bytes [pages[j / page_rows] + offset + (j % page_rows) * row_bytes, +
//   row_bytes) one row = Hkv * Dh elements in `type`:
//     kF32  : binary32
//     kF16  : binary16 (widened exactly on read)
//     kQ8_0 : blocks of 32 elements, BlockQ8_0 (quant.h): y = fp16(d) * q   (lossy)
#pragma once

#include <cstdint>

#include "ops/cpu_namespace.h"

namespace qwenrt {

// Storage type of KV rows. The values are stored in session files (docs/session-format.md): never
// renumber them.
enum class KvType : uint32_t { kF32 = 0, kF16 = 1, kQ8_0 = 2 };
inline constexpr uint32_t kKvTypeCount = 3;

const char* KvTypeName(KvType type);  // "f32", "f16", "q8_0"
// True when a row of `row` elements can be stored in `type` (q8_0: whole blocks of 32 per head,
// given `head_dim`).
bool KvTypeFits(KvType type, int64_t head_dim);
// Bytes of one row of `row` elements (q8_0: row % 32 == 0).
int64_t KvRowBytes(KvType type, int64_t row);

struct KvView {
  const uint8_t* const* pages;  // [>= ceil(rows read / page_rows)] base address of each page
  int64_t offset;     // bytes from a page's base to its first row (K 0, V after the K rows)
  int64_t page_rows;  // positions per page
  int64_t row_bytes;  // KvRowBytes(type, Hkv * Dh)
  KvType type;

  const uint8_t* Row(int64_t j) const {
    return pages[j / page_rows] + offset + (j % page_rows) * row_bytes;
  }
};

// Element i of one stored row, the scalar definition cpu::KvDecode is equal to (used by
// ref::Attention).
float KvElement(KvType type, const uint8_t* row, int64_t i);

}  // namespace qwenrt

// The row codecs (cpu/kv_codec.cpp, per ISA level; plain cpu:: calls go to the level in use).
namespace QWENRT_CPU_NAMESPACE {
// x: [n, row] f32 -> n stored rows at dst (n * KvRowBytes(type, row) bytes).
void KvEncodeRows(KvType type, const float* x, int64_t n, int64_t row, uint8_t* dst);
// Elements [i0, i0 + n) of one stored row -> dst: [n] f32. q8_0: i0 and n multiples of 32.
void KvDecode(KvType type, const uint8_t* row, int64_t i0, int64_t n, float* dst);
}  // namespace QWENRT_CPU_NAMESPACE
