// Block formats: fp16/bf16 conversions (edge cases, exhaustive rounding), dequantization of
// hand-built blocks against the spec formulas applied here independently (own packers), the Q8_K /
// Q8_0 activation quantizers' properties, and real tensors of the tiny fixture model.
#include "ops/quant.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "qwenrt/gguf.hpp"
#include "testing/quantize.h"

namespace qwenrt {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Value of a binary16 computed from its definition (independent of Fp16ToFp32).
double HalfValue(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
  double v = exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, exp - 25);
  if (exp == 31) v = mant ? std::numeric_limits<double>::quiet_NaN() : HUGE_VAL;
  return sign ? -v : v;
}

TEST_CASE("fp16 -> fp32 decodes every half exactly", "[ref]") {
  for (uint32_t h = 0; h < 65536; ++h) {
    const double want = HalfValue(static_cast<uint16_t>(h));
    const float got = Fp16ToFp32(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      REQUIRE(std::isnan(got));
    } else {
      REQUIRE(static_cast<double>(got) == want);
      REQUIRE(std::signbit(got) == ((h & 0x8000) != 0));  // -0 stays -0
    }
  }
  CHECK(Fp16ToFp32(0x3C00) == 1.0f);
  CHECK(Fp16ToFp32(0x7BFF) == 65504.0f);
  CHECK(Fp16ToFp32(0x0001) == std::ldexp(1.0f, -24));
}

TEST_CASE("fp32 -> fp16 round trip, special values and overflow", "[ref]") {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = Fp16ToFp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      const uint16_t back = Fp32ToFp16(f);
      REQUIRE((back & 0x7C00) == 0x7C00);
      REQUIRE((back & 0x3FF) != 0);  // still a NaN
    } else {
      REQUIRE(Fp32ToFp16(f) == h);
    }
  }
  CHECK(Fp32ToFp16(INFINITY) == 0x7C00);
  CHECK(Fp32ToFp16(-INFINITY) == 0xFC00);
  CHECK(Fp32ToFp16(-0.0f) == 0x8000);
  CHECK(Fp32ToFp16(65519.0f) == 0x7BFF);  // below the midpoint 65520
  CHECK(Fp32ToFp16(65520.0f) == 0x7C00);  // the midpoint rounds to even = inf
  CHECK(Fp32ToFp16(1e6f) == 0x7C00);
  CHECK(Fp32ToFp16(-1e30f) == 0xFC00);
  CHECK(Fp32ToFp16(std::ldexp(1.0f, -25)) == 0x0000);  // half of the smallest subnormal: to even 0
  CHECK(Fp32ToFp16(std::ldexp(3.0f, -25)) == 0x0002);  // 1.5 ulp: to even 2
  CHECK(Fp32ToFp16(std::ldexp(1.0f, -26)) == 0x0000);
  CHECK(Fp32ToFp16(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);  // tie -> even (1.0)
  CHECK(Fp32ToFp16(1.0f + std::ldexp(3.0f, -11)) == 0x3C02);  // tie -> even (mantissa 2)
  CHECK(Fp32ToFp16(1e-10f) == 0x0000);
  CHECK(Fp32ToFp16(std::nanf("")) != 0);
}

TEST_CASE("fp32 -> fp16 rounds to nearest even at every midpoint", "[ref]") {
  // For each pair of neighbouring finite positive halves, the float just below their midpoint
  // rounds down, just above rounds up, and the midpoint itself goes to the even mantissa.
  for (uint32_t h = 0; h < 0x7BFF; ++h) {
    const double lo = HalfValue(static_cast<uint16_t>(h)),
                 hi = HalfValue(static_cast<uint16_t>(h + 1));
    const float mid =
        static_cast<float>((lo + hi) / 2);  // exact: needs at most 12 significant bits
    REQUIRE(static_cast<double>(mid) == (lo + hi) / 2);
    const uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : static_cast<uint16_t>(h);
    REQUIRE(Fp32ToFp16(mid) == even);
    REQUIRE(Fp32ToFp16(std::nextafter(mid, 0.0f)) == h);
    REQUIRE(Fp32ToFp16(std::nextafter(mid, INFINITY)) == h + 1);
    REQUIRE(Fp32ToFp16(-mid) == (even | 0x8000));
  }
}

