// CUDA kernels (src/ops/cuda_ops.h) against the scalar references: RMSNorm, the dequantizing
// mat-vec for every supported weight type (vs ref::MatMul) and the token-serial gated delta rule
// (vs ref::GatedDelta, output and final state), on odd sizes. Without a device every GPU case skips
// with a warning; built without CUDA the file checks that the stubs report UNSUPPORTED. The lane
// mapping of the mat-vec kernel (quant_lanes.h) is also checked on the CPU by emulating a warp, so
// that part is tested on every machine.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "ops/cuda_device.h"
#include "ops/cuda_ops.h"
#include "ops/gated_delta.h"
#include "ops/gated_delta_lanes.h"
#include "ops/matmul.h"
#include "ops/quant.h"
#include "ops/quant_lanes.h"

namespace qwenrt {
namespace {

using test::RandomFloats;

#ifdef QWENRT_HAVE_CUDA
// Scalar RMSNorm oracle (same formula as the engine's ref::RmsNorm: sum of squares in double).
void RmsNormOracle(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[r * n + i]) * x[r * n + i];
    const float scale = 1.0f / std::sqrt(static_cast<float>(sum / static_cast<double>(n)) + eps);
    for (int64_t i = 0; i < n; ++i) y[r * n + i] = (x[r * n + i] * scale) * w[i];
  }
}
#endif  // QWENRT_HAVE_CUDA

// Random weight rows of `type` whose fp16 scale fields are finite and moderate: random bytes
// everywhere, then d / dmin overwritten (the quant payload may be any bit pattern).
std::vector<uint8_t> RandomWeights(gguf::Type type, int64_t cols, int64_t rows, uint32_t seed) {
  const int64_t row_bytes = RowBytes(type, cols);
  std::vector<uint8_t> w(static_cast<size_t>(row_bytes * rows));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f), pos(0.001f, 0.02f);
  if (type == gguf::Type::F32) {
    for (size_t i = 0; i < w.size() / 4; ++i) {
      const float f = dist(rng);
      std::memcpy(&w[4 * i], &f, 4);
    }
    return w;
  }
  if (type == gguf::Type::F16 || type == gguf::Type::BF16) {
    for (size_t i = 0; i < w.size() / 2; ++i) {
      const uint16_t h = type == gguf::Type::F16 ? Fp32ToFp16(dist(rng)) : Fp32ToBf16(dist(rng));
      std::memcpy(&w[2 * i], &h, 2);
    }
    return w;
  }
  for (uint8_t& b : w) b = static_cast<uint8_t>(rng());
  const int64_t bb = BlockBytes(type);
  for (size_t off = 0; off < w.size(); off += static_cast<size_t>(bb)) {
    const uint16_t d = Fp32ToFp16(pos(rng)), dmin = Fp32ToFp16(pos(rng));
    switch (type) {
      case gguf::Type::Q8_0:
        std::memcpy(&w[off], &d, 2);
        break;
      case gguf::Type::Q4_K:
      case gguf::Type::Q5_K:
        std::memcpy(&w[off], &d, 2);
        std::memcpy(&w[off + 2], &dmin, 2);
        break;
      case gguf::Type::Q6_K:
        std::memcpy(&w[off + 208], &d, 2);
        break;
      default:
        break;
    }
  }
  return w;
}

struct GdnInputs {
  std::vector<float> q, k, v, g, beta, state;
};

