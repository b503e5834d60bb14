// Token embedding lookup (docs/spec/qwen35-architecture.md §1): each token's row of token_embd,
// dequantized to f32, no scaling. Token ids are checked by the caller (Forward): here they are
// trusted to lie in [0, table.rows).
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "ops/cpu_namespace.h"
#include "ops/matmul.h"

namespace qwenrt {

namespace ref {
// x[t] = DequantizeRow(table row tokens[t]).   tokens: [T]; x: [T, table.cols]
void Embed(const WeightMatrix& table, const int32_t* tokens, int64_t T, float* x);
}  // namespace ref

}  // namespace qwenrt

namespace QWENRT_CPU_NAMESPACE {
// As ref::Embed, tokens split over `pool` (the rows decode independently): bit-identical.
void Embed(const WeightMatrix& table, const int32_t* tokens, int64_t T, float* x, ThreadPool& pool);
}  // namespace QWENRT_CPU_NAMESPACE