TEST_CASE("bf16 conversions", "[ref]") {
  CHECK(Bf16ToFp32(0x3F80) == 1.0f);
  CHECK(Bf16ToFp32(0xC000) == -2.0f);
  CHECK(std::isinf(Bf16ToFp32(0x7F80)));
  CHECK(std::isnan(Bf16ToFp32(0x7FC0)));
  CHECK(Bf16ToFp32(0x0001) == FromBits(0x00010000));  // subnormal, exact
  CHECK(Fp32ToBf16(1.0f) == 0x3F80);
  CHECK(Fp32ToBf16(FromBits(0x3F808000)) == 0x3F80);  // tie, lower is even
  CHECK(Fp32ToBf16(FromBits(0x3F818000)) == 0x3F82);  // tie, upper is even
  CHECK(Fp32ToBf16(FromBits(0x3F808001)) == 0x3F81);  // above the tie
  CHECK(Fp32ToBf16(FromBits(0x3F807FFF)) == 0x3F80);
  CHECK(Fp32ToBf16(INFINITY) == 0x7F80);
  CHECK(Fp32ToBf16(-INFINITY) == 0xFF80);
  CHECK(Fp32ToBf16(FromBits(0x7F7FFFFF)) == 0x7F80);  // largest float rounds up to inf (llama.cpp)
  CHECK(Fp32ToBf16(FromBits(0x7F800001)) == 0x7FC0);  // signalling NaN -> quiet NaN
  CHECK(Fp32ToBf16(FromBits(0xFFC00000)) == 0xFFC0);
  CHECK(Fp32ToBf16(FromBits(0x00008000)) == 0x0000);  // subnormal tie -> even
  CHECK(Fp32ToBf16(-0.0f) == 0x8000);
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = Bf16ToFp32(static_cast<uint16_t>(h));
    REQUIRE(Bits(f) == h << 16);
    if (!std::isnan(f)) REQUIRE(Fp32ToBf16(f) == h);
  }
}

TEST_CASE("row sizes", "[ref]") {
  CHECK(RowBytes(gguf::Type::F32, 3) == 12);
  CHECK(RowBytes(gguf::Type::F16, 3) == 6);
  CHECK(RowBytes(gguf::Type::BF16, 5) == 10);
  CHECK(RowBytes(gguf::Type::Q8_0, 64) == 68);
  CHECK(RowBytes(gguf::Type::Q4_K, 1024) == 4 * 144);
  CHECK(RowBytes(gguf::Type::Q5_K, 512) == 2 * 176);
  CHECK(RowBytes(gguf::Type::Q6_K, 3584) == 14 * 210);
  CHECK(RowBytes(gguf::Type::Q8_K, 256) == 292);
  CHECK(RowBytes(gguf::Type::Q4_K, 100) == -1);
  CHECK(RowBytes(gguf::Type::Q8_0, 33) == -1);
  CHECK(RowBytes(gguf::Type::Q4_0, 64) == 36);
  CHECK(RowBytes(gguf::Type::Q4_1, 32) == 20);
  CHECK(RowBytes(gguf::Type::Q5_0, 96) == 66);
  CHECK(RowBytes(gguf::Type::Q5_1, 32) == 24);
  CHECK(RowBytes(gguf::Type::IQ4_NL, 32) == 18);
  CHECK(RowBytes(gguf::Type::MXFP4, 64) == 34);
  CHECK(RowBytes(gguf::Type::Q2_K, 512) == 168);
  CHECK(RowBytes(gguf::Type::Q3_K, 256) == 110);
  CHECK(RowBytes(gguf::Type::IQ4_XS, 768) == 3 * 136);
  CHECK(RowBytes(gguf::Type::IQ4_XS, 32) == -1);
  CHECK(RowBytes(gguf::Type::Q4_0, 48) == -1);
  CHECK(RowBytes(gguf::Type::TQ1_0, 256) == -1);  // not supported
  // The registry agrees with the file format's type table for every supported type.
  for (uint32_t id = 0; id < gguf::kTypeCount; ++id) {
    const auto t = static_cast<gguf::Type>(id);
    if (!IsSupportedWeightType(t)) continue;
    CAPTURE(gguf::TypeName(t));
    CHECK(gguf::IsSupported(t));
    CHECK(BlockElems(t) == gguf::BlockSize(t));
    CHECK(BlockBytes(t) == gguf::TypeSize(t));
  }
  CHECK(IsSupportedWeightType(gguf::Type::Q6_K));
  CHECK_FALSE(IsSupportedWeightType(gguf::Type::Q8_K));
  CHECK_FALSE(IsSupportedWeightType(gguf::Type::TQ1_0));
  float out[256];
  std::vector<uint8_t> zeros(256, 0);
  CHECK_FALSE(ref::DequantizeRow(gguf::Type::TQ1_0, zeros.data(), out, 256));
  CHECK_FALSE(ref::DequantizeRow(gguf::Type::Q8_0, zeros.data(), out, 31));
}

