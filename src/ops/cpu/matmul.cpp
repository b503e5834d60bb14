// Fast CPU matmul driver: converts the activations once to each weight's dot type, then splits the
// output rows over the thread pool. Each thread walks its rows in tiles of kRowTile and, inside a
// tile, all tokens kMaxDotTokens at a time, so a tile of weights (a few KiB, L1-resident) is
// fetched from memory once per call however large T is: that is where prefill speed comes from.
// MatMulMulti runs several matrices that read the same activations in one parallel region (one
// activation conversion, one pool wake-up), which matters at decode where each call is short.
#include "ops/matmul.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/cpu/float_rows.h"
#include "ops/cpu/prefetch.h"
#include "ops/cpu_namespace.h"
#include "ops/packed.h"
#include "ops/vec_dot.h"
#include "ops/vec_dot_iq.h"

namespace QWENRT_CPU_NAMESPACE {
namespace {

constexpr int64_t kRowTile =
    16;  // weight rows per tile: 16 x 3584 Q4_K = 32 KiB at most in practice
static_assert(kRowTile == kPackRows, "a tile of a packed matrix is one group of interleaved rows");
// File-layout rows: how far ahead of the row being computed its successor is prefetched.
constexpr int64_t kRowsAhead = 2;

// kActPanel: f32 rows as panels of kFloatTileTokens tokens (float_rows.h), for the float tile.
enum ActFormat { kActF32 = 0, kActQ8K = 1, kActQ8_0 = 2, kActPanel = 3, kActFormats = 4 };

struct Job {
  const WeightMatrix* w;
  DotKernel kernel;
  PackedKernel packed;          // non-null when w->packed is used instead of w->data
  FloatRowsKernel rows_kernel;  // non-null for float weights where this level has the tile kernel
  size_t group_bytes;           // bytes of one packed group (16 rows)
  const uint8_t* act;  // [T] activation rows of act_stride bytes; panels: one per act_stride bytes
  size_t act_stride;
  float* y;            // [T, rows]
  int64_t tile_begin;  // first global tile index of this matrix
};

struct Batch {
  Job jobs[kMaxMatMulMulti];
  int n;
  int64_t T;
};

// Grow-only per-thread scratch for the converted activations, one per format (64-byte aligned).
uint8_t* Scratch(int format, size_t bytes) {
  thread_local std::vector<uint64_t> buf[kActFormats];
  const size_t words = (bytes + 63) / 8 + 8;
  if (buf[format].size() < words) buf[format].resize(words);
  auto p = reinterpret_cast<uintptr_t>(buf[format].data());
  return reinterpret_cast<uint8_t*>((p + 63) & ~uintptr_t{63});
}

bool KernelFor(gguf::Type type, DotKernel* kernel, ActFormat* format) {
  switch (type) {
    case gguf::Type::Q4_K:
      *kernel = DotQ4K_Q8K;
      *format = kActQ8K;
      return true;
    case gguf::Type::Q5_K:
      *kernel = DotQ5K_Q8K;
      *format = kActQ8K;
      return true;
    case gguf::Type::Q6_K:
      *kernel = DotQ6K_Q8K;
      *format = kActQ8K;
      return true;
    case gguf::Type::Q8_0:
      *kernel = DotQ8_0_Q8_0;
      *format = kActQ8_0;
      return true;
    case gguf::Type::Q4_0:
      *kernel = DotQ4_0_Q8_0;
      *format = kActQ8_0;
      return true;
    case gguf::Type::Q4_1:
      *kernel = DotQ4_1_Q8_0;
      *format = kActQ8_0;
      return true;
    case gguf::Type::Q5_0:
      *kernel = DotQ5_0_Q8_0;
      *format = kActQ8_0;
      return true;
    case gguf::Type::Q5_1:
      *kernel = DotQ5_1_Q8_0;
      *format = kActQ8_0;
      return true;
    case gguf::Type::IQ4_NL:
      *kernel = DotIQ4NL_Q8_0;
      *format = kActQ8_0;
      return true;
    case gguf::Type::MXFP4:
      *kernel = DotMXFP4_Q8_0;
      *format = kActQ8_0;
      return true;
    case gguf::Type::Q2_K:
      *kernel = DotQ2K_Q8K;
      *format = kActQ8K;
      return true;
    case gguf::Type::Q3_K:
      *kernel = DotQ3K_Q8K;
      *format = kActQ8K;
      return true;
    case gguf::Type::IQ4_XS:
      *kernel = DotIQ4XS_Q8K;
      *format = kActQ8K;
      return true;
    case gguf::Type::F32:
      *kernel = DotF32_F32;
      *format = kActF32;
      return true;
    case gguf::Type::F16:
      *kernel = DotF16_F32;
      *format = kActF32;
      return true;
    case gguf::Type::BF16:
      *kernel = DotBF16_F32;
      *format = kActF32;
      return true;
    default:  // the grid i-quants (vec_dot_iq.h) take Q8_K activations
      *kernel = IQuantDotKernel(type);
      *format = kActQ8K;
      return *kernel != nullptr;
  }
}

void RunTile(const Batch& batch, int64_t global_tile) {
  int j = 0;
  while (j + 1 < batch.n && batch.jobs[j + 1].tile_begin <= global_tile) ++j;
  const Job& job = batch.jobs[j];
  const WeightMatrix& w = *job.w;
  const int64_t r0 = (global_tile - job.tile_begin) * kRowTile,
                r1 = std::min(w.rows, r0 + kRowTile);
  if (job.rows_kernel != nullptr) {
    for (int64_t t0 = 0; t0 < batch.T; t0 += kFloatTileTokens) {
      const int ntok = static_cast<int>(std::min<int64_t>(kFloatTileTokens, batch.T - t0));
      const auto* panel =
          reinterpret_cast<const float*>(job.act + t0 / kFloatTileTokens * job.act_stride);
      job.rows_kernel(w.data + r0 * w.row_bytes, w.row_bytes, static_cast<int>(r1 - r0), panel,
                      ntok, w.cols, job.y + t0 * w.rows + r0, w.rows);
    }
    return;
  }
  if (job.packed != nullptr) {
    const uint8_t* group = w.packed + (global_tile - job.tile_begin) * job.group_bytes;
    for (int64_t t0 = 0; t0 < batch.T; t0 += kMaxDotTokens) {
      const int ntok = static_cast<int>(std::min<int64_t>(kMaxDotTokens, batch.T - t0));
      job.packed(group, job.act + t0 * job.act_stride, job.act_stride, ntok, w.cols,
                 job.y + t0 * w.rows + r0, w.rows, static_cast<int>(r1 - r0), /*stream=*/t0 == 0);
    }
    return;
  }
  for (int64_t t0 = 0; t0 < batch.T; t0 += kMaxDotTokens) {
    const int ntok = static_cast<int>(std::min<int64_t>(kMaxDotTokens, batch.T - t0));
    const uint8_t* a = job.act + t0 * job.act_stride;
    for (int64_t r = r0; r < r1; ++r) {
      // The first token tile reads the rows from memory: ask for the row kRowsAhead on meanwhile.
      if (t0 == 0 && r + kRowsAhead < w.rows)
        PrefetchLines(w.data + (r + kRowsAhead) * w.row_bytes, w.row_bytes);
      job.kernel(w.data + r * w.row_bytes, a, job.act_stride, ntok, w.cols, job.y + t0 * w.rows + r,
                 w.rows);
    }
  }
}

// Converted units of T tokens: rows, or panels of up to kFloatTileTokens tokens.
int64_t Units(ActFormat format, int64_t T) {
  return format == kActPanel ? (T + kFloatTileTokens - 1) / kFloatTileTokens : T;
}

// Bytes of one converted unit at dst (a Q8_K / Q8_0 row, or a panel of kFloatTileTokens tokens).
size_t ActStride(ActFormat format, int64_t cols) {
  if (format == kActPanel)
    return static_cast<size_t>(kFloatTileTokens * PanelElems(cols)) * sizeof(float);
  return static_cast<size_t>(
      RowBytes(format == kActQ8K ? gguf::Type::Q8_K : gguf::Type::Q8_0, cols));
}

// Converts unit u of x: [T, cols] into `format` at dst: token u's row, or the panel of tokens
// [6u, min(T, 6u + 6)) (kFloatTileTokens = 6).
void ConvertUnit(ActFormat format, const float* x, int64_t T, int64_t cols, uint8_t* dst,
                 size_t stride, int64_t u) {
  if (format == kActPanel) {
    const int64_t t0 = u * kFloatTileTokens;
    const int ntok = static_cast<int>(std::min<int64_t>(kFloatTileTokens, T - t0));
    PackPanel(x + t0 * cols, cols, ntok, cols, reinterpret_cast<float*>(dst + u * stride));
  } else if (format == kActQ8K) {
    cpu::QuantizeRowQ8K(x + u * cols, dst + u * stride, cols);
  } else {
    QuantizeRowQ8_0(x + u * cols, dst + u * stride, cols);
  }
}

// Converts x: [T, cols] into `format` units at dst (stride bytes each), in parallel when large.
void ConvertActivations(ActFormat format, const float* x, int64_t T, int64_t cols, uint8_t* dst,
                        size_t stride, ThreadPool& pool) {
  const int64_t units = Units(format, T);
  if (T * cols <= 16384) {  // a few tokens: cheaper inline than waking the pool
    for (int64_t u = 0; u < units; ++u) ConvertUnit(format, x, T, cols, dst, stride, u);
    return;
  }
  struct Q {
    ActFormat format;
    const float* x;
    int64_t T, cols;
    uint8_t* dst;
    size_t stride;
  } q{format, x, T, cols, dst, stride};
  const Q* qp = &q;  // one-pointer capture: fits std::function's inline storage (no allocation)
  pool.ParallelFor(units, [qp](int64_t b, int64_t e, int) {
    for (int64_t u = b; u < e; ++u)
      ConvertUnit(qp->format, qp->x, qp->T, qp->cols, qp->dst, qp->stride, u);
  });
}

}  // namespace

void MatMulMulti(const WeightMatrix* ws, int n, const float* x, float* const* ys, int64_t T,
                 ThreadPool& pool) {
  if (T <= 0 || n <= 0 || n > kMaxMatMulMulti) return;
  Batch batch;
  batch.n = 0;
  batch.T = T;
  const uint8_t* act[kActFormats] = {reinterpret_cast<const uint8_t*>(x), nullptr, nullptr,
                                     nullptr};
  size_t stride[kActFormats] = {static_cast<size_t>(ws[0].cols) * sizeof(float), 0, 0, 0};
  int64_t tiles = 0;
  for (int i = 0; i < n; ++i) {
    const WeightMatrix& w = ws[i];
    DotKernel kernel;
    ActFormat format;
    // Precondition violations (CheckWeightMatrix, equal cols) leave that output unwritten.
    if (w.rows <= 0 || w.cols != ws[0].cols || !KernelFor(w.type, &kernel, &format)) continue;
    const PackedKernel packed = w.packed != nullptr ? PackedKernelOf(w.type) : nullptr;
    const size_t group_bytes = packed != nullptr ? PackedBytes(w.type, w.cols, kPackRows) : 0;
    const FloatRowsKernel rows_kernel = packed == nullptr ? FloatRowsKernelFor(w.type) : nullptr;
    if (rows_kernel != nullptr) format = kActPanel;
    if (act[format] == nullptr) {
      stride[format] = ActStride(format, w.cols);
      if (format == kActPanel && T == 1 && w.cols % 16 == 0) {
        act[format] = reinterpret_cast<const uint8_t*>(x);  // one token's panel is its row
      } else {
        uint8_t* dst = Scratch(format, stride[format] * static_cast<size_t>(Units(format, T)));
        ConvertActivations(format, x, T, w.cols, dst, stride[format], pool);
        act[format] = dst;
      }
    }
    batch.jobs[batch.n++] = Job{&w,          kernel,         packed, rows_kernel, group_bytes,
                                act[format], stride[format], ys[i],  tiles};
    tiles += (w.rows + kRowTile - 1) / kRowTile;
  }
  const Batch* bp = &batch;
  pool.ParallelFor(tiles, [bp](int64_t b, int64_t e, int) {
    for (int64_t tile = b; tile < e; ++tile) RunTile(*bp, tile);
  });
}

void MatMul(const WeightMatrix& w, const float* x, float* y, int64_t T, ThreadPool& pool) {
  MatMulMulti(&w, 1, x, &y, T, pool);
}

}  // namespace QWENRT_CPU_NAMESPACE
