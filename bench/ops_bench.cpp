// Matmul benchmarks at Qwen3.5-0.8B shapes: ref::MatMul vs cpu::MatMul on random Q4_K / Q6_K
// weights, decode (T = 1) and prefill (T = 64); cpu::Attention at depth (BM_Attention). Reports
// weight bandwidth (bytes of weights read per second, counted once per call) and tokens/s. Threads:
// all hardware threads unless QWENRT_BENCH_THREADS is set.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "base/thread_pool.h"
#include "bench_threads.h"
#include "ops/attention.h"
#include "ops/matmul.h"
#include "ops/packed.h"
#include "ops/quant.h"

namespace qwenrt {
namespace {

ThreadPool& Pool() {
  static ThreadPool pool(BenchThreads());
  return pool;
}

// Random bytes with sane fp16 scales (the kernels' speed does not depend on the values).
std::vector<uint8_t> RandomWeights(gguf::Type type, int64_t rows, int64_t cols) {
  std::mt19937 rng(42);
  std::vector<uint8_t> w(static_cast<size_t>(RowBytes(type, cols) * rows));
  for (auto& b : w) b = static_cast<uint8_t>(rng());
  const int64_t nb = rows * cols / kQK_K;
  for (int64_t i = 0; i < nb; ++i) {
    if (type == gguf::Type::Q4_K) {
      auto* b = reinterpret_cast<BlockQ4K*>(w.data()) + i;
      b->d = b->dmin = Fp32ToFp16(1e-3f);
    } else if (type == gguf::Type::Q6_K) {
      reinterpret_cast<BlockQ6K*>(w.data())[i].d = Fp32ToFp16(1e-4f);
    }
  }
  return w;
}

// Args: {rows, cols, T, type, kernel}: kernel 0 = ref::MatMul, 1 = cpu::MatMul on the file's rows,
// 2 = cpu::MatMul on the packed copy (ops/packed.h, as a model loaded with pack_weights uses).
void BM_MatMul(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1), T = state.range(2);
  const auto type = static_cast<gguf::Type>(state.range(3));
  const bool cpu = state.range(4) != 0, packed = state.range(4) == 2;
  const auto w = RandomWeights(type, rows, cols);
  std::vector<float> x(static_cast<size_t>(T * cols)), y(static_cast<size_t>(T * rows));
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  for (float& v : x) v = nd(rng);
  WeightMatrix wm = MakeWeightMatrix(type, cols, rows, w.data());
  std::vector<uint8_t> p;
  if (packed) {
    p.resize(PackedBytes(type, cols, rows));
    PackGroups(type, wm.data, wm.row_bytes, cols, rows, 0, (rows + kPackRows - 1) / kPackRows,
               p.data());
    wm.packed = p.data();
  }
  for (auto _ : state) {
    if (cpu)
      cpu::MatMul(wm, x.data(), y.data(), T, Pool());
    else
      ref::MatMul(wm, x.data(), y.data(), T);
    benchmark::DoNotOptimize(y.data());
  }
  const double bytes = static_cast<double>(wm.row_bytes) * static_cast<double>(rows);
  state.counters["weight_GB/s"] =
      benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(T), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GMAC/s"] =
      benchmark::Counter(1e-9 * rows * cols * T, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(packed ? "cpu packed"
                             : cpu  ? "cpu"
                                    : "ref") +
                 " threads=" + std::to_string(cpu ? Pool().size() : 1));
}

constexpr int64_t kQ4 = static_cast<int64_t>(gguf::Type::Q4_K),
                  kQ5 = static_cast<int64_t>(gguf::Type::Q5_K),
                  kQ6 = static_cast<int64_t>(gguf::Type::Q6_K),
                  kIQ4XS = static_cast<int64_t>(gguf::Type::IQ4_XS);

// ffn_gate / ffn_up: 3584 x 1024; ffn_down: 1024 x 3584 (Q4_K and Q6_K layers).
BENCHMARK(BM_MatMul)
    ->ArgNames({"rows", "cols", "T", "type", "cpu"})
    ->Args({3584, 1024, 1, kQ4, 0})
    ->Args({3584, 1024, 1, kQ4, 1})
    ->Args({3584, 1024, 1, kQ4, 2})
    ->Args({3584, 1024, 64, kQ4, 0})
    ->Args({3584, 1024, 64, kQ4, 1})
    ->Args({3584, 1024, 64, kQ4, 2})
    ->Args({1024, 3584, 1, kQ4, 1})
    ->Args({1024, 3584, 1, kQ4, 2})
    ->Args({1024, 3584, 64, kQ4, 1})
    ->Args({1024, 3584, 64, kQ4, 2})
    ->Args({3584, 1024, 1, kIQ4XS, 1})
    ->Args({3584, 1024, 8, kIQ4XS, 1})
    ->Args({3584, 1024, 1, kQ5, 1})
    ->Args({1024, 3584, 1, kQ6, 0})
    ->Args({1024, 3584, 1, kQ6, 1})
    ->Args({1024, 3584, 1, kQ6, 2})
    ->Args({1024, 3584, 64, kQ6, 1})
    ->Args({1024, 3584, 64, kQ6, 2})
    // Eight sessions' decode step (qwenrt-bench parallel): T = 8 on the packed copies, and the tied
    // Q6_K LM head (248320 x 1024) alone and at 8.
    ->Args({3584, 1024, 8, kQ4, 2})
    ->Args({1024, 3584, 8, kQ6, 2})
    ->Args({248320, 1024, 1, kQ6, 2})
    ->Args({248320, 1024, 8, kQ6, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// Every matmul of one Qwen3.5-0.8B forward step (24 layers: 18 gated-delta, 6 attention; tied Q6_K
// LM head over 248320 tokens), with the Q4_K_M type rules: the matmul-only bound of decode (T = 1)
// and prefill (T = 64) speed. Weights are random bytes with sane scales (~0.52 GB, built once).
struct ModelMatrices {
  std::vector<std::vector<uint8_t>> data, packed;
  std::vector<WeightMatrix> mats, packed_mats;  // the file's rows; the same with the packed copies
  size_t bytes = 0;
};

const ModelMatrices& Matrices08b() {
  static const ModelMatrices m = [] {
    ModelMatrices mm;
    const int64_t D = 1024, L = 24, F = 3584, V = 248320;
    auto add = [&](int64_t rows, int64_t cols, gguf::Type type) {
      mm.data.push_back(RandomWeights(type, rows, cols));
      WeightMatrix wm = MakeWeightMatrix(type, cols, rows, mm.data.back().data());
      mm.mats.push_back(wm);
      mm.bytes += mm.data.back().size();
      mm.packed.emplace_back(PackedBytes(type, cols, rows));
      PackGroups(type, wm.data, wm.row_bytes, cols, rows, 0, (rows + kPackRows - 1) / kPackRows,
                 mm.packed.back().data());
      wm.packed = mm.packed.back().data();
      mm.packed_mats.push_back(wm);
    };
    for (int64_t i = 0; i < L; ++i) {
      const bool more = i < L / 8 || i >= 7 * L / 8 || (i - L / 8) % 3 == 2;
      const gguf::Type mv = more ? gguf::Type::Q6_K : gguf::Type::Q4_K;
      if ((i + 1) % 4 == 0) {
        add(4096, D, gguf::Type::Q4_K);  // attn_q (joint q + gate)
        add(512, D, gguf::Type::Q4_K);   // attn_k
        add(512, D, mv);                 // attn_v
        add(D, 2048, gguf::Type::Q4_K);  // attn_output
      } else {
        add(6144, D, mv);                // attn_qkv
        add(2048, D, gguf::Type::Q4_K);  // attn_gate
        add(16, D, gguf::Type::Q4_K);    // ssm_alpha
        add(16, D, gguf::Type::Q4_K);    // ssm_beta
        add(D, 2048, gguf::Type::Q4_K);  // ssm_out
      }
      add(F, D, gguf::Type::Q4_K);  // ffn_gate
      add(F, D, gguf::Type::Q4_K);  // ffn_up
      add(D, F, mv);                // ffn_down
    }
    add(V, D, gguf::Type::Q6_K);  // tied LM head
    return mm;
  }();
  return m;
}

// Args: {T, packed}: packed = 1 runs the packed copies, as a model loaded with pack_weights does.
void BM_Model08bMatmuls(benchmark::State& state) {
  const int64_t T = state.range(0);
  const ModelMatrices& m = Matrices08b();
  const std::vector<WeightMatrix>& mats = state.range(1) != 0 ? m.packed_mats : m.mats;
  int64_t max_dim = 0;
  int64_t macs = 0;  // multiply-adds per token
  for (const auto& w : m.mats) {
    max_dim = std::max({max_dim, w.rows, w.cols});
    macs += w.rows * w.cols;
  }
  std::vector<float> x(static_cast<size_t>(T * max_dim)), y(static_cast<size_t>(T * max_dim));
  std::mt19937 rng(2);
  std::normal_distribution<float> nd;
  for (float& v : x) v = nd(rng);
  for (auto _ : state) {
    for (const auto& w : mats) cpu::MatMul(w, x.data(), y.data(), T, Pool());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["weight_GB/s"] = benchmark::Counter(static_cast<double>(m.bytes) * 1e-9,
                                                     benchmark::Counter::kIsIterationInvariantRate);
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(T), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["int8_GOP/s"] =
      benchmark::Counter(2e-9 * static_cast<double>(macs) * static_cast<double>(T),
                         benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(state.range(1) != 0 ? "cpu packed" : "cpu") +
                 " threads=" + std::to_string(Pool().size()) +
                 " weights=" + std::to_string(m.bytes >> 20) + "MiB");
}
BENCHMARK(BM_Model08bMatmuls)
    ->ArgNames({"T", "packed"})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Args({8, 1})
    ->Args({64, 0})
    ->Args({64, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// cpu::Attention at depth, the 0.8B / 4B attention shapes (Dh 256): Args {T, n_past, H, Hkv, kv}
// with kv a KvType (1 = f16, the CPU session default; 2 = q8_0), the cache in pages of 256
// positions as a session holds it. A prefill's attention grows with the square of the context;
// decode (T = 1) and the next turn's short append (T = 25) read the whole cache once per layer.
void BM_Attention(benchmark::State& state) {
  const int64_t T = state.range(0), n_past = state.range(1), H = state.range(2),
                Hkv = state.range(3), Dh = 256, n = n_past + T, row = Hkv * Dh, P = 256;
  const auto type = static_cast<KvType>(state.range(4));
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  std::vector<float> q(static_cast<size_t>(T * H * Dh)), kv(static_cast<size_t>(P * row));
  for (float& x : q) x = nd(rng);
  for (float& x : kv) x = nd(rng);
  const int64_t row_bytes = KvRowBytes(type, row);
  std::vector<std::vector<uint8_t>> pages;
  std::vector<const uint8_t*> bases;
  for (int64_t p0 = 0; p0 < n;
       p0 += P) {  // every page the same rows: speed does not depend on them
    pages.emplace_back(static_cast<size_t>(2 * P * row_bytes));
    cpu::KvEncodeRows(type, kv.data(), P, row, pages.back().data());
    cpu::KvEncodeRows(type, kv.data(), P, row, pages.back().data() + P * row_bytes);
    bases.push_back(pages.back().data());
  }
  const KvView K{bases.data(), 0, P, row_bytes, type},
      V{bases.data(), P * row_bytes, P, row_bytes, type};
  std::vector<float> out(q.size()),
      scratch(static_cast<size_t>(cpu::AttentionScratchFloats(n, H / Hkv, Dh, Pool().size())));
  const AttentionShape s{T, n_past, H, Hkv, Dh};
  for (auto _ : state) {
    cpu::Attention(s, q.data(), K, V, out.data(), scratch.data(), Pool());
    benchmark::DoNotOptimize(out.data());
  }
  // Keys seen, summed over the new tokens: T * n_past + T * (T + 1) / 2.
  const double keys = static_cast<double>(T * n_past + T * (T + 1) / 2);
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(T), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOP/s"] = benchmark::Counter(4e-9 * keys * static_cast<double>(H * Dh),
                                                 benchmark::Counter::kIsIterationInvariantRate);
  state.counters["kv_GB/s"] = benchmark::Counter(2e-9 * static_cast<double>(n * row_bytes),
                                                 benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string("cpu ") + KvTypeName(type) +
                 " threads=" + std::to_string(Pool().size()));
}
BENCHMARK(BM_Attention)
    ->ArgNames({"T", "n_past", "H", "Hkv", "kv"})
    ->Args({512, 0, 8, 2, 1})      // pp512's attention
    ->Args({512, 16384, 8, 2, 1})  // the last ubatch of a 16k prefill
    ->Args({512, 8192, 16, 4, 1})  // 4B, the last ubatch of an 8k prefill
    ->Args({1, 8192, 8, 2, 1})     // decode at depth 8k
    ->Args({1, 8192, 8, 2, 2})
    ->Args({25, 8192, 8, 2, 1})  // turn 2: a 25-token append after an 8k history
    ->Args({1, 32768, 8, 2, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace qwenrt

BENCHMARK_MAIN();