TEST_CASE("MXFP4 dequantization, E8M0 scales down to the subnormal range", "[ref]") {
  BlockMXFP4 b[4];
  const uint8_t exps[4] = {0, 1, 127, 200};
  for (int i = 0; i < 4; ++i) {
    b[i].e = exps[i];
    for (int j = 0; j < 16; ++j) b[i].qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  }
  float y[128];
  REQUIRE(ref::DequantizeRow(gguf::Type::MXFP4, b, y, 128));
  for (int i = 0; i < 4; ++i) {
    const double scale = std::ldexp(1.0, exps[i] - 128);  // 2^(e - 127) / 2
    for (int j = 0; j < 32; ++j) {
      const int nibble = j < 16 ? j : 15 - (j - 16);
      CAPTURE(i, j);
      CHECK(y[32 * i + j] == static_cast<float>(kMxfp4Values[nibble] * scale));
    }
  }
  CHECK(E8M0ToFp32Half(0) == std::ldexp(1.0f, -128));
  CHECK(E8M0ToFp32Half(1) == std::ldexp(1.0f, -127));
  CHECK(E8M0ToFp32Half(2) == std::ldexp(1.0f, -126));
}

TEST_CASE("Q3_K and IQ4_XS scale unpacking: every 6-bit code survives", "[ref]") {
  for (int v = 0; v < 64; ++v) {
    uint8_t packed[12] = {};
    // Code j: low 4 bits at nibble j / 8 of byte j % 8, high 2 bits at bits 2 (j / 4) of byte 8 + j
    // % 4.
    for (int j = 0; j < 16; ++j) {
      const int code = (v + 5 * j) % 64;
      packed[j % 8] |= static_cast<uint8_t>((code & 15) << (4 * (j / 8)));
      packed[8 + j % 4] |= static_cast<uint8_t>((code >> 4) << (2 * (j / 4)));
    }
    uint8_t sc[16];
    UnpackScalesQ3K(packed, sc);
    for (int j = 0; j < 16; ++j) CHECK(sc[j] == (v + 5 * j) % 64);
    BlockIQ4XS b{};
    for (int ib = 0; ib < 8; ++ib) {
      const int code = (v + 7 * ib) % 64;
      b.scales_l[ib / 2] |= static_cast<uint8_t>((code & 15) << (4 * (ib % 2)));
      b.scales_h |= static_cast<uint16_t>((code >> 4) << (2 * ib));
    }
    for (int ib = 0; ib < 8; ++ib) CHECK(ScaleIQ4XS(b, ib) == (v + 7 * ib) % 64);
  }
}

// Packs 8 six-bit scales and mins into 12 bytes following the bit picture of
// docs/spec/gguf-and-quants.md §3.5.1 (written from the description, not by inverting
// UnpackScaleMinK).
void PackScalesK(const int sc[8], const int m[8], uint8_t out[12]) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  }
}

TEST_CASE("K-quant scale packing: every 6-bit value survives", "[ref]") {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 200; ++iter) {
    int sc[8], m[8];
    for (int s = 0; s < 8; ++s) {
      sc[s] = iter < 64 ? iter : static_cast<int>(rng() % 64);
      m[s] = iter < 64 ? 63 - iter : static_cast<int>(rng() % 64);
    }
    uint8_t packed[12];
    PackScalesK(sc, m, packed);
    for (int s = 0; s < 8; ++s) {
      uint8_t gs, gm;
      UnpackScaleMinK(packed, s, &gs, &gm);
      REQUIRE(gs == sc[s]);
      REQUIRE(gm == m[s]);
    }
  }
}

