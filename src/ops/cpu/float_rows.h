// Float weights (F32, F16, BF16) against f32 activations as a register tile of rows x tokens: each
// weight vector is loaded (and widened) once for all the call's tokens and each activation vector
// once for four rows, so prefill runs near the FMA rate instead of the load rate of one row at a
// time. The tokens come as a panel (below) so the tile reads them as one contiguous stream: read
// from separate rows (4 KiB apart at 1024 columns, all in the same L1 sets) the tile ran at half
// the FMA rate, waiting on L2. Internal to src/ops/cpu/ (matmul.cpp calls its own level's).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/cpu_namespace.h"
#include "ops/quant.h"

namespace QWENRT_CPU_NAMESPACE {

// Tokens per tile: 4 rows x 6 tokens = 24 accumulators, with 4 weight vectors and one activation
// vector in flight (29 of the 32 zmm registers).
constexpr int kFloatTileTokens = 6;

// A panel holds ntok (<= kFloatTileTokens) f32 rows of n elements interleaved in steps of 16:
// element i of token t at panel[(i / 16) * ntok * 16 + t * 16 + i % 16], zeros from n up to
// PanelElems(n). One token's panel is its row (zero-padded to a multiple of 16).
constexpr int64_t PanelElems(int64_t n) { return (n + 15) / 16 * 16; }
void PackPanel(const float* x, int64_t x_stride, int ntok, int64_t n, float* panel);

// out[t * out_stride + r] = dot(row r at w + r * row_bytes, token t of the panel) over n elements,
// for r < nrows (<= 16) and t < ntok (1 <= ntok <= kFloatTileTokens). Each (row, token) is summed
// in the same order whatever nrows and ntok: a token alone gives the bits it gets in a batch.
using FloatRowsKernel = void (*)(const uint8_t* w, size_t row_bytes, int nrows, const float* panel,
                                 int ntok, int64_t n, float* out, int64_t out_stride);

// This level's tile kernel for a float `type`, or null (the per-row DotKernel then serves).
FloatRowsKernel FloatRowsKernelFor(gguf::Type type);

}  // namespace QWENRT_CPU_NAMESPACE
