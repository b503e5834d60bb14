// qwenrt-bench roof: this machine's limits for the CPU matrix kernels, 1 and N threads.
//   read GB/s      sum of a buffer far larger than the caches (64-byte vector loads, 4 streams)
//   int8 GOP/s     independent vpdpbusd chains (512-bit with AVX-512 VNNI, else 256-bit, else
//                  maddubs+madd), counted as 2 ops (multiply + add) per u8 x s8 product
//   f32 GFLOP/s    independent FMA chains (512-bit with AVX-512, else 256-bit), 2 flops per lane
// Prefill of a quantized model is bounded by the int8 figure (plus the nibble unpacking around it),
// of a float model by the f32 figure, decode by the read bandwidth. Numbers depend on the (shared)
// machine: run it beside the benchmark.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif
// GCC 12's AVX-512 reductions read an "undefined" register it then reports as uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace qwenrt::bench {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Sums `bytes` of `p` with vector loads; returns a value that depends on every byte so nothing is
// elided.
uint64_t ReadSum(const uint8_t* p, size_t bytes) {
#if defined(__AVX512F__)
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 256 <= bytes; i += 256) {
    a0 = _mm512_add_epi64(a0, _mm512_load_si512(p + i));
    a1 = _mm512_add_epi64(a1, _mm512_load_si512(p + i + 64));
    a2 = _mm512_add_epi64(a2, _mm512_load_si512(p + i + 128));
    a3 = _mm512_add_epi64(a3, _mm512_load_si512(p + i + 192));
  }
  return static_cast<uint64_t>(_mm512_reduce_add_epi64(
      _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3))));
#else
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  const uint64_t* q = reinterpret_cast<const uint64_t*>(p);
  for (size_t i = 0; i + 4 <= bytes / 8; i += 4) {
    s0 += q[i];
    s1 += q[i + 1];
    s2 += q[i + 2];
    s3 += q[i + 3];
  }
  return s0 + s1 + s2 + s3;
#endif
}

// `iters` rounds of independent u8 x s8 dot-accumulate instructions (24 chains with AVX-512: 16
// were still latency-bound on Zen 5; 12 otherwise); returns the products counted. The AVX-512 round
// is written out in asm: from intrinsics (inlined into RunRoof, or rolled, or even unrolled) GCC
// kept some chains in memory, a store and a move per instruction, and the loop ran at a third to a
// half of the machine's rate.
__attribute__((noinline)) uint64_t Int8Dots(int64_t iters, int seed, int32_t* sink) {
#if defined(__AVX512VNNI__)
  const __m512i u = _mm512_set1_epi8(static_cast<char>(seed + 1)),
                s = _mm512_set1_epi8(static_cast<char>(seed + 3));
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0,
          a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0, a12 = a0, a13 = a0, a14 = a0, a15 = a0,
          a16 = a0, a17 = a0, a18 = a0, a19 = a0, a20 = a0, a21 = a0, a22 = a0, a23 = a0;
  for (int64_t i = 0; i < iters; ++i) {
#define QWENRT_DP(k) "vpdpbusd %[s], %[u], %[a" #k "]\n\t"
    // Two statements of 12 chains (an asm takes at most 30 operands; each "+v" counts twice).
    __asm__(QWENRT_DP(0) QWENRT_DP(1) QWENRT_DP(2) QWENRT_DP(3) QWENRT_DP(4) QWENRT_DP(5)
                QWENRT_DP(6) QWENRT_DP(7) QWENRT_DP(8) QWENRT_DP(9) QWENRT_DP(10) QWENRT_DP(11)
            : [a0] "+v"(a0), [a1] "+v"(a1), [a2] "+v"(a2), [a3] "+v"(a3), [a4] "+v"(a4),
              [a5] "+v"(a5), [a6] "+v"(a6), [a7] "+v"(a7), [a8] "+v"(a8), [a9] "+v"(a9),
              [a10] "+v"(a10), [a11] "+v"(a11)
            : [u] "v"(u), [s] "v"(s));
    __asm__(QWENRT_DP(0) QWENRT_DP(1) QWENRT_DP(2) QWENRT_DP(3) QWENRT_DP(4) QWENRT_DP(5)
                QWENRT_DP(6) QWENRT_DP(7) QWENRT_DP(8) QWENRT_DP(9) QWENRT_DP(10) QWENRT_DP(11)
            : [a0] "+v"(a12), [a1] "+v"(a13), [a2] "+v"(a14), [a3] "+v"(a15), [a4] "+v"(a16),
              [a5] "+v"(a17), [a6] "+v"(a18), [a7] "+v"(a19), [a8] "+v"(a20), [a9] "+v"(a21),
              [a10] "+v"(a22), [a11] "+v"(a23)
            : [u] "v"(u), [s] "v"(s));
#undef QWENRT_DP
  }
  const __m512i sums[] = {a0,  a1,  a2,  a3,  a4,  a5,  a6,  a7,  a8,  a9,  a10, a11,
                          a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23};
  __m512i t = sums[0];
  for (int k = 1; k < 24; ++k) t = _mm512_add_epi32(t, sums[k]);
  *sink = _mm512_reduce_add_epi32(t);
  return static_cast<uint64_t>(iters) * 24 * 64;
#elif defined(__AVX2__)
  const __m256i u = _mm256_set1_epi8(static_cast<char>(seed + 1)),
                s = _mm256_set1_epi8(static_cast<char>(seed + 3));
  __m256i a[12];
  for (auto& x : a) x = _mm256_setzero_si256();
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (auto& x : a) {
#if defined(__AVXVNNI__)
      x = _mm256_dpbusd_avx_epi32(x, u, s);
#else
      x = _mm256_add_epi32(x, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
    }
    __asm__ volatile("" : "+x"(a[0]), "+x"(a[1]), "+x"(a[2]), "+x"(a[3]));
  }
  __m256i t = a[0];
  for (int k = 1; k < 12; ++k) t = _mm256_add_epi32(t, a[k]);
  alignas(32) int32_t v[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(v), t);
  *sink = v[0] + v[7];
  return static_cast<uint64_t>(iters) * 12 * 32;
#else
  int32_t acc = 0;
  for (int64_t i = 0; i < iters * 64; ++i)
    acc += static_cast<int32_t>(static_cast<uint8_t>(seed + i)) * (seed - 3);
  *sink = acc;
  return static_cast<uint64_t>(iters) * 64;
#endif
}

