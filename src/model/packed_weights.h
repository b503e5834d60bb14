// The packed (row-interleaved) copies of a model's K-quant matrices (ops/packed.h), made once at
// load so that cpu::MatMul runs its 16-row x 8-token VNNI tiles. Owned by the Model beside the
// views.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

#include "base/status.h"
#include "model/weights.h"

namespace qwenrt {

struct PackedWeights {
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::vector<std::unique_ptr<uint8_t, Free>> buffers;  // one per packed matrix, 64-byte aligned
  size_t bytes = 0;                                     // sum of the buffers' sizes
  double seconds = 0;                                   // wall time the packing took
};

// Packs every matrix the dense forward multiplies whose type this CPU's packed kernel runs faster
// (cpu::PackedKernelFast; not the embedding table, not a head tied to it, not MoE experts) and
// points its WeightMatrix::packed at the copy. Uses up to `threads` threads; calls `on_packed`
// (may be empty) with each matrix once it is packed. Errors: OutOfMemory.
Status PackWeights(Weights* weights, int threads, PackedWeights* out,
                   const std::function<void(const WeightMatrix&)>& on_packed = {});

// ModelLoadOptions::pack_weights' default: true where this CPU's packed kernels are faster for
// prefill and decode alike (the AVX-512 VNNI level), false where they would slow decode (AVX2) or
// everything (the portable level).
bool PackWeightsByDefault();

}  // namespace qwenrt
