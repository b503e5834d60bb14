// The grid i-quants (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S): block sizes against the
// GGUF type table; the reference dequantizer bit for bit against gguf-py's (tests/data/iq, written
// by scripts/gen_iq_vectors.py); the scalar dots against dequantize-then-multiply; the CPU kernels
// against the scalar dots for every token count and odd block counts / strides; cpu::MatMul against
// ref::MatMul within the activation-rounding bound; the embedding lookup.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/thread_pool.h"
#include "ops/embed.h"
#include "ops/matmul.h"
#include "ops/quant.h"
#include "ops/quant_iq.h"
#include "ops/vec_dot_iq.h"
#include "qwenrt/gguf.hpp"
#include "qwenrt/gguf_writer.hpp"
#include "test_util.h"

namespace qwenrt {
namespace {

const gguf::Type kIqTypes[] = {gguf::Type::IQ1_S,  gguf::Type::IQ1_M, gguf::Type::IQ2_XXS,
                               gguf::Type::IQ2_XS, gguf::Type::IQ2_S, gguf::Type::IQ3_XXS,
                               gguf::Type::IQ3_S};

using RefDotFn = float (*)(const void*, const void*, int64_t);
RefDotFn RefDot(gguf::Type t) {
  switch (t) {
    case gguf::Type::IQ1_S:
      return ref::VecDotIQ1S_Q8K;
    case gguf::Type::IQ1_M:
      return ref::VecDotIQ1M_Q8K;
    case gguf::Type::IQ2_XXS:
      return ref::VecDotIQ2XXS_Q8K;
    case gguf::Type::IQ2_XS:
      return ref::VecDotIQ2XS_Q8K;
    case gguf::Type::IQ2_S:
      return ref::VecDotIQ2S_Q8K;
    case gguf::Type::IQ3_XXS:
      return ref::VecDotIQ3XXS_Q8K;
    case gguf::Type::IQ3_S:
      return ref::VecDotIQ3S_Q8K;
    default:
      return nullptr;
  }
}

// Random blocks with a finite fp16 super-scale in [0.5e-3, 2e-3] (either sign), so values are
// O(0.1).
std::vector<uint8_t> RandomRows(gguf::Type type, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> data(static_cast<size_t>(RowBytes(type, cols) * rows));
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> ud(0.5e-3f, 2e-3f);
  const int64_t bb = BlockBytes(type), nb = static_cast<int64_t>(data.size()) / bb;
  for (int64_t i = 0; i < nb; ++i) {
    uint8_t* blk = data.data() + i * bb;
    const uint16_t d = Fp32ToFp16(ud(rng) * (rng() % 2 ? 1.f : -1.f));
    if (type == gguf::Type::IQ1_M) {  // d = the top nibbles of the four u16 scale words
      for (int k = 0; k < 4; ++k) {
        uint8_t& hi = blk[offsetof(BlockIQ1M, scales) + 2 * k + 1];
        hi = static_cast<uint8_t>((hi & 0x0F) | (((d >> (4 * k)) & 0x0F) << 4));
      }
    } else {
      std::memcpy(blk, &d, 2);  // every other type starts with its fp16 d
    }
  }
  return data;
}

std::vector<float> RandomActivations(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = nd(rng);
  for (int64_t i = 0; i < n; i += 97)
    x[static_cast<size_t>(i)] *= 8.f;  // outliers, as real activations have
  return x;
}

std::vector<uint8_t> Q8K(const std::vector<float>& x, int64_t T, int64_t n) {
  std::vector<uint8_t> a(static_cast<size_t>(RowBytes(gguf::Type::Q8_K, n) * T));
  for (int64_t t = 0; t < T; ++t)
    QuantizeRowQ8K(x.data() + t * n, a.data() + t * RowBytes(gguf::Type::Q8_K, n), n);
  return a;
}

TEST_CASE("i-quant block sizes match the GGUF type table", "[ref]") {
  for (gguf::Type t : kIqTypes) {
    CAPTURE(gguf::TypeName(t));
    CHECK(BlockElems(t) == gguf::BlockSize(t));
    CHECK(BlockBytes(t) == gguf::TypeSize(t));
    CHECK(IsSupportedWeightType(t));
    CHECK(IsGridIQuant(t));
    CHECK(RowBytes(t, 512) == 2 * gguf::TypeSize(t));
    CHECK(RowBytes(t, 384) == -1);  // not a multiple of the 256-element block
    float dst[256];
    std::vector<uint8_t> blk(static_cast<size_t>(BlockBytes(t)));
    CHECK_FALSE(ref::DequantizeRow(t, blk.data(), dst, 128));
  }
  CHECK_FALSE(IsGridIQuant(gguf::Type::Q4_K));
}

TEST_CASE("a GGUF i-quant tensor whose row is not a whole number of blocks is refused", "[ref]") {
  for (gguf::Type t : kIqTypes) {
    CAPTURE(gguf::TypeName(t));
    auto parse = [&](int64_t ne0, size_t bytes) {
      gguf::Writer w;
      w.AddTensorRaw("blk.0.ffn_up.weight", static_cast<uint32_t>(t), {ne0, 2},
                     std::vector<uint8_t>(bytes));
      const std::vector<uint8_t> file = w.Build();
      gguf::Error err;
      auto f = gguf::File::FromMemory(file.data(), file.size(), true, &err);
      return std::make_pair(f.has_value(), err);
    };
    const auto [ok, err0] = parse(512, static_cast<size_t>(4 * BlockBytes(t)));
    CHECK(ok);
    const auto [bad, err] = parse(384, static_cast<size_t>(3 * BlockBytes(t)));
    CHECK_FALSE(bad);
    CHECK(err.code == gguf::ErrorCode::kBadBlockMultiple);
    CHECK(err.message.find(gguf::TypeName(t)) != std::string::npos);
  }
}

TEST_CASE("i-quant dequantization is bit-identical to gguf-py's", "[ref]") {
  for (gguf::Type t : kIqTypes) {
    const std::string name = gguf::TypeName(t);
    CAPTURE(name);
    const std::string blocks = test::ReadFile(test::DataPath("iq/" + name + ".blocks"));
    const std::string want = test::ReadFile(test::DataPath("iq/" + name + ".f32"));
    REQUIRE(blocks.size() % static_cast<size_t>(BlockBytes(t)) == 0);
    const int64_t n = static_cast<int64_t>(blocks.size()) / BlockBytes(t) * kQK_K;
    REQUIRE(want.size() == static_cast<size_t>(n) * sizeof(float));
    std::vector<float> got(static_cast<size_t>(n), NAN);
    REQUIRE(ref::DequantizeRow(t, blocks.data(), got.data(), n));
    int64_t mismatches = 0, nonzero = 0;
    for (int64_t i = 0; i < n; ++i) {
      float w;
      std::memcpy(&w, want.data() + 4 * i, 4);
      uint32_t a, b;
      std::memcpy(&a, &got[static_cast<size_t>(i)], 4);
      std::memcpy(&b, &w, 4);
      mismatches += a != b;
      nonzero += w != 0;
    }
    CHECK(mismatches == 0);
    CHECK(nonzero > n / 2);  // the vectors are not trivially zero
  }
}

TEST_CASE("i-quant reference dots equal dequantize-then-multiply", "[ref]") {
  const int64_t n = 1280;  // 5 super-blocks
  for (gguf::Type t : kIqTypes) {
    CAPTURE(gguf::TypeName(t));
    const auto w = RandomRows(t, 3, n, 100 + static_cast<uint32_t>(t));
    const auto x = RandomActivations(n, 5);
    const auto a = Q8K(x, 1, n);
    std::vector<float> wf(n), af(n);
    REQUIRE(ref::DequantizeRow(gguf::Type::Q8_K, a.data(), af.data(), n));
    for (int r = 0; r < 3; ++r) {
      const uint8_t* wr = w.data() + r * RowBytes(t, n);
      REQUIRE(ref::DequantizeRow(t, wr, wf.data(), n));
      double want = 0, mag = 0;
      for (int64_t c = 0; c < n; ++c)
        want += double(wf[c]) * af[c], mag += std::fabs(double(wf[c]) * af[c]);
      const float got = RefDot(t)(wr, a.data(), n);
      REQUIRE(mag > 0);
      CHECK(std::fabs(got - want) <= 1e-5 * mag);
    }
  }
}

TEST_CASE("i-quant CPU kernels match the reference dots for every token count", "[cpu]") {
  WARN("i-quant dot kernels built for: " << cpu::DotKernelIsa());
  for (gguf::Type t : kIqTypes) {
    const cpu::DotKernel kernel = cpu::IQuantDotKernel(t);
    REQUIRE(kernel != nullptr);
    for (int64_t blocks : {1, 3, 7}) {
      const int64_t n = blocks * kQK_K;
      CAPTURE(gguf::TypeName(t), blocks);
      const auto w =
          RandomRows(t, 1, n, static_cast<uint32_t>(blocks) * 13 + static_cast<uint32_t>(t));
      const int T = cpu::kMaxDotTokens;
      const auto x = RandomActivations(T * n, static_cast<uint32_t>(blocks));
      // Activation rows with a gap between them (stride > row size), outputs every 3rd float.
      const size_t row = static_cast<size_t>(RowBytes(gguf::Type::Q8_K, n)), stride = row + 292;
      std::vector<uint8_t> a(stride * T);
      for (int k = 0; k < T; ++k) QuantizeRowQ8K(x.data() + k * n, a.data() + k * stride, n);
      std::vector<float> wf(static_cast<size_t>(n)), af(static_cast<size_t>(n));
      REQUIRE(ref::DequantizeRow(t, w.data(), wf.data(), n));
      for (int ntok = 1; ntok <= T; ++ntok) {
        CAPTURE(ntok);
        std::vector<float> out(static_cast<size_t>(3 * T), NAN);
        kernel(w.data(), a.data(), stride, ntok, n, out.data(), 3);
        for (int k = 0; k < T; ++k) {
          if (k >= ntok) {
            CHECK(std::isnan(out[3 * k]));  // untouched
            continue;
          }
          REQUIRE(ref::DequantizeRow(gguf::Type::Q8_K, a.data() + k * stride, af.data(), n));
          double mag = 0;
          for (int64_t c = 0; c < n; ++c) mag += std::fabs(double(wf[c]) * af[c]);
          const float want = RefDot(t)(w.data(), a.data() + k * stride, n);
          CHECK(std::fabs(double(out[3 * k]) - want) <= 2e-6 * mag);
        }
      }
    }
  }
}

// cpu::MatMul against ref::MatMul (f32 activations): the difference is the Q8_K rounding of the
// activations, at most sum_c |w_c| |x_c - xq_c| per output, plus float rounding.
TEST_CASE("cpu::MatMul on i-quant weights matches ref::MatMul within the activation rounding",
          "[cpu]") {
  ThreadPool pool(3);
  for (gguf::Type t : kIqTypes) {
    for (auto [rows, cols, T] :
         {std::tuple<int64_t, int64_t, int64_t>{7, 512, 1}, {33, 768, 9}, {17, 256, 5}}) {
      CAPTURE(gguf::TypeName(t), rows, cols, T);
      const auto w = RandomRows(t, rows, cols, static_cast<uint32_t>(rows * 31 + T));
      const auto x = RandomActivations(T * cols, static_cast<uint32_t>(T * 7 + cols));
      const WeightMatrix wm = MakeWeightMatrix(t, cols, rows, w.data());
      REQUIRE(CheckWeightMatrix(wm).ok());
      std::vector<float> y_cpu(static_cast<size_t>(T * rows), NAN),
          y_ref(static_cast<size_t>(T * rows), NAN);
      cpu::MatMul(wm, x.data(), y_cpu.data(), T, pool);
      ref::MatMul(wm, x.data(), y_ref.data(), T);
      const auto a = Q8K(x, T, cols);
      std::vector<float> wf(static_cast<size_t>(cols)), xq(static_cast<size_t>(cols));
      for (int64_t k = 0; k < T; ++k) {
        const float* xt = x.data() + k * cols;
        REQUIRE(ref::DequantizeRow(
            gguf::Type::Q8_K, a.data() + k * RowBytes(gguf::Type::Q8_K, cols), xq.data(), cols));
        for (int64_t r = 0; r < rows; ++r) {
          REQUIRE(ref::DequantizeRow(t, w.data() + r * wm.row_bytes, wf.data(), cols));
          double mag = 0, qerr = 0;
          for (int64_t c = 0; c < cols; ++c) {
            mag += std::fabs(double(wf[c]) * xt[c]);
            qerr += std::fabs(double(wf[c])) * std::fabs(double(xt[c]) - xq[c]);
          }
          REQUIRE(std::fabs(double(y_cpu[k * rows + r]) - y_ref[k * rows + r]) <=
                  qerr + 2e-5 * mag + 1e-30);
        }
      }
    }
  }
}

TEST_CASE("Embed decodes i-quant rows", "[ref][cpu]") {
  ThreadPool pool(2);
  const int64_t rows = 11, cols = 512;
  const int32_t tokens[] = {3, 0, 10, 3, 7};
  for (gguf::Type t : kIqTypes) {
    CAPTURE(gguf::TypeName(t));
    const auto w = RandomRows(t, rows, cols, 77);
    const WeightMatrix wm = MakeWeightMatrix(t, cols, rows, w.data());
    std::vector<float> xr(5 * cols, NAN), xc(5 * cols, NAN), want(cols);
    ref::Embed(wm, tokens, 5, xr.data());
    cpu::Embed(wm, tokens, 5, xc.data(), pool);
    CHECK(std::memcmp(xr.data(), xc.data(), xr.size() * sizeof(float)) == 0);
    for (int k = 0; k < 5; ++k) {
      REQUIRE(ref::DequantizeRow(t, w.data() + tokens[k] * wm.row_bytes, want.data(), cols));
      CHECK(std::memcmp(xr.data() + k * cols, want.data(), cols * sizeof(float)) == 0);
    }
  }
}

}  // namespace
}  // namespace qwenrt