TEST_CASE("Q8_0 dequantization", "[ref]") {
  BlockQ8_0 b[2];
  b[0].d = 0x3800;  // 0.5
  b[1].d = 0xB400;  // -0.25
  for (int j = 0; j < 32; ++j) {
    b[0].qs[j] = static_cast<int8_t>(j * 8 - 128);
    b[1].qs[j] = static_cast<int8_t>(127 - j);
  }
  float y[64];
  REQUIRE(ref::DequantizeRow(gguf::Type::Q8_0, b, y, 64));
  for (int j = 0; j < 32; ++j) {
    CHECK(y[j] == 0.5f * (j * 8 - 128));
    CHECK(y[32 + j] == -0.25f * (127 - j));
  }
}

TEST_CASE("Q4_K dequantization of a hand-built block", "[ref]") {
  const int sc[8] = {1, 63, 17, 32, 5, 40, 63, 0};
  const int m[8] = {0, 2, 63, 33, 60, 1, 31, 47};
  std::mt19937 rng(1);
  int q[256];
  for (int& v : q) v = static_cast<int>(rng() % 16);
  BlockQ4K b{};
  b.d = 0x3800;     // 0.5
  b.dmin = 0x3400;  // 0.25
  PackScalesK(sc, m, b.scales);
  // Element 32s + l: byte 32*(s/2) + l, low nibble for even s, high for odd s.
  for (int s = 0; s < 8; ++s)
    for (int l = 0; l < 32; ++l)
      b.qs[32 * (s / 2) + l] |= static_cast<uint8_t>(q[32 * s + l] << (4 * (s % 2)));
  float y[256];
  REQUIRE(ref::DequantizeRow(gguf::Type::Q4_K, &b, y, 256));
  for (int e = 0; e < 256; ++e) {
    const double want = 0.5 * sc[e / 32] * q[e] - 0.25 * m[e / 32];  // exact in float
    REQUIRE(y[e] == want);
  }
}

TEST_CASE("Q5_K dequantization of a hand-built block", "[ref]") {
  const int sc[8] = {63, 1, 2, 3, 62, 33, 16, 48};
  const int m[8] = {5, 0, 63, 9, 17, 31, 32, 1};
  std::mt19937 rng(2);
  int q[256];
  for (int& v : q) v = static_cast<int>(rng() % 32);
  BlockQ5K b{};
  b.d = 0x2C00;     // 1/16
  b.dmin = 0xBC00;  // -1 (dmin may be negative in principle; formula still applies)
  PackScalesK(sc, m, b.scales);
  for (int s = 0; s < 8; ++s) {
    for (int l = 0; l < 32; ++l) {
      const int v = q[32 * s + l];
      b.qs[32 * (s / 2) + l] |= static_cast<uint8_t>((v & 15) << (4 * (s % 2)));
      b.qh[l] |= static_cast<uint8_t>((v >> 4) << s);
    }
  }
  float y[256];
  REQUIRE(ref::DequantizeRow(gguf::Type::Q5_K, &b, y, 256));
  for (int e = 0; e < 256; ++e) REQUIRE(y[e] == (1.0 / 16) * sc[e / 32] * q[e] + 1.0 * m[e / 32]);
}

TEST_CASE("Q6_K dequantization of a hand-built block", "[ref]") {
  std::mt19937 rng(3);
  int q[256];  // in [-32, 31]
  for (int& v : q) v = static_cast<int>(rng() % 64) - 32;
  int8_t scales[16];
  for (int g = 0; g < 16; ++g) scales[g] = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
  scales[0] = -128;
  scales[1] = 127;
  BlockQ6K b{};
  b.d = 0x3000;  // 0.125
  std::memcpy(b.scales, scales, 16);
  // gguf-and-quants.md §3.7 table: element 128n + 32k + l: low bits in ql[64n + l + 32*(k%2)]
  // (nibble k/2), high bits in qh[32n + l] bits 2k..2k+1.
  for (int e = 0; e < 256; ++e) {
    const int n = e / 128, k = (e % 128) / 32, l = e % 32;
    const int u = q[e] + 32;
    b.ql[64 * n + l + 32 * (k % 2)] |= static_cast<uint8_t>((u & 15) << (4 * (k / 2)));
    b.qh[32 * n + l] |= static_cast<uint8_t>((u >> 4) << (2 * k));
  }
  float y[256];
  REQUIRE(ref::DequantizeRow(gguf::Type::Q6_K, &b, y, 256));
  for (int e = 0; e < 256; ++e) REQUIRE(y[e] == 0.125 * scales[e / 16] * q[e]);
}

