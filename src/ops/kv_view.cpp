// KV row storage: encoding f32 rows into f32 / f16 / q8_0 and decoding them back (kv_view.h).
// f16 uses F16C when the build has it (round to nearest even, bit-equal to Fp32ToFp16 /
// Fp16ToFp32); q8_0 is llama.cpp's block format (QuantizeRowQ8_0).
#if defined(__F16C__)
#include <immintrin.h>
#endif

#include <cstring>

#include "ops/kv_view.h"
#include "ops/quant.h"

namespace qwenrt {

const char* KvTypeName(KvType type) {
  switch (type) {
    case KvType::kF32: return "f32";
    case KvType::kF16: return "f16";
    case KvType::kQ8_0: return "q8_0";
  }
  return "?";
}

bool KvTypeFits(KvType type, int64_t head_dim) {
  switch (type) {
    case KvType::kF32:
    case KvType::kF16: return head_dim > 0;
    case KvType::kQ8_0: return head_dim > 0 && head_dim % kQK8_0 == 0;
  }
  return false;
}

int64_t KvRowBytes(KvType type, int64_t row) {
  switch (type) {
    case KvType::kF32: return row * 4;
    case KvType::kF16: return row * 2;
    case KvType::kQ8_0: return row / kQK8_0 * static_cast<int64_t>(sizeof(BlockQ8_0));
  }
  return 0;
}

void KvEncodeRows(KvType type, const float* x, int64_t n, int64_t row, uint8_t* dst) {
  const int64_t count = n * row;
  switch (type) {
    case KvType::kF32:
      std::memcpy(dst, x, static_cast<size_t>(count) * sizeof(float));
      return;
    case KvType::kF16: {
      auto* h = reinterpret_cast<uint16_t*>(dst);
      int64_t i = 0;
#if defined(__F16C__)
      for (; i + 8 <= count; i += 8) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(h + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
      }
#endif
      for (; i < count; ++i) h[i] = Fp32ToFp16(x[i]);
      return;
    }
    case KvType::kQ8_0:
      QuantizeRowQ8_0(x, dst, count);  // rows are whole blocks, so the rows are back to back
      return;
  }
}

void KvDecode(KvType type, const uint8_t* row, int64_t i0, int64_t n, float* dst) {
  switch (type) {
    case KvType::kF32:
      std::memcpy(dst, row + i0 * 4, static_cast<size_t>(n) * sizeof(float));
      return;
    case KvType::kF16: {
      const auto* h = reinterpret_cast<const uint16_t*>(row) + i0;
      int64_t i = 0;
#if defined(__F16C__)
      for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
#endif
      for (; i < n; ++i) dst[i] = Fp16ToFp32(h[i]);
      return;
    }
    case KvType::kQ8_0: {
      const auto* b = reinterpret_cast<const BlockQ8_0*>(row) + i0 / kQK8_0;
      for (int64_t i = 0; i < n; i += kQK8_0, ++b) {
        const float d = Fp16ToFp32(b->d);
        for (int j = 0; j < kQK8_0; ++j) dst[i + j] = d * static_cast<float>(b->qs[j]);
      }
      return;
    }
  }
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
