// The CPU kernels chosen at run time (ops/cpu_dispatch.h): the choice rule, and every ISA level
// this machine runs checked on its own, in one process: each multi-token dot kernel against the
// scalar reference dot on odd sizes, QuantizeRowQ8K bit-identical to the reference, and the forward
// pass split-invariant bit for bit (prefill at once == token by token == uneven ubatches) on the
// tiny fixture models. The other op tests (matmul_test, gated_delta_test, ...) run once per level
// too: tests/cpu_levels.cmake registers them again with QWENRT_CPU_ISA set.
#include "ops/cpu_dispatch.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "model_test_util.h"
#include "ops/cpu_features.h"
#include "ops/quant.h"
#include "ops/quant_iq.h"
#include "ops/vec_dot.h"
#include "ops/vec_dot_iq.h"
#include "qwenrt/gguf.hpp"

namespace qwenrt {
namespace {

using cpu_dispatch::Level;

// The runnable levels, each made active in turn; the level in use before is restored at the end.
template <class Fn>
void ForEachLevel(Fn fn) {
  const std::string before = cpu_dispatch::Active().name;
  int ran = 0;
  for (const Level& level : cpu_dispatch::Levels()) {
    if (!level.runnable) {
      WARN("ISA level " << level.name << ": not runnable on this CPU, not tested here");
      continue;
    }
    REQUIRE(cpu_dispatch::UseLevel(level.name));
    REQUIRE(std::string(cpu_dispatch::Active().name) == level.name);
    INFO("ISA level " << level.name << " (" << cpu::DotKernelIsa() << ")");
    fn(level);
    ++ran;
  }
  REQUIRE(cpu_dispatch::UseLevel(before));
  CHECK(ran >= 1);
}

// Random well-formed weight rows: random quant bytes, fp16 scales small enough that values are
// O(0.1).
std::vector<uint8_t> RandomRows(gguf::Type type, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> data(static_cast<size_t>(RowBytes(type, cols) * rows));
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> ud(0.5e-3f, 2e-3f), nd(-0.1f, 0.1f);
  const int64_t n = rows * cols, nb = n / BlockElems(type);
  auto* h = reinterpret_cast<uint16_t*>(data.data());
  switch (type) {
    case gguf::Type::F32:
      for (int64_t i = 0; i < n; ++i) reinterpret_cast<float*>(data.data())[i] = nd(rng);
      break;
    case gguf::Type::F16:
      for (int64_t i = 0; i < n; ++i) h[i] = Fp32ToFp16(nd(rng));
      break;
    case gguf::Type::BF16:
      for (int64_t i = 0; i < n; ++i) h[i] = Fp32ToBf16(nd(rng));
      break;
    case gguf::Type::Q8_0:
      for (int64_t i = 0; i < nb; ++i)
        reinterpret_cast<BlockQ8_0*>(data.data())[i].d = Fp32ToFp16(ud(rng));
      break;
    case gguf::Type::Q4_K:
      for (int64_t i = 0; i < nb; ++i) {
        auto& b = reinterpret_cast<BlockQ4K*>(data.data())[i];
        b.d = Fp32ToFp16(ud(rng)), b.dmin = Fp32ToFp16(ud(rng));
      }
      break;
    case gguf::Type::Q5_K:
      for (int64_t i = 0; i < nb; ++i) {
        auto& b = reinterpret_cast<BlockQ5K*>(data.data())[i];
        b.d = Fp32ToFp16(ud(rng)), b.dmin = Fp32ToFp16(ud(rng));
      }
      break;
    case gguf::Type::Q6_K:
      for (int64_t i = 0; i < nb; ++i)
        reinterpret_cast<BlockQ6K*>(data.data())[i].d = Fp32ToFp16(0.1f * ud(rng));
      break;
    default: {
      // The other block types: every fp16 scale of each block set to a value of O(1e-3) (random
      // bytes would give NaN and infinity); MXFP4's shared exponent and IQ1_M's scale nibbles
      // likewise.
      const size_t bb = static_cast<size_t>(RowBytes(type, BlockElems(type)));
      std::vector<size_t> halves;  // offsets of fp16 fields in a block
      switch (type) {
        case gguf::Type::Q4_1:
          halves = {offsetof(BlockQ4_1, d), offsetof(BlockQ4_1, m)};
          break;
        case gguf::Type::Q5_1:
          halves = {offsetof(BlockQ5_1, d), offsetof(BlockQ5_1, m)};
          break;
        case gguf::Type::Q2_K:
          halves = {offsetof(BlockQ2K, d), offsetof(BlockQ2K, dmin)};
          break;
        case gguf::Type::Q3_K:
          halves = {offsetof(BlockQ3K, d)};
          break;
        case gguf::Type::MXFP4:
        case gguf::Type::IQ1_M:
          break;
        default:
          halves = {0};
          break;  // d first: Q4_0 Q5_0 IQ4_NL IQ4_XS IQ2_* IQ3_* IQ1_S
      }
      for (int64_t i = 0; i < nb; ++i) {
        uint8_t* blk = data.data() + static_cast<size_t>(i) * bb;
        for (size_t off : halves) {
          const uint16_t d = Fp32ToFp16(ud(rng));
          std::memcpy(blk + off, &d, 2);
        }
        if (type == gguf::Type::MXFP4)
          blk[offsetof(BlockMXFP4, e)] = static_cast<uint8_t>(118 + rng() % 4);
        if (type == gguf::Type::IQ1_M) {
          // The fp16 scale is the top nibbles of the four little-endian u16 of `scales`.
          const uint16_t d = Fp32ToFp16(ud(rng));
          auto* sc = blk + offsetof(BlockIQ1M, scales);
          for (int k = 0; k < 4; ++k)
            sc[2 * k + 1] =
                static_cast<uint8_t>((sc[2 * k + 1] & 0x0F) | (((d >> (4 * k)) & 0x0F) << 4));
        }
      }
      break;
    }
  }
  return data;
}

struct DotCase {
  gguf::Type type;
  cpu::DotKernel kernel;
  float (*ref)(const void* w, const void* a, int64_t n);  // on the kernel's activation format
  gguf::Type act;                                         // F32, Q8_K or Q8_0
};

float RefF32(const void* w, const void* a, int64_t n) {
  return ref::VecDotF32(static_cast<const float*>(w), static_cast<const float*>(a), n);
}
float RefF16(const void* w, const void* a, int64_t n) {
  return ref::VecDotF16_F32(static_cast<const uint16_t*>(w), static_cast<const float*>(a), n);
}
float RefBF16(const void* w, const void* a, int64_t n) {
  return ref::VecDotBF16_F32(static_cast<const uint16_t*>(w), static_cast<const float*>(a), n);
}

// The grid i-quants' kernels of the level in use (they are reached through IQuantDotKernel).
template <gguf::Type T>
void IQuantDot(const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out,
               int64_t out_stride) {
  cpu::IQuantDotKernel(T)(w, a, a_stride, ntok, n, out, out_stride);
}

// The forwarders of cpu_dispatch.cpp: each call goes to the level in use.
const DotCase kDotCases[] = {
    {gguf::Type::Q4_K, cpu::DotQ4K_Q8K, ref::VecDotQ4K_Q8K, gguf::Type::Q8_K},
    {gguf::Type::Q5_K, cpu::DotQ5K_Q8K, ref::VecDotQ5K_Q8K, gguf::Type::Q8_K},
    {gguf::Type::Q6_K, cpu::DotQ6K_Q8K, ref::VecDotQ6K_Q8K, gguf::Type::Q8_K},
    {gguf::Type::Q8_0, cpu::DotQ8_0_Q8_0, ref::VecDotQ8_0_Q8_0, gguf::Type::Q8_0},
    {gguf::Type::F32, cpu::DotF32_F32, RefF32, gguf::Type::F32},
    {gguf::Type::F16, cpu::DotF16_F32, RefF16, gguf::Type::F32},
    {gguf::Type::BF16, cpu::DotBF16_F32, RefBF16, gguf::Type::F32},
    {gguf::Type::Q4_0, cpu::DotQ4_0_Q8_0, ref::VecDotQ4_0_Q8_0, gguf::Type::Q8_0},
    {gguf::Type::Q4_1, cpu::DotQ4_1_Q8_0, ref::VecDotQ4_1_Q8_0, gguf::Type::Q8_0},
    {gguf::Type::Q5_0, cpu::DotQ5_0_Q8_0, ref::VecDotQ5_0_Q8_0, gguf::Type::Q8_0},
    {gguf::Type::Q5_1, cpu::DotQ5_1_Q8_0, ref::VecDotQ5_1_Q8_0, gguf::Type::Q8_0},
    {gguf::Type::IQ4_NL, cpu::DotIQ4NL_Q8_0, ref::VecDotIQ4NL_Q8_0, gguf::Type::Q8_0},
    {gguf::Type::MXFP4, cpu::DotMXFP4_Q8_0, ref::VecDotMXFP4_Q8_0, gguf::Type::Q8_0},
    {gguf::Type::Q2_K, cpu::DotQ2K_Q8K, ref::VecDotQ2K_Q8K, gguf::Type::Q8_K},
    {gguf::Type::Q3_K, cpu::DotQ3K_Q8K, ref::VecDotQ3K_Q8K, gguf::Type::Q8_K},
    {gguf::Type::IQ4_XS, cpu::DotIQ4XS_Q8K, ref::VecDotIQ4XS_Q8K, gguf::Type::Q8_K},
    {gguf::Type::IQ2_XXS, IQuantDot<gguf::Type::IQ2_XXS>, ref::VecDotIQ2XXS_Q8K, gguf::Type::Q8_K},
    {gguf::Type::IQ2_XS, IQuantDot<gguf::Type::IQ2_XS>, ref::VecDotIQ2XS_Q8K, gguf::Type::Q8_K},
    {gguf::Type::IQ2_S, IQuantDot<gguf::Type::IQ2_S>, ref::VecDotIQ2S_Q8K, gguf::Type::Q8_K},
    {gguf::Type::IQ3_XXS, IQuantDot<gguf::Type::IQ3_XXS>, ref::VecDotIQ3XXS_Q8K, gguf::Type::Q8_K},
    {gguf::Type::IQ3_S, IQuantDot<gguf::Type::IQ3_S>, ref::VecDotIQ3S_Q8K, gguf::Type::Q8_K},
    {gguf::Type::IQ1_S, IQuantDot<gguf::Type::IQ1_S>, ref::VecDotIQ1S_Q8K, gguf::Type::Q8_K},
    {gguf::Type::IQ1_M, IQuantDot<gguf::Type::IQ1_M>, ref::VecDotIQ1M_Q8K, gguf::Type::Q8_K},
};

// Every ntok the level takes, on `rows` weight rows of `cols` elements: each output against the
// reference dot of the same (quantized) activations. Integer sums are exact in both, so the only
// difference is float summation order: bounded by 1e-5 of sum |w * x| (computed in double from the
// dequantized operands).
void CheckDots(const DotCase& c, int64_t rows, int64_t cols) {
  CAPTURE(static_cast<int>(c.type), rows, cols);
  const int max_tok = cpu::MaxDotTokens();
  REQUIRE(max_tok >= 1);
  REQUIRE(max_tok <= 16);
  const auto w = RandomRows(c.type, rows, cols, static_cast<uint32_t>(rows * 131 + cols));
  const size_t wb = static_cast<size_t>(RowBytes(c.type, cols));
  const size_t ab = static_cast<size_t>(RowBytes(c.act, cols));
  std::mt19937 rng(static_cast<uint32_t>(cols));
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(max_tok * cols));
  for (float& v : x) v = nd(rng);
  std::vector<uint8_t> a(ab * max_tok);
  std::vector<float> xq(x.size()), wf(static_cast<size_t>(cols));
  for (int t = 0; t < max_tok; ++t) {
    const float* xt = x.data() + t * cols;
    if (c.act == gguf::Type::Q8_K) QuantizeRowQ8K(xt, a.data() + t * ab, cols);
    if (c.act == gguf::Type::Q8_0) QuantizeRowQ8_0(xt, a.data() + t * ab, cols);
    if (c.act == gguf::Type::F32) std::memcpy(a.data() + t * ab, xt, ab);
    REQUIRE(ref::DequantizeRow(c.act, a.data() + t * ab, xq.data() + t * cols, cols));
  }
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* wr = w.data() + r * wb;
    REQUIRE(ref::DequantizeRow(c.type, wr, wf.data(), cols));
    for (int ntok = 1; ntok <= max_tok; ++ntok) {
      std::vector<float> out(static_cast<size_t>(3 * ntok),
                             NAN);  // out_stride 3: the gaps stay NaN
      c.kernel(wr, a.data(), ab, ntok, cols, out.data(), 3);
      for (int t = 0; t < ntok; ++t) {
        CAPTURE(r, ntok, t);
        double mag = 0;
        for (int64_t i = 0; i < cols; ++i) mag += std::fabs(double(wf[i]) * xq[t * cols + i]);
        const float want = c.ref(wr, a.data() + t * ab, cols);
        REQUIRE(std::fabs(double(out[3 * t]) - want) <= 1e-5 * mag + 1e-30);
        REQUIRE(std::isnan(out[3 * t + 1]));
      }
    }
  }
}