// `iters` rounds of N independent chains x = fma(x, m, c) of vector type V (unrolled, so the chains
// stay in registers); returns their sum.
template <int N, typename V, typename Fma, typename Add>
V FmaChains(int64_t iters, V m, V c, V one, Fma fma, Add add) {
  V a[N];
  for (auto& x : a) x = one;
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 24
    for (auto& x : a) x = fma(x, m, c);
  }
  V t = a[0];
  for (int k = 1; k < N; ++k) t = add(t, a[k]);
  return t;
}

// `iters` rounds of independent f32 FMA chains (24 x 16 lanes with AVX-512, 12 x 8 with AVX2+FMA);
// returns the FMAs counted (each 2 flops). Not inlined, as Int8Dots.
__attribute__((noinline)) uint64_t F32Fmas(int64_t iters, int seed, float* sink) {
  const float mul = 1.0f + 1e-7f * static_cast<float>(seed);
#if defined(__AVX512F__)
  const __m512 t = FmaChains<24>(
      iters, _mm512_set1_ps(mul), _mm512_set1_ps(1e-9f), _mm512_set1_ps(1.0f),
      [](__m512 x, __m512 m, __m512 c) { return _mm512_fmadd_ps(x, m, c); },
      [](__m512 x, __m512 y) { return _mm512_add_ps(x, y); });
  *sink = _mm512_reduce_add_ps(t);
  return static_cast<uint64_t>(iters) * 24 * 16;
#elif defined(__AVX2__) && defined(__FMA__)
  const __m256 t = FmaChains<12>(
      iters, _mm256_set1_ps(mul), _mm256_set1_ps(1e-9f), _mm256_set1_ps(1.0f),
      [](__m256 x, __m256 m, __m256 c) { return _mm256_fmadd_ps(x, m, c); },
      [](__m256 x, __m256 y) { return _mm256_add_ps(x, y); });
  alignas(32) float v[8];
  _mm256_store_ps(v, t);
  *sink = v[0] + v[7];
  return static_cast<uint64_t>(iters) * 12 * 8;
#else
  float acc = 1.0f;
  for (int64_t i = 0; i < iters * 16; ++i) acc = acc * mul + 1e-9f;
  *sink = acc;
  return static_cast<uint64_t>(iters) * 16;
#endif
}

const char* Int8Isa() {
#if defined(__AVX512VNNI__)
  return "vpdpbusd zmm";
#elif defined(__AVXVNNI__)
  return "vpdpbusd ymm (avx_vnni)";
#elif defined(__AVX2__)
  return "vpmaddubsw+vpmaddwd ymm";
#else
  return "scalar";
#endif
}

double ThreadCpu() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Runs fn(thread index) on `threads` threads at once; returns the wall time of the slowest and, in
// *cpu, the largest CPU time one thread was actually scheduled for (on a shared machine the rate
// per CPU-second is the machine's own limit, the wall-clock rate what this run got).
template <typename F>
double Parallel(int threads, F fn, double* cpu) {
  std::vector<std::thread> pool;
  std::vector<double> cpus(threads);
  auto timed = [&](int i) {
    const double c0 = ThreadCpu();
    fn(i);
    cpus[i] = ThreadCpu() - c0;
  };
  const double t0 = Now();
  for (int i = 1; i < threads; ++i) pool.emplace_back(timed, i);
  timed(0);
  for (auto& t : pool) t.join();
  *cpu = *std::max_element(cpus.begin(), cpus.end());
  return Now() - t0;
}

}  // namespace