// Inputs as the layer produces them: q, k L2-normalised per head (q also scaled by 1/sqrt(Dk)),
// g in [-2, 0], beta in (0, 1), a random initial state.
GdnInputs MakeGdnInputs(const GatedDeltaShape& s, uint32_t seed) {
  GdnInputs in;
  const size_t nqk = static_cast<size_t>(s.T * s.Hk * s.Dk),
               nv = static_cast<size_t>(s.T * s.Hv * s.Dv);
  std::vector<float>& q = in.q;
  std::vector<float>& k = in.k;
  q = RandomFloats(nqk, -1.0f, 1.0f, seed++);
  k = RandomFloats(nqk, -1.0f, 1.0f, seed++);
  for (size_t h = 0; h < nqk / s.Dk; ++h) {
    double nq = 0, nk = 0;
    for (int64_t i = 0; i < s.Dk; ++i) {
      nq += double(q[h * s.Dk + i]) * q[h * s.Dk + i];
      nk += double(k[h * s.Dk + i]) * k[h * s.Dk + i];
    }
    for (int64_t i = 0; i < s.Dk; ++i) {
      q[h * s.Dk + i] =
          static_cast<float>(q[h * s.Dk + i] / std::sqrt(nq) / std::sqrt(double(s.Dk)));
      k[h * s.Dk + i] = static_cast<float>(k[h * s.Dk + i] / std::sqrt(nk));
    }
  }
  in.v = RandomFloats(nv, -1.0f, 1.0f, seed++);
  in.g = RandomFloats(static_cast<size_t>(s.T * s.Hv), -2.0f, 0.0f, seed++);
  in.beta = RandomFloats(static_cast<size_t>(s.T * s.Hv), 0.05f, 0.95f, seed++);
  in.state = RandomFloats(static_cast<size_t>(s.Hv * s.Dv * s.Dk), -0.5f, 0.5f, seed++);
  return in;
}

// Max |a - b| relative to max(1, max |b|).
double RelMaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(double(b[i])));
  }
  return diff / scale;
}

// Odd shapes, Hv not a multiple of Hk, Dk from 1 to the kernel maximum 256.
const GatedDeltaShape kGdnShapes[] = {
    {1, 2, 4, 64, 64}, {7, 2, 4, 37, 19}, {63, 1, 3, 128, 128}, {200, 4, 6, 33, 65},
    {5, 3, 3, 256, 8}, {2, 2, 2, 1, 1},   {9, 2, 5, 160, 3},
};

}  // namespace

TEST_CASE("lane decoders: fp16 / bf16 decoding is exact", "[cuda]") {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float want = Fp16ToFp32(static_cast<uint16_t>(h));
    const float got = lanes::HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      REQUIRE(std::isnan(got));
    } else {
      REQUIRE(std::memcmp(&want, &got, 4) == 0);
    }
    const float bw = Bf16ToFp32(static_cast<uint16_t>(h)),
                bg = lanes::Bf16ToFloat(static_cast<uint16_t>(h));
    REQUIRE(std::memcmp(&bw, &bg, 4) == 0);
  }
}

TEST_CASE("lane mapping of the CUDA mat-vec (a warp emulated on the CPU) matches ref::MatMul",
          "[cuda]") {
  // Every element of a row must be visited by exactly one lane with the right decode: the sum of
  // the 32 lane partials equals the reference dot product up to summation order.
  struct Case {
    gguf::Type type;
    int64_t cols;
  };
  const Case cases[] = {{gguf::Type::F32, 1},    {gguf::Type::F32, 77},  {gguf::Type::F16, 33},
                        {gguf::Type::BF16, 130}, {gguf::Type::Q8_0, 96}, {gguf::Type::Q4_K, 512},
                        {gguf::Type::Q5_K, 768}, {gguf::Type::Q6_K, 512}};
  uint32_t seed = 5;
  for (const Case& c : cases) {
    INFO(gguf::TypeName(c.type) << " cols " << c.cols);
    const int64_t rows = 5;
    std::vector<uint8_t> wb = RandomWeights(c.type, c.cols, rows, seed++);
    WeightMatrix w = MakeWeightMatrix(c.type, c.cols, rows, wb.data());
    std::mt19937 rng(seed++);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(c.cols));
    for (float& v : x) v = dist(rng);
    std::vector<float> want(static_cast<size_t>(rows));
    ref::MatMul(w, x.data(), want.data(), 1);
    std::vector<float> row(static_cast<size_t>(c.cols));
    for (int64_t r = 0; r < rows; ++r) {
      double got = 0.0, mag = 0.0;
      for (int lane = 0; lane < lanes::kLanes; ++lane) {
        got += lanes::LaneDot(static_cast<uint32_t>(c.type), wb.data() + r * w.row_bytes, x.data(),
                              c.cols, lane);
      }
      REQUIRE(ref::DequantizeRow(c.type, wb.data() + r * w.row_bytes, row.data(), c.cols));
      for (int64_t i = 0; i < c.cols; ++i) mag += std::fabs(double(row[i]) * x[i]);
      CHECK(std::fabs(got - want[r]) <= 1e-5 * mag + 1e-30);
    }
  }
  // A corrupted lane mapping is caught: dropping lane 31's share changes the result.
  std::vector<uint8_t> wb = RandomWeights(gguf::Type::Q4_K, 256, 1, 99);
  std::vector<float> x(256, 1.0f), want(1);
  WeightMatrix w = MakeWeightMatrix(gguf::Type::Q4_K, 256, 1, wb.data());
  ref::MatMul(w, x.data(), want.data(), 1);
  double partial = 0.0;
  for (int lane = 0; lane < 31; ++lane)
    partial += lanes::LaneDot(12, wb.data(), x.data(), 256, lane);
  CHECK(std::fabs(partial - want[0]) > 1e-6);
}