TEST_CASE("the ISA level is the best runnable one at or below QWENRT_CPU_ISA", "[cpu]") {
  const auto* table = cpu_dispatch::Levels()[0].table;
  const Level levels[] = {
      {"baseline", table, true}, {"avx2", table, false}, {"avx512", table, true}};
  CHECK(std::string(cpu_dispatch::Choose(levels, nullptr).name) == "avx512");
  CHECK(std::string(cpu_dispatch::Choose(levels, "avx512").name) == "avx512");
  CHECK(std::string(cpu_dispatch::Choose(levels, "avx2").name) == "baseline");  // avx2 not runnable
  CHECK(std::string(cpu_dispatch::Choose(levels, "baseline").name) == "baseline");
  CHECK(std::string(cpu_dispatch::Choose(levels, "sse9").name) == "avx512");  // unknown: no cap

  // This build: the level in use is the choice for the environment this test runs in.
  const char* cap = std::getenv("QWENRT_CPU_ISA");
  CHECK(&cpu_dispatch::Active() == &cpu_dispatch::Choose(cpu_dispatch::Levels(), cap));
  CHECK_FALSE(cpu_dispatch::UseLevel("no-such-level"));
  std::string names;
  for (const Level& l : cpu_dispatch::Levels())
    names += std::string(" ") + l.name + (l.runnable ? "" : "(no)");
  WARN("ISA levels:" << names << "; in use: " << cpu_dispatch::Active().name << " ("
                     << cpu::DotKernelIsa() << ", QWENRT_CPU_ISA=" << (cap ? cap : "unset") << ")");
  CHECK(cpu_dispatch::Levels()[0].runnable);
}

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
TEST_CASE("cpuid detection agrees with the compiler's runtime checks", "[cpu]") {
  const CpuFeatures& f = DetectCpuFeatures();
  const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                  __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
  CHECK(f.x86_64_v3 == v3);
  const bool v4_vnni = v3 && __builtin_cpu_supports("avx512f") &&
                       __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                       __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd") &&
                       __builtin_cpu_supports("avx512vnni");
  CHECK(f.avx512_vnni == v4_vnni);
}
#endif