TEST_CASE("F16, BF16, F32 rows and Q8_K dequantization", "[ref]") {
  const uint16_t h[4] = {0x3C00, 0xC000, 0x0001, 0x7C00};
  float y[4];
  REQUIRE(ref::DequantizeRow(gguf::Type::F16, h, y, 4));
  CHECK(y[0] == 1.0f);
  CHECK(y[1] == -2.0f);
  CHECK(y[2] == std::ldexp(1.0f, -24));
  CHECK(std::isinf(y[3]));
  const uint16_t bf[2] = {0x3F80, 0x4049};
  REQUIRE(ref::DequantizeRow(gguf::Type::BF16, bf, y, 2));
  CHECK(y[0] == 1.0f);
  CHECK(y[1] == FromBits(0x40490000));
  const float f[3] = {1.5f, -0.0f, 3e38f};
  REQUIRE(ref::DequantizeRow(gguf::Type::F32, f, y, 3));
  CHECK(std::memcmp(f, y, 12) == 0);
  BlockQ8K k{};
  k.d = -0.75f;
  for (int j = 0; j < 256; ++j) k.qs[j] = static_cast<int8_t>(j - 128);
  float yk[256];
  REQUIRE(ref::DequantizeRow(gguf::Type::Q8_K, &k, yk, 256));
  for (int j = 0; j < 256; ++j) REQUIRE(yk[j] == -0.75f * (j - 128));
}

TEST_CASE("Q8_K quantization properties", "[ref]") {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.f, 2.f);
  std::vector<float> x(1024);
  for (int iter = 0; iter < 50; ++iter) {
    for (float& v : x) v = nd(rng);
    if (iter == 1) x[77] = 100.f;    // positive extreme -> -127, d < 0
    if (iter == 2) x[300] = -100.f;  // negative extreme also -> -127, with d > 0
    if (iter == 3) std::fill(x.begin() + 256, x.begin() + 512, 0.f);  // an all-zero block
    std::vector<BlockQ8K> q(4);
    QuantizeRowQ8K(x.data(), q.data(), 1024);
    for (int b = 0; b < 4; ++b) {
      const float* xb = x.data() + 256 * b;
      float amax = 0, max = 0;
      for (int j = 0; j < 256; ++j)
        if (std::fabs(xb[j]) > amax) amax = std::fabs(xb[j]), max = xb[j];
      if (amax == 0) {
        REQUIRE(q[b].d == 0);
        for (int j = 0; j < 256; ++j) REQUIRE(q[b].qs[j] == 0);
        for (int g = 0; g < 16; ++g) REQUIRE(q[b].bsums[g] == 0);
        continue;
      }
      // The extreme element maps to -127, so d has the opposite sign of max and |d| = amax / 127.
      REQUIRE(std::signbit(q[b].d) != std::signbit(max));
      REQUIRE(std::fabs(q[b].d) == Approx(amax / 127).epsilon(1e-6));
      for (int j = 0; j < 256; ++j) {
        REQUIRE(q[b].qs[j] >= -127);
        if (xb[j] == max) REQUIRE(q[b].qs[j] == -127);
        REQUIRE(std::fabs(q[b].d * q[b].qs[j] - xb[j]) <= std::fabs(q[b].d) * 0.5f * 1.0001f);
      }
      for (int g = 0; g < 16; ++g) {
        int sum = 0;
        for (int j = 0; j < 16; ++j) sum += q[b].qs[16 * g + j];
        REQUIRE(q[b].bsums[g] == sum);
      }
    }
  }
  // Round half to even: x = {-127 (the max), 0.5, 1.5, 2.5, -0.5} scaled by 1: iscale = 1.
  std::vector<float> t(256, 0.f);
  t[0] = -127.f;
  t[1] = 0.5f;
  t[2] = 1.5f;
  t[3] = 2.5f;
  t[4] = -0.5f;
  BlockQ8K qt;
  QuantizeRowQ8K(t.data(), &qt, 256);
  CHECK(qt.d == 1.0f);
  CHECK(qt.qs[0] == -127);
  CHECK(qt.qs[1] == 0);
  CHECK(qt.qs[2] == 2);
  CHECK(qt.qs[3] == 2);
  CHECK(qt.qs[4] == 0);
  // Ties in magnitude: the first occurrence decides the sign.
  t.assign(256, 0.f);
  t[5] = 3.f;
  t[9] = -3.f;
  QuantizeRowQ8K(t.data(), &qt, 256);
  CHECK(qt.qs[5] == -127);
  CHECK(qt.qs[9] == 127);
  CHECK(qt.d < 0);
}