TEST_CASE("gated delta kernel code (a warp emulated on the CPU) matches ref::GatedDelta",
          "[cuda]") {
  uint32_t seed = 300;
  for (const GatedDeltaShape& s : kGdnShapes) {
    INFO("T " << s.T << " Hk " << s.Hk << " Hv " << s.Hv << " Dk " << s.Dk << " Dv " << s.Dv);
    GdnInputs in = MakeGdnInputs(s, seed);
    seed += 10;
    std::vector<float> st_ref = in.state, st_emu = in.state, out_ref(in.v.size()),
                       out_emu(in.v.size(), -7.0f);
    ref::GatedDelta(s, in.q.data(), in.k.data(), in.v.data(), in.g.data(), in.beta.data(),
                    st_ref.data(), out_ref.data());
    lanes::EmulateGatedDeltaRecurrent(s, in.q.data(), in.k.data(), in.v.data(), in.g.data(),
                                      in.beta.data(), st_emu.data(), out_emu.data());
    const double d_out = RelMaxDiff(out_emu, out_ref), d_state = RelMaxDiff(st_emu, st_ref);
    INFO("rel max diff: out " << d_out << ", state " << d_state);
    CHECK(d_out <= 1e-4);
    CHECK(d_state <= 1e-4);
  }
  // A wrong head mapping (h / (Hv/Hk) instead of h % Hk) would differ: check the test can see it by
  // swapping the two key heads of the input.
  const GatedDeltaShape s{3, 2, 4, 32, 8};
  GdnInputs in = MakeGdnInputs(s, 7);
  std::vector<float> st_a = in.state, st_b = in.state, out_a(in.v.size()), out_b(in.v.size());
  lanes::EmulateGatedDeltaRecurrent(s, in.q.data(), in.k.data(), in.v.data(), in.g.data(),
                                    in.beta.data(), st_a.data(), out_a.data());
  for (int64_t t = 0; t < s.T; ++t) {
    for (int64_t i = 0; i < s.Dk; ++i) {
      std::swap(in.k[(t * 2 + 0) * s.Dk + i], in.k[(t * 2 + 1) * s.Dk + i]);
      std::swap(in.q[(t * 2 + 0) * s.Dk + i], in.q[(t * 2 + 1) * s.Dk + i]);
    }
  }
  lanes::EmulateGatedDeltaRecurrent(s, in.q.data(), in.k.data(), in.v.data(), in.g.data(),
                                    in.beta.data(), st_b.data(), out_b.data());
  CHECK(RelMaxDiff(out_a, out_b) > 1e-3);
}

#ifdef QWENRT_HAVE_CUDA

TEST_CASE("cuda device query", "[cuda]") {
  if (!CudaAvailable()) {
    // Without a device the ops must fail cleanly with DEVICE, not crash.
    std::vector<float> x(8, 1.0f), w(8, 1.0f), y(8);
    Status s = cuda::RmsNorm(x.data(), w.data(), y.data(), 1, 8, 1e-6f);
    CHECK(!s.ok());
    CHECK(s.code() == StatusCode::kDevice);
    CHECK(!CudaDeviceName().ok());
    WARN("no CUDA device: skipped (" << s.message() << ")");
    return;
  }
  StatusOr<std::string> name = CudaDeviceName();
  REQUIRE(name.ok());
  CHECK(!name->empty());
  WARN("CUDA device: " << *name);
}