TEST_CASE("every ISA level's dot kernels match the reference dots on odd sizes", "[cpu]") {
  ForEachLevel([](const Level&) {
    for (const DotCase& c : kDotCases) {
      for (int64_t rows : {1, 5}) CheckDots(c, rows, 768);
      CheckDots(c, 3, 1280);                              // 5 super-blocks
      if (c.act == gguf::Type::F32) CheckDots(c, 3, 37);  // the float kernels' scalar tails
    }
  });
}

TEST_CASE("every ISA level's QuantizeRowQ8K is bit-identical to the reference", "[cpu]") {
  ForEachLevel([](const Level&) {
    const int64_t n = 1024;
    for (uint32_t seed = 0; seed < 8; ++seed) {
      std::mt19937 rng(seed);
      std::normal_distribution<float> nd(0.f, 1.f);
      std::vector<float> x(n);
      for (float& v : x) v = nd(rng);
      if (seed == 1) std::fill(x.begin(), x.begin() + 256, 0.f);  // an all-zero block
      if (seed == 2) x[300] = 50.f, x[290] = -50.f;               // magnitude tie: the first wins
      std::vector<uint8_t> a(RowBytes(gguf::Type::Q8_K, n)), b(a.size());
      QuantizeRowQ8K(x.data(), a.data(), n);
      cpu::QuantizeRowQ8K(x.data(), b.data(), n);
      CAPTURE(seed);
      REQUIRE(std::memcmp(a.data(), b.data(), a.size()) == 0);
    }
  });
}

