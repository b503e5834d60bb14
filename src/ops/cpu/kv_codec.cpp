// The KV row codecs of kv_view.h, per ISA level: f32 rows into f32 / f16 / q8_0 and back. f16 uses
// F16C where the level has it (round to nearest even on the way in, exact widening on the way out:
// bit-equal to Fp32ToFp16 / Fp16ToFp32); q8_0 is llama.cpp's block format (QuantizeRowQ8_0).
// Attention widens every f16 K and V row it reads through KvDecode, so the conversion must not be
// the portable per-element one on a level that has the instruction (it was 24% of a prefill's
// time).
#include <cstring>

#include "ops/cpu_namespace.h"
#include "ops/kv_view.h"
#include "ops/quant.h"
#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace QWENRT_CPU_NAMESPACE {

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
        _mm256_storeu_ps(dst + i,
                         _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
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

}  // namespace QWENRT_CPU_NAMESPACE