TEST_CASE("cuda ops reject bad arguments before touching the device", "[cuda]") {
  float x = 0.0f;
  CHECK(cuda::RmsNorm(&x, &x, &x, -1, 4, 1e-6f).code() == StatusCode::kInvalidArgument);
  CHECK(cuda::RmsNorm(&x, &x, &x, 1, 0, 1e-6f).code() == StatusCode::kInvalidArgument);
  CHECK(cuda::RmsNorm(nullptr, &x, &x, 1, 4, 1e-6f).code() == StatusCode::kInvalidArgument);
  GatedDeltaShape bad{1, 0, 1, 4, 4};
  CHECK(cuda::GatedDeltaRecurrent(bad, &x, &x, &x, &x, &x, &x, &x).code() ==
        StatusCode::kInvalidArgument);
  GatedDeltaShape big{1, 1, 1, 300, 4};
  CHECK(cuda::GatedDeltaRecurrent(big, &x, &x, &x, &x, &x, &x, &x).code() ==
        StatusCode::kUnsupported);
  std::vector<uint8_t> q4(144);
  WeightMatrix w = MakeWeightMatrix(gguf::Type::Q4_K, 100, 1, q4.data());  // 100 % 256 != 0
  CHECK(!cuda::DequantMatVec(w, &x, &x, 1).ok());
  WeightMatrix wq{gguf::Type::Q4_0, 32, 1, q4.data(), 18};
  CHECK(cuda::DequantMatVec(wq, &x, &x, 1).code() == StatusCode::kUnsupported);
}

TEST_CASE("cuda RmsNorm matches the reference", "[cuda]") {
  QWENRT_SKIP_WITHOUT_GPU();
  for (int64_t rows : {1, 7, 33}) {
    for (int64_t n : {1, 63, 257, 4097}) {
      INFO("rows " << rows << " n " << n);
      std::vector<float> x = RandomFloats(static_cast<size_t>(rows * n), -3.0f, 3.0f, 1 + rows * n);
      std::vector<float> w = RandomFloats(static_cast<size_t>(n), 0.5f, 1.5f, 7 + n);
      std::vector<float> want(x.size()), got(x.size());
      RmsNormOracle(x.data(), w.data(), want.data(), rows, n, 1e-6f);
      REQUIRE(cuda::RmsNorm(x.data(), w.data(), got.data(), rows, n, 1e-6f).ok());
      double max_rel = 0.0;
      for (size_t i = 0; i < x.size(); ++i) {
        max_rel = std::max(
            max_rel, std::fabs(double(got[i]) - want[i]) / (std::fabs(double(want[i])) + 1e-6));
      }
      INFO("max rel diff " << max_rel);
      CHECK(max_rel < 1e-5);
    }
  }
  // In place (y aliases x) gives the same result.
  std::vector<float> x = RandomFloats(3 * 100, -1.0f, 1.0f, 99), w(100, 1.0f), want(300);
  RmsNormOracle(x.data(), w.data(), want.data(), 3, 100, 1e-6f);
  REQUIRE(cuda::RmsNorm(x.data(), w.data(), x.data(), 3, 100, 1e-6f).ok());
  for (size_t i = 0; i < x.size(); ++i) CHECK(x[i] == Approx(want[i]).epsilon(1e-5));
}

