// Weight quantizer: f32 rows -> Q4_K, Q6_K, Q8_0 (and F32/F16/BF16 conversion) for synthetic models
// and tests. A simple, correct min/max quantizer with guaranteed error bounds; it does not search
// for the best scales as llama-quantize does, so files differ from llama.cpp's bit for bit (same
// format).
#pragma once

#include <cstdint>

#include "ops/quant.h"

namespace qwenrt {

// x: [n] -> dst: RowBytes(type, n) bytes. Supported: F32, F16, BF16, Q8_0, Q4_K, Q6_K. Returns
// false (dst untouched) for another type or n not a multiple of the block size. Per-element error
// bounds (with d, dmin the stored fp16 super-scales):
//   Q8_0: |e| <= amax_block / 254 + 127 * |fp16(d) - d|            (d = amax / 127)
//   Q6_K: |e| <= (amax_group16 / 31.5 + d) / 2
//   Q4_K: |e| <= (range_sub32 / 15 + d) / 2 + dmin / 2,  range = max(x, 0) - min(x, 0)
bool QuantizeRow(gguf::Type type, const float* x, void* dst, int64_t n);

}  // namespace qwenrt
