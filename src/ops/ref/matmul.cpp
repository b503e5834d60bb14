// Exact reference matmul: every weight row is dequantized to f32 once and dotted with each token's
// activations in f32, column order. No threads, no SIMD intrinsics: this is the oracle for cpu/ and
// cuda/ and reproduces the fixtures' *.exact.f32 logits.
#include "ops/matmul.h"

#include <vector>

namespace qwenrt {

WeightMatrix MakeWeightMatrix(gguf::Type type, int64_t cols, int64_t rows, const void* data) {
  const int64_t rb = RowBytes(type, cols);
  return WeightMatrix{type, cols, rows, static_cast<const uint8_t*>(data),
                      rb < 0 ? size_t{0} : static_cast<size_t>(rb)};
}

Status CheckWeightMatrix(const WeightMatrix& w) {
  if (!IsSupportedWeightType(w.type)) {
    return Unsupported("matmul: weight type {} is not supported", static_cast<uint32_t>(w.type));
  }
  if (w.cols <= 0 || w.rows <= 0)
    return InvalidArgument("matmul: empty shape {}x{}", w.rows, w.cols);
  const int64_t rb = RowBytes(w.type, w.cols);
  if (rb < 0) {
    return InvalidArgument("matmul: {} columns is not a multiple of the block size {} of type {}",
                           w.cols, BlockElems(w.type), static_cast<uint32_t>(w.type));
  }
  if (w.row_bytes < static_cast<size_t>(rb)) {
    return InvalidArgument("matmul: row_bytes {} < packed row size {}", w.row_bytes, rb);
  }
  if (w.data == nullptr) return InvalidArgument("matmul: null weight data");
  return OkStatus();
}

namespace ref {

void MatMul(const WeightMatrix& w, const float* x, float* y, int64_t T) {
  // Grow-only per-thread row buffer: [cols] f32.
  thread_local std::vector<float> row;
  if (row.size() < static_cast<size_t>(w.cols)) row.resize(static_cast<size_t>(w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    DequantizeRow(w.type, w.data + r * w.row_bytes, row.data(), w.cols);
    for (int64_t t = 0; t < T; ++t) {
      const float* xt = x + t * w.cols;
      float sum = 0;
      for (int64_t c = 0; c < w.cols; ++c) sum += row[c] * xt[c];
      y[t * w.rows + r] = sum;
    }
  }
}

void MatMulMulti(const WeightMatrix* ws, int n, const float* x, float* const* ys, int64_t T) {
  for (int i = 0; i < n; ++i) MatMul(ws[i], x, ys[i], T);
}

}  // namespace ref
}  // namespace qwenrt