TEST_CASE("Q8_0 quantization properties", "[ref]") {
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> ud(-3.f, 3.f);
  std::vector<float> x(96);
  for (float& v : x) v = ud(rng);
  std::fill(x.begin() + 32, x.begin() + 64, 0.f);
  x[70] = 5.f;
  std::vector<BlockQ8_0> q(3);
  QuantizeRowQ8_0(x.data(), q.data(), 96);
  for (int b = 0; b < 3; ++b) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[32 * b + j]));
    const float d = amax / 127;
    CHECK(q[b].d == Fp32ToFp16(d));
    for (int j = 0; j < 32; ++j) {
      const float xj = x[32 * b + j];
      REQUIRE(q[b].qs[j] == (d == 0 ? 0 : static_cast<int>(std::roundf(xj * (1.f / d)))));
      // Error of the stored (fp16) scale: at most 127 * |fp16(d) - d| on top of half a step.
      const float dh = Fp16ToFp32(q[b].d);
      REQUIRE(std::fabs(dh * q[b].qs[j] - xj) <= 0.5f * d + 127 * std::fabs(dh - d) + 1e-6f);
    }
  }
  CHECK(q[2].qs[6] == 127);
}

// A block whose largest magnitude is subnormal used to give 1/d = inf and an int8 conversion of
// inf (undefined behaviour; UBSan halts on it). Non-finite inputs are handled the same way. Every
// output is defined: d = fp16(amax / 127) and quants within [-127, 127].
TEST_CASE("Q8_0 quantization of subnormal and non-finite blocks is defined", "[ref][hostile]") {
  const float sub = std::numeric_limits<float>::denorm_min();
  const float inf = std::numeric_limits<float>::infinity(),
              nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x(5 * 32, 0.f);
  for (int j = 0; j < 32; ++j)
    x[j] = (j % 2 ? -1.f : 1.f) * sub * static_cast<float>(j + 1);           // subnormal
  for (int j = 32; j < 64; ++j) x[j] = 1e-39f * static_cast<float>(j - 31);  // subnormal
  for (int j = 64; j < 96; ++j) x[j] = j == 70 ? inf : 0.5f;                 // inf
  for (int j = 96; j < 128; ++j)
    x[j] = j == 100 ? nan : -0.25f * static_cast<float>(j - 96);              // NaN
  for (int j = 128; j < 160; ++j) x[j] = static_cast<float>(j - 144) / 16.f;  // normal
  std::vector<BlockQ8_0> q(5);
  QuantizeRowQ8_0(x.data(), q.data(), 160);
  for (int b = 0; b < 2; ++b) {
    CHECK(Fp16ToFp32(q[b].d) == 0.f);  // amax / 127 underflows fp16
    for (int j = 0; j < 32; ++j) CHECK(q[b].qs[j] == 0);
  }
  CHECK(std::isinf(Fp16ToFp32(q[2].d)));
  for (int j = 0; j < 32; ++j) CHECK(q[2].qs[j] == 0);
  // NaN is ignored by the max (fmax), so the block's scale is that of its finite values.
  CHECK(q[3].d == Fp32ToFp16(0.25f * 31 / 127));
  CHECK(q[3].qs[4] == 0);
  CHECK(q[3].qs[31] == -127);
  // A normal block is unchanged (bit-exact with the reference formula).
  const float d = 1.0f / 127;
  for (int j = 0; j < 32; ++j) {
    CHECK(q[4].qs[j] == static_cast<int>(std::roundf(x[128 + j] * (1.f / d))));
  }
}

// Rows that exercise the quantizers: gaussian with a different scale per 32 elements, an
// all-positive and an all-negative stretch, an all-zero stretch and one outlier.
std::vector<float> QuantizerInput(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[i] = nd(rng) * 0.02f * (1 + static_cast<float>((i / 32) % 5));
  for (int64_t i = 64; i < 96; ++i) x[i] = std::fabs(x[i]) + 0.05f;
  for (int64_t i = 96; i < 128; ++i) x[i] = -std::fabs(x[i]) - 0.05f;
  for (int64_t i = 256; i < 288; ++i) x[i] = 0;
  x[300] = 1.5f;
  return x;
}

