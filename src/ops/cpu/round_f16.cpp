// Rounding f32 activations to f16 precision (llama.cpp keeps its KV cache and flash-attention Q in
// f16). F16C when the build has it (round to nearest even, as Fp32ToFp16), else the portable path.
#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "ops/attention.h"
#include "ops/cpu_namespace.h"
#include "ops/quant.h"

namespace QWENRT_CPU_NAMESPACE {

void RoundToF16(float* x, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(x + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) x[i] = Fp16ToFp32(Fp32ToFp16(x[i]));
}

}  // namespace QWENRT_CPU_NAMESPACE
