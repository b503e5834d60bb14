// Matrix times activations for GGUF weight matrices: y[t][r] = sum_c W[r][c] * x[t][c].
// `ref::MatMul` is exact (weights dequantized to f32, f32 accumulation); `cpu::MatMul` is the fast
// path (threads, SIMD, K-quant weights against Q8_K-quantized activations as llama.cpp does).
// Dot-product kernels are in vec_dot.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "base/thread_pool.h"
#include "ops/cpu_namespace.h"
#include "ops/quant.h"

namespace qwenrt {

// A weight matrix as stored in GGUF: `rows` rows of `cols` elements (ne = {cols, rows}); row r
// starts at data + r * row_bytes. For 3-D expert tensors, one expert's slab.
struct WeightMatrix {
  gguf::Type type = gguf::Type::F32;
  int64_t cols = 0, rows = 0;
  const uint8_t* data = nullptr;
  size_t row_bytes = 0;
  // Optional row-interleaved copy of the same matrix (ops/packed.h), made at model load: when set,
  // cpu::MatMul reads only it (prefill and decode alike, so both give the same bits); ref::MatMul
  // and the CUDA upload always read `data`.
  const uint8_t* packed = nullptr;
};

// Builds a WeightMatrix over `data` with row_bytes = RowBytes(type, cols) (0 if the shape is
// invalid; CheckWeightMatrix tells why).
WeightMatrix MakeWeightMatrix(gguf::Type type, int64_t cols, int64_t rows, const void* data);

// OK if `w` can be used by MatMul: supported type, cols a multiple of the block size, row_bytes >=
// the packed row size, data non-null.
Status CheckWeightMatrix(const WeightMatrix& w);

namespace ref {
// y: [T, rows] = x: [T, cols] times W^T, exact: each row dequantized to f32, dot accumulated in f32
// in column order. Precondition: CheckWeightMatrix(w).ok(). Single-threaded; any thread.
void MatMul(const WeightMatrix& w, const float* x, float* y, int64_t T);

// Several matrices with the same `cols` applied to the same x: [T, cols]: ys[i]: [T, ws[i].rows] =
// x W_i^T. By definition n ref::MatMul calls in order (the oracle of cpu::MatMulMulti and of the
// CUDA pass's one-launch projections). 1 <= n <= kMaxMatMulMulti.
void MatMulMulti(const WeightMatrix* ws, int n, const float* x, float* const* ys, int64_t T);
}  // namespace ref

// Most matrices one MatMulMulti call takes (the GDN layer's four projections need 4).
inline constexpr int kMaxMatMulMulti = 8;

}  // namespace qwenrt

namespace QWENRT_CPU_NAMESPACE {
// Same contract as ref::MatMul, fast. Activations are converted once per call to the weight's dot
// type: Q8_K for Q4_K/Q5_K/Q6_K, Q8_0 for Q8_0; F32/F16/BF16 weights are used with f32 activations.
// Work is split over output rows with `pool`; for T > 1 each tile of weight rows is read once for
// all tokens. No heap allocation once the calling thread's scratch has grown to the largest shape.
// x and y must not alias. One call at a time per pool.
void MatMul(const WeightMatrix& w, const float* x, float* y, int64_t T, ThreadPool& pool);

// Several matrices with the same `cols` applied to the same activations x: [T, cols]:
// ys[i]: [T, ws[i].rows] = x W_i^T, exactly as n MatMul calls would compute them, but with one
// activation conversion per format and one parallel region (fewer pool wake-ups at decode), e.g.
// the GDN layer's attn_qkv / attn_gate / ssm_alpha / ssm_beta or the FFN's gate / up. 1 <= n <=
// kMaxMatMulMulti. Same preconditions as MatMul for every matrix.
void MatMulMulti(const WeightMatrix* ws, int n, const float* x, float* const* ys, int64_t T,
                 ThreadPool& pool);
}  // namespace QWENRT_CPU_NAMESPACE