double RelRms(const std::vector<float>& x, const std::vector<float>& y) {
  double e = 0, s = 0;
  for (size_t i = 0; i < x.size(); ++i)
    e += (x[i] - y[i]) * double(x[i] - y[i]), s += double(x[i]) * x[i];
  return std::sqrt(e / s);
}

TEST_CASE("QuantizeRow round trip meets the documented error bounds", "[ref]") {
  const int64_t n = 1024;
  for (uint32_t seed : {1u, 2u, 3u}) {
    const auto x = QuantizerInput(n, seed);
    std::vector<float> y(n);
    // Q4_K: |e| <= (range_sub32 / 15 + d) / 2 + dmin / 2.
    {
      std::vector<BlockQ4K> q(n / 256);
      REQUIRE(QuantizeRow(gguf::Type::Q4_K, x.data(), q.data(), n));
      REQUIRE(ref::DequantizeRow(gguf::Type::Q4_K, q.data(), y.data(), n));
      for (int64_t s = 0; s < n / 32; ++s) {
        float lo = 0, hi = 0;
        for (int l = 0; l < 32; ++l)
          lo = std::min(lo, x[32 * s + l]), hi = std::max(hi, x[32 * s + l]);
        const BlockQ4K& b = q[s / 8];
        const float bound = ((hi - lo) / 15 + Fp16ToFp32(b.d)) / 2 + Fp16ToFp32(b.dmin) / 2 + 1e-7f;
        for (int l = 0; l < 32; ++l) REQUIRE(std::fabs(y[32 * s + l] - x[32 * s + l]) <= bound);
        if (hi == lo)
          for (int l = 0; l < 32; ++l) REQUIRE(y[32 * s + l] == 0);
      }
      CHECK(RelRms(x, y) < 0.12);  // measured 0.094-0.098 (min/max scales, no search)
    }
    // Q6_K: |e| <= (amax_group16 / 31.5 + d) / 2.
    {
      std::vector<BlockQ6K> q(n / 256);
      REQUIRE(QuantizeRow(gguf::Type::Q6_K, x.data(), q.data(), n));
      REQUIRE(ref::DequantizeRow(gguf::Type::Q6_K, q.data(), y.data(), n));
      for (int64_t g = 0; g < n / 16; ++g) {
        float amax = 0;
        for (int j = 0; j < 16; ++j) amax = std::max(amax, std::fabs(x[16 * g + j]));
        const float bound = (amax / 31.5f + Fp16ToFp32(q[g / 16].d)) / 2 + 1e-7f;
        for (int j = 0; j < 16; ++j) REQUIRE(std::fabs(y[16 * g + j] - x[16 * g + j]) <= bound);
      }
      CHECK(RelRms(x, y) <
            0.04);  // measured 0.031 (the outlier group inflates the 8-bit scale step)
    }
    // Q8_0.
    {
      std::vector<BlockQ8_0> q(n / 32);
      REQUIRE(QuantizeRow(gguf::Type::Q8_0, x.data(), q.data(), n));
      REQUIRE(ref::DequantizeRow(gguf::Type::Q8_0, q.data(), y.data(), n));
      for (int64_t b = 0; b < n / 32; ++b) {
        float amax = 0;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[32 * b + j]));
        const float d = amax / 127;
        const float bound = amax / 254 + 127 * std::fabs(Fp16ToFp32(q[b].d) - d) + 1e-7f;
        for (int j = 0; j < 32; ++j) REQUIRE(std::fabs(y[32 * b + j] - x[32 * b + j]) <= bound);
      }
      CHECK(RelRms(x, y) < 0.01);
    }
    // Float types: F32 exact, F16 / BF16 = the rounding conversions.
    std::vector<uint16_t> h(n);
    REQUIRE(QuantizeRow(gguf::Type::F16, x.data(), h.data(), n));
    for (int64_t i = 0; i < n; ++i) REQUIRE(h[i] == Fp32ToFp16(x[i]));
    REQUIRE(QuantizeRow(gguf::Type::BF16, x.data(), h.data(), n));
    for (int64_t i = 0; i < n; ++i) REQUIRE(h[i] == Fp32ToBf16(x[i]));
    REQUIRE(QuantizeRow(gguf::Type::F32, x.data(), y.data(), n));
    REQUIRE(y == x);
  }
  std::vector<uint8_t> buf(1024);
  std::vector<float> z(256, 0.f);
  CHECK_FALSE(QuantizeRow(gguf::Type::Q5_K, z.data(), buf.data(), 256));
  CHECK_FALSE(QuantizeRow(gguf::Type::Q4_K, z.data(), buf.data(), 100));
  // An all-zero row quantizes to zeros.
  REQUIRE(QuantizeRow(gguf::Type::Q4_K, z.data(), buf.data(), 256));
  std::vector<float> back(256, 1.f);
  REQUIRE(ref::DequantizeRow(gguf::Type::Q4_K, buf.data(), back.data(), 256));
  CHECK(back == z);
}