TEST_CASE("cuda DequantMatVec matches ref::MatMul for every weight type", "[cuda]") {
  QWENRT_SKIP_WITHOUT_GPU();
  struct Case {
    gguf::Type type;
    std::vector<int64_t> cols;
  };
  const Case cases[] = {
      {gguf::Type::F32, {1, 37, 1000}}, {gguf::Type::F16, {5, 96, 333}},
      {gguf::Type::BF16, {3, 130}},     {gguf::Type::Q8_0, {32, 96, 4064}},
      {gguf::Type::Q4_K, {256, 768}},   {gguf::Type::Q5_K, {256, 1280}},
      {gguf::Type::Q6_K, {256, 512}},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    for (int64_t cols : c.cols) {
      for (int64_t rows : {1, 7, 67}) {
        for (int64_t T : {1, 3}) {
          INFO(gguf::TypeName(c.type) << " cols " << cols << " rows " << rows << " T " << T);
          std::vector<uint8_t> wb = RandomWeights(c.type, cols, rows, seed++);
          WeightMatrix w = MakeWeightMatrix(c.type, cols, rows, wb.data());
          REQUIRE(CheckWeightMatrix(w).ok());
          std::vector<float> x = RandomFloats(static_cast<size_t>(T * cols), -1.0f, 1.0f, seed++);
          std::vector<float> want(static_cast<size_t>(T * rows)), got(want.size(), -7.0f);
          ref::MatMul(w, x.data(), want.data(), T);
          Status s = cuda::DequantMatVec(w, x.data(), got.data(), T);
          INFO(s.ToString());
          REQUIRE(s.ok());
          // f32 rounding of a reordered sum of n terms: typically ~sqrt(n) * 6e-8 * sum |w x|.
          std::vector<float> row(static_cast<size_t>(cols));
          double max_abs = 0.0, max_ratio = 0.0;
          for (int64_t r = 0; r < rows; ++r) {
            REQUIRE(ref::DequantizeRow(c.type, wb.data() + r * w.row_bytes, row.data(), cols));
            for (int64_t t = 0; t < T; ++t) {
              double mag = 0.0;
              for (int64_t i = 0; i < cols; ++i) mag += std::fabs(double(row[i]) * x[t * cols + i]);
              const double diff = std::fabs(double(got[t * rows + r]) - want[t * rows + r]);
              max_abs = std::max(max_abs, diff);
              max_ratio = std::max(max_ratio, diff / (mag + 1e-30));
            }
          }
          INFO("max abs diff " << max_abs << ", max diff / sum|w x| " << max_ratio);
          CHECK(max_ratio < 1e-5);  // a wrong nibble or scale gives ~1e-1
        }
      }
    }
  }
}

