// Reference token embedding (embed.h): one DequantizeRow per token.
#include "ops/embed.h"

#include "ops/quant.h"

namespace qwenrt::ref {

void Embed(const WeightMatrix& table, const int32_t* tokens, int64_t T, float* x) {
  for (int64_t t = 0; t < T; ++t) {
    const uint8_t* row = table.data + static_cast<size_t>(tokens[t]) * table.row_bytes;
    DequantizeRow(table.type, row, x + t * table.cols, table.cols);
  }
}

}  // namespace qwenrt::ref
