// KV row storage types: names, sizes, and the scalar element read (kv_view.h). The row codecs are
// CPU kernels (cpu/kv_codec.cpp), compiled per ISA level.
#include "ops/kv_view.h"

#include <cstring>

#include "ops/quant.h"

namespace qwenrt {

const char* KvTypeName(KvType type) {
  switch (type) {
    case KvType::kF32:
      return "f32";
    case KvType::kF16:
      return "f16";
    case KvType::kQ8_0:
      return "q8_0";
  }
  return "?";
}

bool KvTypeFits(KvType type, int64_t head_dim) {
  switch (type) {
    case KvType::kF32:
    case KvType::kF16:
      return head_dim > 0;
    case KvType::kQ8_0:
      return head_dim > 0 && head_dim % kQK8_0 == 0;
  }
  return false;
}

int64_t KvRowBytes(KvType type, int64_t row) {
  switch (type) {
    case KvType::kF32:
      return row * 4;
    case KvType::kF16:
      return row * 2;
    case KvType::kQ8_0:
      return row / kQK8_0 * static_cast<int64_t>(sizeof(BlockQ8_0));
  }
  return 0;
}

float KvElement(KvType type, const uint8_t* row, int64_t i) {
  switch (type) {
    case KvType::kF32: {
      float f;
      std::memcpy(&f, row + i * 4, sizeof f);
      return f;
    }
    case KvType::kF16: {
      uint16_t h;
      std::memcpy(&h, row + i * 2, sizeof h);
      return Fp16ToFp32(h);
    }
    case KvType::kQ8_0: {
      const auto* b = reinterpret_cast<const BlockQ8_0*>(row) + i / kQK8_0;
      return Fp16ToFp32(b->d) * static_cast<float>(b->qs[i % kQK8_0]);
    }
  }
  return 0.0f;
}

}  // namespace qwenrt