// The cpu path with the recurrent delta rule works row by row in a fixed order (per-row activation
// quantization, per-query attention, per-token recurrence), so on every level the logits of a
// sequence are the same bits however it is split into ubatches (forward_invariants_test has the
// chunked form, which only agrees to rounding).
TEST_CASE("every ISA level is split-invariant bit for bit", "[cpu]") {
  for (const char* m : {"micro-s1-f32", "tiny-s1-q4km"}) {
    const auto model = test::LoadFixture(m);
    auto seq = test::ReadTokens("tokens/seqA.txt");
    seq.resize(40);
    ForEachLevel([&](const Level& level) {
      INFO(m);
      BackendOptions bo;
      bo.gdn_chunk_min_tokens = INT64_MAX;
      test::Runner r(model, BackendKind::kCpu, 512, bo);
      const auto at_once = r.Run(seq);
      r.Reset();
      const auto one_by_one = r.Run(seq, {1});
      r.Reset();
      const auto uneven = r.Run(seq, {7, 3, 1, 16});
      CHECK(std::memcmp(one_by_one.data(), at_once.data(), at_once.size() * sizeof(float)) == 0);
      CHECK(std::memcmp(uneven.data(), at_once.data(), at_once.size() * sizeof(float)) == 0);
      // The levels compute the same model: logits agree across levels to float rounding.
      static std::vector<float> first;
      static std::string first_model;
      if (first_model != m) first = at_once, first_model = m;
      const auto d = test::Compare(at_once, first, model->config().n_vocab);
      WARN(m << " level " << level.name << " vs the first level: mean|d|/std = " << d.mean_over_std
             << " top-1 = " << d.top1);
      CHECK(d.mean_over_std <= 0.02);
    });
  }
}

}  // namespace
}  // namespace qwenrt
