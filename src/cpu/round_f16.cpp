// Rounding f32 activations to f16 precision (the peer keeps its KV cache and flash-attention Q in f16).
#include "cpu/ops.h"
#include "quant.h"

namespace qwenrt::cpu {

void RoundToF16(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = Fp16ToFp32(Fp32ToFp16(x[i]));
}

}  // namespace qwenrt::cpu