int RunRoof(int argc, char** argv) {
  int max_threads = 2;
  size_t mib = 1024;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "-t") == 0 && i + 1 < argc) {
      max_threads = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--mib") == 0 && i + 1 < argc) {
      mib = static_cast<size_t>(std::max(64, std::atoi(argv[++i])));
    } else {
      std::fprintf(stderr,
                   "usage: qwenrt-bench roof [-t THREADS] [--mib BUFFER_MIB]\n"
                   "  read bandwidth and int8 dot throughput with 1 and THREADS threads (default "
                   "2, 1024 MiB)\n");
      return std::strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
  }
  const size_t bytes = mib << 20;
  uint8_t* buf = static_cast<uint8_t*>(std::aligned_alloc(64, bytes));
  if (buf == nullptr) {
    std::fprintf(stderr, "qwenrt-bench roof: cannot allocate %zu MiB\n", mib);
    return 1;
  }
  for (size_t i = 0; i < bytes; ++i) buf[i] = static_cast<uint8_t>(i * 131);
  std::printf("%-8s %12s %14s %12s %14s %12s %14s\n", "threads", "read GB/s", "(per CPU-s)",
              "int8 GOP/s", "(per CPU-s)", "f32 GFLOP/s", "(per CPU-s)");
  std::vector<int> counts = {1};
  if (max_threads > 1) counts.push_back(max_threads);
  volatile uint64_t keep = 0;
  for (int threads : counts) {
    // Bandwidth: each thread reads its slice; best of 5 passes.
    double best_bw = 0, best_bw_cpu = 0;
    for (int rep = 0; rep < 5; ++rep) {
      std::vector<uint64_t> sums(threads);
      const size_t slice = (bytes / threads) & ~size_t{255};
      double cpu = 0;
      const double s = Parallel(
          threads, [&](int t) { sums[t] = ReadSum(buf + t * slice, slice); }, &cpu);
      for (uint64_t v : sums) keep = keep + v;  // keeps the sums alive
      best_bw = std::max(best_bw, static_cast<double>(slice) * threads / s / 1e9);
      best_bw_cpu = std::max(best_bw_cpu, static_cast<double>(slice) * threads / cpu / 1e9);
    }
    // int8: each thread runs its own chains; best of 3.
    double best_ops = 0, best_ops_cpu = 0;
    const int64_t iters = 20'000'000;
    for (int rep = 0; rep < 3; ++rep) {
      std::vector<uint64_t> products(threads);
      std::vector<int32_t> sinks(threads);
      double cpu = 0;
      const double s = Parallel(
          threads, [&](int t) { products[t] = Int8Dots(iters, t + rep, &sinks[t]); }, &cpu);
      uint64_t total = 0;
      for (int t = 0; t < threads; ++t) {
        total += products[t];
        keep = keep + static_cast<uint64_t>(sinks[t]);
      }
      best_ops = std::max(best_ops, 2.0 * static_cast<double>(total) / s / 1e9);
      best_ops_cpu = std::max(best_ops_cpu, 2.0 * static_cast<double>(total) / cpu / 1e9);
    }
    // f32: each thread runs its own FMA chains; best of 3.
    double best_flops = 0, best_flops_cpu = 0;
    for (int rep = 0; rep < 3; ++rep) {
      std::vector<uint64_t> fmas(threads);
      std::vector<float> sinks(threads);
      double cpu = 0;
      const double s = Parallel(
          threads, [&](int t) { fmas[t] = F32Fmas(iters, t + rep, &sinks[t]); }, &cpu);
      uint64_t total = 0;
      for (int t = 0; t < threads; ++t) {
        total += fmas[t];
        keep = keep + static_cast<uint64_t>(sinks[t] > 0.0f);
      }
      best_flops = std::max(best_flops, 2.0 * static_cast<double>(total) / s / 1e9);
      best_flops_cpu = std::max(best_flops_cpu, 2.0 * static_cast<double>(total) / cpu / 1e9);
    }
    std::printf("%-8d %12.1f %14.1f %12.0f %14.0f %12.0f %14.0f\n", threads, best_bw, best_bw_cpu,
                best_ops, best_ops_cpu, best_flops, best_flops_cpu);
  }
  std::printf("int8 instruction: %s (2 ops per u8 x s8 product)\n", Int8Isa());
  std::free(buf);
  return keep == 42 ? 3 : 0;
}

}  // namespace qwenrt::bench