// One element of a Q4_K / Q6_K / F32 row decoded straight from the byte tables of
// gguf-and-quants.md (§3.5–§3.7), element by element, as an independent check of the row decoders
// on real data.
float DecodeElement(gguf::Type type, const uint8_t* row, int64_t e) {
  auto fp16 = [](const uint8_t* p) {
    return Fp16ToFp32(static_cast<uint16_t>(p[0] | (p[1] << 8)));
  };
  const int64_t i = e % 256;
  if (type == gguf::Type::Q4_K) {
    const uint8_t* blk = row + (e / 256) * 144;
    const int s = static_cast<int>(i / 32), l = static_cast<int>(i % 32);
    const uint8_t* b = blk + 4;
    const int sc = s < 4 ? b[s] & 63 : (b[s + 4] & 15) | ((b[s - 4] >> 6) << 4);
    const int m = s < 4 ? b[s + 4] & 63 : (b[s + 4] >> 4) | ((b[s] >> 6) << 4);
    const int q = (blk[16 + 32 * (s / 2) + l] >> (4 * (s % 2))) & 15;
    return fp16(blk) * sc * q - fp16(blk + 2) * m;
  }
  if (type == gguf::Type::Q6_K) {
    const uint8_t* blk = row + (e / 256) * 210;
    const int half = static_cast<int>(i / 128), k = static_cast<int>(i % 128 / 32),
              l = static_cast<int>(i % 32);
    const int lo = (blk[64 * half + l + 32 * (k % 2)] >> (4 * (k / 2))) & 15;
    const int hi = (blk[128 + 32 * half + l] >> (2 * k)) & 3;
    return fp16(blk + 208) * static_cast<int8_t>(blk[192 + i / 16]) * ((lo | (hi << 4)) - 32);
  }
  float f;
  std::memcpy(&f, row + 4 * e, 4);
  return f;
}

TEST_CASE("real tensors of the tiny fixture dequantize as the spec says", "[ref][golden]") {
  gguf::Error err;
  auto file = gguf::File::Open(std::string(QWENRT_TEST_DATA) + "/tiny-s1-q4km.gguf", &err);
  REQUIRE(file.has_value());
  for (const char* name :
       {"token_embd.weight", "blk.0.attn_gate.weight", "blk.3.attn_v.weight",
        "blk.1.ffn_down.weight", "blk.0.ssm_conv1d.weight", "blk.2.ssm_alpha.weight"}) {
    CAPTURE(name);
    const gguf::TensorInfo* t = file->FindTensor(name);
    REQUIRE(t != nullptr);
    const int64_t cols = t->ne[0], rows = t->nelements() / cols;
    REQUIRE(RowBytes(t->type, cols) == static_cast<int64_t>(t->row_bytes()));
    REQUIRE(RowBytes(t->type, cols) * rows == static_cast<int64_t>(t->nbytes));
    // Whole tensor at once (rows are contiguous blocks) equals row by row equals element by
    // element.
    std::vector<float> all(static_cast<size_t>(cols * rows)), row(static_cast<size_t>(cols));
    REQUIRE(ref::DequantizeRow(t->type, t->data, all.data(), cols * rows));
    double sum2 = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t* src = t->data + r * t->row_bytes();
      REQUIRE(ref::DequantizeRow(t->type, src, row.data(), cols));
      for (int64_t c = 0; c < cols; ++c) {
        REQUIRE(std::isfinite(row[c]));
        REQUIRE(row[c] == all[r * cols + c]);
        REQUIRE(row[c] == DecodeElement(t->type, src, c));
        sum2 += double(row[c]) * row[c];
      }
    }
    CHECK(sum2 > 0);  // real, non-degenerate data
  }
}

}  // namespace
}  // namespace qwenrt
