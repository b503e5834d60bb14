// Packing at load: one aligned buffer per matrix, groups of 16 rows split over a few threads (the
// output head alone is a quarter of a 0.8B file).
#include "model/packed_weights.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <string_view>
#include <thread>

#include "ops/packed.h"

namespace qwenrt {
namespace {

void ForEachMatrix(Weights* w, const std::function<void(WeightMatrix*)>& fn) {
  // A tied head is token_embd's view, whose file rows Embed reads: packing it would keep the
  // matrix twice, so it stays in file layout (its pages stay resident for the head's matmul).
  if (!w->tied) fn(&w->output);
  for (LayerWeights& l : w->layers) {
    for (WeightMatrix* m : {&l.gdn.qkv, &l.gdn.gate, &l.gdn.alpha, &l.gdn.beta, &l.gdn.out,
                            &l.attn.q, &l.attn.k, &l.attn.v, &l.attn.o, &l.ffn.gate, &l.ffn.up,
                            &l.ffn.down, &l.moe.shexp_gate, &l.moe.shexp_up, &l.moe.shexp_down}) {
      fn(m);
    }
  }
}

}  // namespace

bool PackWeightsByDefault() {
  // Measured (docs/performance.md): the AVX-512 VNNI tiles win prefill and decode; the AVX2 ones
  // win prefill (+57%) but lose decode (-39% .. -44%), and the portable ones lose both.
  return std::string_view(cpu::PackedKernelIsa()) == "avx512vnni";
}

Status PackWeights(Weights* weights, int threads, PackedWeights* out,
                   const std::function<void(const WeightMatrix&)>& on_packed) {
  const auto t0 = std::chrono::steady_clock::now();
  threads = std::max(1, threads);
  Status status = OkStatus();
  ForEachMatrix(weights, [&](WeightMatrix* m) {
    if (!status.ok() || m->data == nullptr || m->packed != nullptr || !HasPackedLayout(m->type))
      return;
    if (!cpu::PackedKernelFast(m->type)) return;  // this CPU's file-layout kernel is the faster one
    const size_t bytes = PackedBytes(m->type, m->cols, m->rows);
    if (bytes == 0) return;
    auto* dst = static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
    if (dst == nullptr) {
      status = OutOfMemory("out of memory packing the weights ({} bytes for one matrix)", bytes);
      return;
    }
    out->buffers.emplace_back(dst);
    out->bytes += bytes;
    const int64_t groups = (m->rows + kPackRows - 1) / kPackRows;
    const int n = static_cast<int>(std::min<int64_t>(threads, (groups + 63) / 64));
    auto pack = [m, dst, groups, n](int i) {
      PackGroups(m->type, m->data, m->row_bytes, m->cols, m->rows, groups * i / n,
                 groups * (i + 1) / n, dst);
    };
    std::vector<std::thread> pool;
    for (int i = 1; i < n; ++i) pool.emplace_back(pack, i);
    pack(0);
    for (auto& t : pool) t.join();
    m->packed = dst;
    if (on_packed) on_packed(*m);
  });
  out->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return status;
}

}  // namespace qwenrt
