// Fast CPU matmul driver: converts the activations once to the weight's dot type, then splits the
// output rows over the thread pool. Each thread walks its rows in tiles of kRowTile and, inside a
// tile, all tokens kMaxDotTokens at a time, so a tile of weights (a few KiB, L1-resident) is fetched
// from memory once per call however large T is: that is where prefill speed comes from.
#include <algorithm>
#include <cstring>
#include <vector>

#include "matmul.h"
#include "vec_dot.h"

namespace qwenrt::cpu {
namespace {

constexpr int64_t kRowTile = 16;  // weight rows per tile: 16 x 3584 Q4_K = 32 KiB at most in practice

struct Job {
  const WeightMatrix* w;
  DotKernel kernel;
  const uint8_t* act;  // [T] activation rows of act_stride bytes
  size_t act_stride;
  float* y;            // [T, rows]
  int64_t T;
};

// Grow-only per-thread scratch for the quantized activations (64-byte aligned).
uint8_t* Scratch(size_t bytes) {
  thread_local std::vector<uint64_t> buf;
  const size_t words = (bytes + 63) / 8 + 8;
  if (buf.size() < words) buf.resize(words);
  auto p = reinterpret_cast<uintptr_t>(buf.data());
  return reinterpret_cast<uint8_t*>((p + 63) & ~uintptr_t{63});
}

void RunTiles(const Job& job, int64_t tile_begin, int64_t tile_end) {
  const WeightMatrix& w = *job.w;
  for (int64_t tile = tile_begin; tile < tile_end; ++tile) {
    const int64_t r0 = tile * kRowTile, r1 = std::min(w.rows, r0 + kRowTile);
    for (int64_t t0 = 0; t0 < job.T; t0 += kMaxDotTokens) {
      const int ntok = static_cast<int>(std::min<int64_t>(kMaxDotTokens, job.T - t0));
      const uint8_t* a = job.act + t0 * job.act_stride;
      for (int64_t r = r0; r < r1; ++r) {
        job.kernel(w.data + r * w.row_bytes, a, job.act_stride, ntok, w.cols, job.y + t0 * w.rows + r,
                   w.rows);
      }
    }
  }
}

}  // namespace

void MatMul(const WeightMatrix& w, const float* x, float* y, int64_t T, ThreadPool& pool) {
  if (T <= 0 || w.rows <= 0) return;
  Job job{&w, nullptr, nullptr, 0, y, T};
  void (*quantize)(const float*, void*, int64_t) = nullptr;
  switch (w.type) {
    case gguf::Type::Q4_K: job.kernel = DotQ4K_Q8K; quantize = cpu::QuantizeRowQ8K; break;
    case gguf::Type::Q5_K: job.kernel = DotQ5K_Q8K; quantize = cpu::QuantizeRowQ8K; break;
    case gguf::Type::Q6_K: job.kernel = DotQ6K_Q8K; quantize = cpu::QuantizeRowQ8K; break;
    case gguf::Type::Q8_0: job.kernel = DotQ8_0_Q8_0; quantize = QuantizeRowQ8_0; break;
    case gguf::Type::F32: job.kernel = DotF32_F32; break;
    case gguf::Type::F16: job.kernel = DotF16_F32; break;
    case gguf::Type::BF16: job.kernel = DotBF16_F32; break;
    default: return;  // precondition violated (CheckWeightMatrix); nothing sensible to compute
  }
  if (quantize != nullptr) {
    const gguf::Type act_type = w.type == gguf::Type::Q8_0 ? gguf::Type::Q8_0 : gguf::Type::Q8_K;
    job.act_stride = static_cast<size_t>(RowBytes(act_type, w.cols));
    uint8_t* act = Scratch(job.act_stride * static_cast<size_t>(T));
    job.act = act;
    const size_t stride = job.act_stride;
    const int64_t cols = w.cols;
    if (T * cols <= 16384) {  // a few tokens: cheaper inline than waking the pool
      for (int64_t t = 0; t < T; ++t) quantize(x + t * cols, act + t * stride, cols);
    } else {
      struct Q { void (*fn)(const float*, void*, int64_t); const float* x; uint8_t* act; size_t stride;
                 int64_t cols; } q{quantize, x, act, stride, cols};
      const Q* qp = &q;  // one-pointer capture: fits std::function's inline storage (no allocation)
      pool.ParallelFor(T, [qp](int64_t b, int64_t e, int) {
        for (int64_t t = b; t < e; ++t) qp->fn(qp->x + t * qp->cols, qp->act + t * qp->stride, qp->cols);
      });
    }
  } else {
    job.act = reinterpret_cast<const uint8_t*>(x);
    job.act_stride = static_cast<size_t>(w.cols) * sizeof(float);
  }
  const int64_t tiles = (w.rows + kRowTile - 1) / kRowTile;
  const Job* jp = &job;
  pool.ParallelFor(tiles, [jp](int64_t b, int64_t e, int) { RunTiles(*jp, b, e); });
}

}  // namespace qwenrt::cpu
