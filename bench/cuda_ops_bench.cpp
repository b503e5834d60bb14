// Kernel timings of the CUDA ops (src/ops/cuda_ops.h) at Qwen3.5-like shapes: RMSNorm, the
// dequantizing mat-vec per weight type (decode T = 1 and a small batch), the token-serial gated
// delta rule. Each benchmark uploads its inputs once and times 200 back-to-back launches with CUDA
// events (kernel time only); reported: time per launch, achieved GB/s of the bytes the kernel must
// move. Built without CUDA (or run without a device) it only says so.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "ops/cuda_device.h"
#include "ops/cuda_ops.h"
#include "ops/quant.h"

#ifdef QWENRT_HAVE_CUDA
namespace qwenrt {
namespace {

constexpr int kIters = 200;

std::vector<float> Random(size_t n, float lo, float hi) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Random bytes with moderate fp16 scales (speed does not depend on the values).
std::vector<uint8_t> RandomWeights(gguf::Type type, int64_t cols, int64_t rows) {
  std::vector<uint8_t> w(static_cast<size_t>(RowBytes(type, cols) * rows));
  std::mt19937 rng(42);
  for (auto& b : w) b = static_cast<uint8_t>(rng() & 0x3f);  // small f32/f16/bf16 values too
  const uint16_t d = Fp32ToFp16(1e-3f);
  const int64_t bb = BlockBytes(type);
  if (type == gguf::Type::Q8_0 || type == gguf::Type::Q4_K || type == gguf::Type::Q5_K ||
      type == gguf::Type::Q6_K) {
    const size_t d_off = type == gguf::Type::Q6_K ? 208 : 0;
    for (size_t off = 0; off < w.size(); off += static_cast<size_t>(bb)) {
      std::memcpy(&w[off + d_off], &d, 2);
      if (type == gguf::Type::Q4_K || type == gguf::Type::Q5_K) std::memcpy(&w[off + 2], &d, 2);
    }
  }
  return w;
}

void Report(benchmark::State& state, const Status& s, const cuda::KernelTiming& t, double bytes) {
  if (!s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  state.SetIterationTime(t.ms * 1e-3);
  state.counters["us"] = t.ms * 1e3;
  state.counters["GB/s"] = bytes / (t.ms * 1e-3) / 1e9;
}

void BM_RmsNorm(benchmark::State& state) {
  const int64_t rows = state.range(0), n = state.range(1);
  std::vector<float> x = Random(static_cast<size_t>(rows * n), -1, 1),
                     w(static_cast<size_t>(n), 1.0f), y(x.size());
  for (auto _ : state) {
    cuda::KernelTiming t{kIters, 0.0};
    Status s = cuda::RmsNorm(x.data(), w.data(), y.data(), rows, n, 1e-6f, &t);
    Report(state, s, t, 4.0 * (2.0 * rows * n + n));
  }
}
BENCHMARK(BM_RmsNorm)
    ->Args({1, 1024})
    ->Args({1, 4096})
    ->Args({512, 4096})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void BM_DequantMatVec(benchmark::State& state) {
  const auto type = static_cast<gguf::Type>(state.range(0));
  const int64_t cols = state.range(1), rows = state.range(2), T = state.range(3);
  std::vector<uint8_t> wb = RandomWeights(type, cols, rows);
  WeightMatrix w = MakeWeightMatrix(type, cols, rows, wb.data());
  std::vector<float> x = Random(static_cast<size_t>(T * cols), -1, 1),
                     y(static_cast<size_t>(T * rows));
  state.SetLabel(gguf::TypeName(type));
  for (auto _ : state) {
    cuda::KernelTiming t{kIters, 0.0};
    Status s = cuda::DequantMatVec(w, x.data(), y.data(), T, &t);
    Report(state, s, t, static_cast<double>(wb.size()) + 4.0 * T * (cols + rows));
  }
}
// Args: type id, cols, rows, T. 4096 x 4096 per type; the 0.8B tied LM head (Q6_K, V = 248320).
BENCHMARK(BM_DequantMatVec)
    ->Args({0, 4096, 4096, 1})
    ->Args({1, 4096, 4096, 1})
    ->Args({30, 4096, 4096, 1})
    ->Args({8, 4096, 4096, 1})
    ->Args({12, 4096, 4096, 1})
    ->Args({13, 4096, 4096, 1})
    ->Args({14, 4096, 4096, 1})
    ->Args({12, 4096, 4096, 8})
    ->Args({14, 1024, 248320, 1})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void BM_GatedDeltaRecurrent(benchmark::State& state) {
  const GatedDeltaShape s{state.range(0), 16, 32, 128, 128};
  const size_t nqk = static_cast<size_t>(s.T * s.Hk * s.Dk),
               nv = static_cast<size_t>(s.T * s.Hv * s.Dv);
  std::vector<float> q = Random(nqk, -0.1f, 0.1f), k = Random(nqk, -0.1f, 0.1f),
                     v = Random(nv, -1, 1);
  std::vector<float> g = Random(static_cast<size_t>(s.T * s.Hv), -1, 0),
                     beta = Random(static_cast<size_t>(s.T * s.Hv), 0.1f, 0.9f);
  std::vector<float> st = Random(static_cast<size_t>(s.Hv * s.Dv * s.Dk), -0.1f, 0.1f), out(nv);
  for (auto _ : state) {
    cuda::KernelTiming t{kIters, 0.0};
    Status status = cuda::GatedDeltaRecurrent(s, q.data(), k.data(), v.data(), g.data(),
                                              beta.data(), st.data(), out.data(), &t);
    // State read + written once, inputs read once, output written once.
    Report(state, status, t, 4.0 * (2.0 * st.size() + 2.0 * nqk + 2.0 * nv + 2.0 * s.T * s.Hv));
    state.counters["tok/s"] = s.T / (t.ms * 1e-3);
  }
}
// T = 1 (decode), 64 (one prefill chunk); Hk 16, Hv 32, Dk = Dv = 128.
BENCHMARK(BM_GatedDeltaRecurrent)
    ->Arg(1)
    ->Arg(64)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace qwenrt

int main(int argc, char** argv) {
  if (!qwenrt::CudaAvailable()) {
    std::printf("cuda_ops_bench: no CUDA device, nothing to time\n");
    return 0;
  }
  auto name = qwenrt::CudaDeviceName();
  std::printf("cuda_ops_bench on %s\n",
              name.ok() ? name->c_str() : name.status().ToString().c_str());
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

#else  // !QWENRT_HAVE_CUDA

int main() {
  std::printf("cuda_ops_bench: qwenrt was built without CUDA, nothing to time\n");
  return 0;
}

#endif  // QWENRT_HAVE_CUDA
