// CPU token embedding (embed.h): tokens in parallel, each row decoded by ref::DequantizeRow.
#include "ops/embed.h"

#include "ops/cpu/parallel.h"
#include "ops/cpu_namespace.h"

namespace QWENRT_CPU_NAMESPACE {

void Embed(const WeightMatrix& table, const int32_t* tokens, int64_t T, float* x,
           ThreadPool& pool) {
  ParallelRanges(pool, T, table.cols, [&](int64_t b, int64_t e) {
    ref::Embed(table, tokens + b, e - b, x + b * table.cols);
  });
}

}  // namespace QWENRT_CPU_NAMESPACE