TEST_CASE("cuda DequantMatVec: 13 tokens at once equal one token at a time, bit for bit",
          "[cuda]") {
  QWENRT_SKIP_WITHOUT_GPU();
  const gguf::Type types[] = {gguf::Type::F32,  gguf::Type::F16,  gguf::Type::BF16,
                              gguf::Type::Q8_0, gguf::Type::Q4_K, gguf::Type::Q5_K,
                              gguf::Type::Q6_K};
  uint32_t seed = 77;
  for (gguf::Type type : types) {
    const int64_t cols =
        type == gguf::Type::F32 || type == gguf::Type::F16 || type == gguf::Type::BF16 ? 1000
        : type == gguf::Type::Q8_0                                                     ? 1024
                                                                                       : 1280;
    const int64_t rows = 37, T = 13;  // 13 = 8 + 4 + 1 tokens per warp in the batched launch
    INFO(gguf::TypeName(type));
    std::vector<uint8_t> wb = RandomWeights(type, cols, rows, seed++);
    const WeightMatrix w = MakeWeightMatrix(type, cols, rows, wb.data());
    const std::vector<float> x = RandomFloats(static_cast<size_t>(T * cols), -1.0f, 1.0f, seed++);
    std::vector<float> whole(static_cast<size_t>(T * rows)), one(whole.size());
    REQUIRE(cuda::DequantMatVec(w, x.data(), whole.data(), T).ok());
    for (int64_t t = 0; t < T; ++t) {
      REQUIRE(cuda::DequantMatVec(w, x.data() + t * cols, one.data() + t * rows, 1).ok());
    }
    CHECK(std::memcmp(whole.data(), one.data(), whole.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("cuda DequantMatVec: a tall matrix (the LM head's decode layout) equals its batched rows",
          "[cuda]") {
  QWENRT_SKIP_WITHOUT_GPU();
  const int64_t cols = 256, rows = (int64_t{1} << 17) + 5,
                T = 9;  // decode takes 4 rows per block here
  std::vector<uint8_t> wb = RandomWeights(gguf::Type::Q6_K, cols, rows, 4242);
  const WeightMatrix w = MakeWeightMatrix(gguf::Type::Q6_K, cols, rows, wb.data());
  const std::vector<float> x = RandomFloats(static_cast<size_t>(T * cols), -1.0f, 1.0f, 4243);
  std::vector<float> whole(static_cast<size_t>(T * rows)), one(whole.size()), want(whole.size());
  REQUIRE(cuda::DequantMatVec(w, x.data(), whole.data(), T).ok());
  for (int64_t t = 0; t < T; ++t) {
    REQUIRE(cuda::DequantMatVec(w, x.data() + t * cols, one.data() + t * rows, 1).ok());
  }
  CHECK(std::memcmp(whole.data(), one.data(), whole.size() * sizeof(float)) == 0);
  ref::MatMul(w, x.data(), want.data(), T);
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(double(one[i]) - want[i]));
    max_abs = std::max(max_abs, std::fabs(double(want[i])));
  }
  INFO("max |d| " << max_diff << " of max |y| " << max_abs);
  CHECK(max_diff <= 1e-5 * max_abs);
}

TEST_CASE("cuda GatedDeltaRecurrent matches ref::GatedDelta (output and state)", "[cuda]") {
  QWENRT_SKIP_WITHOUT_GPU();
  uint32_t seed = 100;
  for (const GatedDeltaShape& s : kGdnShapes) {
    INFO("T " << s.T << " Hk " << s.Hk << " Hv " << s.Hv << " Dk " << s.Dk << " Dv " << s.Dv);
    GdnInputs in = MakeGdnInputs(s, seed);
    seed += 10;
    const size_t nv = in.v.size();
    const std::vector<float>&q = in.q, &k = in.k, &v = in.v, &g = in.g, &beta = in.beta,
          &state0 = in.state;
    std::vector<float> st_ref = state0, st_gpu = state0, out_ref(nv), out_gpu(nv, -7.0f);
    ref::GatedDelta(s, q.data(), k.data(), v.data(), g.data(), beta.data(), st_ref.data(),
                    out_ref.data());
    Status st = cuda::GatedDeltaRecurrent(s, q.data(), k.data(), v.data(), g.data(), beta.data(),
                                          st_gpu.data(), out_gpu.data());
    INFO(st.ToString());
    REQUIRE(st.ok());
    const double d_out = RelMaxDiff(out_gpu, out_ref), d_state = RelMaxDiff(st_gpu, st_ref);
    INFO("rel max diff: out " << d_out << ", state " << d_state);
    // Only the dot-product summation order and expf differ: a few ulps per step, bounded over T.
    CHECK(d_out <= 1e-4);
    CHECK(d_state <= 1e-4);
  }
  // T = 0 leaves the state untouched.
  GatedDeltaShape empty{0, 1, 1, 4, 4};
  std::vector<float> state(16, 0.25f);
  REQUIRE(cuda::GatedDeltaRecurrent(empty, nullptr, nullptr, nullptr, nullptr, nullptr,
                                    state.data(), nullptr)
              .ok());
  CHECK(state == std::vector<float>(16, 0.25f));
}

#else  // !QWENRT_HAVE_CUDA

TEST_CASE("built without CUDA: no device and every CUDA op is UNSUPPORTED", "[cuda]") {
  CHECK(!CudaAvailable());
  StatusOr<std::string> name = CudaDeviceName();
  REQUIRE(!name.ok());
  CHECK(name.status().code() == StatusCode::kUnsupported);
  std::vector<float> x(8, 1.0f), y(8);
  CHECK(cuda::RmsNorm(x.data(), x.data(), y.data(), 1, 8, 1e-6f).code() ==
        StatusCode::kUnsupported);
  std::vector<uint8_t> wb = RandomWeights(gguf::Type::Q8_0, 32, 1, 1);
  WeightMatrix w = MakeWeightMatrix(gguf::Type::Q8_0, 32, 1, wb.data());
  CHECK(cuda::DequantMatVec(w, x.data(), y.data(), 1).code() == StatusCode::kUnsupported);
  GatedDeltaShape s{1, 1, 1, 4, 2};
  CHECK(cuda::GatedDeltaRecurrent(s, x.data(), x.data(), x.data(), x.data(), x.data(), x.data(),
                                  y.data())
            .code() == StatusCode::kUnsupported);
  WARN("qwenrt built without CUDA: GPU kernels not compiled");
}

#endif  // QWENRT_HAVE_CUDA

}  // namespace qwenrt
