// Dot products and matmuls: the scalar reference dots against dequantize-then-multiply, every fast
// kernel against the reference dots (same integer sums, so only float rounding may differ), and
// cpu::MatMul against ref::MatMul with a per-output bound derived from the Q8_K / Q8_0 activation
// rounding. Random seeded data, odd row and token counts.
#include "ops/matmul.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/thread_pool.h"
#include "ops/quant.h"
#include "ops/vec_dot.h"
#include "qwenrt/gguf.hpp"

namespace qwenrt {
namespace {

// Random but well-formed blocks: random quant bytes, scales d in [0.5e-3, 2e-3] (as fp16), so
// values are O(0.1) like real weights.
std::vector<uint8_t> RandomRows(gguf::Type type, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t rb = RowBytes(type, cols);
  std::vector<uint8_t> data(static_cast<size_t>(rb * rows));
  std::uniform_real_distribution<float> ud(0.5e-3f, 2e-3f), nd(-1.f, 1.f);
  auto fp16 = [&](float lo_scale) { return Fp32ToFp16(ud(rng) * lo_scale); };
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  const int64_t nb = rows * cols / BlockElems(type);
  switch (type) {
    case gguf::Type::F32: {
      auto* f = reinterpret_cast<float*>(data.data());
      for (int64_t i = 0; i < rows * cols; ++i) f[i] = nd(rng) * 0.1f;
      break;
    }
    case gguf::Type::F16:
    case gguf::Type::BF16: {
      auto* h = reinterpret_cast<uint16_t*>(data.data());
      for (int64_t i = 0; i < rows * cols; ++i)
        h[i] = type == gguf::Type::F16 ? Fp32ToFp16(nd(rng) * 0.1f) : Fp32ToBf16(nd(rng) * 0.1f);
      break;
    }
    case gguf::Type::Q8_0: {
      auto* b = reinterpret_cast<BlockQ8_0*>(data.data());
      for (int64_t i = 0; i < nb; ++i) b[i].d = fp16(1.f);
      break;
    }
    case gguf::Type::Q4_K: {
      auto* b = reinterpret_cast<BlockQ4K*>(data.data());
      for (int64_t i = 0; i < nb; ++i) b[i].d = fp16(1.f), b[i].dmin = fp16(1.f);
      break;
    }
    case gguf::Type::Q5_K: {
      auto* b = reinterpret_cast<BlockQ5K*>(data.data());
      for (int64_t i = 0; i < nb; ++i) b[i].d = fp16(1.f), b[i].dmin = fp16(1.f);
      break;
    }
    case gguf::Type::Q6_K: {
      auto* b = reinterpret_cast<BlockQ6K*>(data.data());
      for (int64_t i = 0; i < nb; ++i) b[i].d = fp16(0.1f);
      break;
    }
    case gguf::Type::Q4_0: {
      auto* b = reinterpret_cast<BlockQ4_0*>(data.data());
      for (int64_t i = 0; i < nb; ++i) b[i].d = fp16(10.f);
      break;
    }
    case gguf::Type::Q4_1: {
      auto* b = reinterpret_cast<BlockQ4_1*>(data.data());
      for (int64_t i = 0; i < nb; ++i)
        b[i].d = fp16(10.f), b[i].m = Fp32ToFp16(-8.f * ud(rng) * 10.f);
      break;
    }
    case gguf::Type::Q5_0: {
      auto* b = reinterpret_cast<BlockQ5_0*>(data.data());
      for (int64_t i = 0; i < nb; ++i) b[i].d = fp16(5.f);
      break;
    }
    case gguf::Type::Q5_1: {
      auto* b = reinterpret_cast<BlockQ5_1*>(data.data());
      for (int64_t i = 0; i < nb; ++i)
        b[i].d = fp16(5.f), b[i].m = Fp32ToFp16(-16.f * ud(rng) * 5.f);
      break;
    }
    case gguf::Type::IQ4_NL: {
      auto* b = reinterpret_cast<BlockIQ4NL*>(data.data());
      for (int64_t i = 0; i < nb; ++i) b[i].d = fp16(0.5f);
      break;
    }
    case gguf::Type::MXFP4: {
      auto* b = reinterpret_cast<BlockMXFP4*>(data.data());
      for (int64_t i = 0; i < nb; ++i)
        b[i].e = static_cast<uint8_t>(117 + rng() % 5);  // 2^-11 .. 2^-7
      break;
    }
    case gguf::Type::Q2_K: {
      auto* b = reinterpret_cast<BlockQ2K*>(data.data());
      for (int64_t i = 0; i < nb; ++i) b[i].d = fp16(1.f), b[i].dmin = fp16(1.f);
      break;
    }
    case gguf::Type::Q3_K: {
      auto* b = reinterpret_cast<BlockQ3K*>(data.data());
      for (int64_t i = 0; i < nb; ++i) b[i].d = fp16(0.2f);
      break;
    }
    case gguf::Type::IQ4_XS: {
      auto* b = reinterpret_cast<BlockIQ4XS*>(data.data());
      for (int64_t i = 0; i < nb; ++i) b[i].d = fp16(0.02f);
      break;
    }
    default:
      break;
  }
  return data;
}

std::vector<float> RandomActivations(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = nd(rng);
  // A few outliers, as real activations have; they stress the per-block activation scale.
  for (int64_t i = 0; i < n; i += 97) x[static_cast<size_t>(i)] *= 8.f;
  return x;
}

const gguf::Type kAllTypes[] = {
    gguf::Type::F32,   gguf::Type::F16,  gguf::Type::BF16, gguf::Type::Q8_0,
    gguf::Type::Q4_K,  gguf::Type::Q5_K, gguf::Type::Q6_K, gguf::Type::Q4_0,
    gguf::Type::Q4_1,  gguf::Type::Q5_0, gguf::Type::Q5_1, gguf::Type::IQ4_NL,
    gguf::Type::MXFP4, gguf::Type::Q2_K, gguf::Type::Q3_K, gguf::Type::IQ4_XS,
};

// The activation format cpu::MatMul quantizes to for `t`: Q8_K (256-element super-blocks), Q8_0
// (32-element blocks) or F32 (float weights).
gguf::Type ActTypeOf(gguf::Type t) {
  if (BlockElems(t) == 1) return gguf::Type::F32;
  return BlockElems(t) == kQK_K ? gguf::Type::Q8_K : gguf::Type::Q8_0;
}
bool IsKQuant(gguf::Type t) { return ActTypeOf(t) == gguf::Type::Q8_K; }

// Reference dot of one weight row against quantized activations `a` (Q8_K or Q8_0) or f32 `x`.
float RefDot(gguf::Type type, const uint8_t* w, const uint8_t* a, const float* x, int64_t n) {
  switch (type) {
    case gguf::Type::Q4_K:
      return ref::VecDotQ4K_Q8K(w, a, n);
    case gguf::Type::Q5_K:
      return ref::VecDotQ5K_Q8K(w, a, n);
    case gguf::Type::Q6_K:
      return ref::VecDotQ6K_Q8K(w, a, n);
    case gguf::Type::Q8_0:
      return ref::VecDotQ8_0_Q8_0(w, a, n);
    case gguf::Type::Q4_0:
      return ref::VecDotQ4_0_Q8_0(w, a, n);
    case gguf::Type::Q4_1:
      return ref::VecDotQ4_1_Q8_0(w, a, n);
    case gguf::Type::Q5_0:
      return ref::VecDotQ5_0_Q8_0(w, a, n);
    case gguf::Type::Q5_1:
      return ref::VecDotQ5_1_Q8_0(w, a, n);
    case gguf::Type::IQ4_NL:
      return ref::VecDotIQ4NL_Q8_0(w, a, n);
    case gguf::Type::MXFP4:
      return ref::VecDotMXFP4_Q8_0(w, a, n);
    case gguf::Type::Q2_K:
      return ref::VecDotQ2K_Q8K(w, a, n);
    case gguf::Type::Q3_K:
      return ref::VecDotQ3K_Q8K(w, a, n);
    case gguf::Type::IQ4_XS:
      return ref::VecDotIQ4XS_Q8K(w, a, n);
    case gguf::Type::F32:
      return ref::VecDotF32(reinterpret_cast<const float*>(w), x, n);
    case gguf::Type::F16:
      return ref::VecDotF16_F32(reinterpret_cast<const uint16_t*>(w), x, n);
    case gguf::Type::BF16:
      return ref::VecDotBF16_F32(reinterpret_cast<const uint16_t*>(w), x, n);
    default:
      return NAN;
  }
}

TEST_CASE("reference quantized dots equal dequantize-then-multiply", "[ref]") {
  const int64_t n = 1024;
  for (gguf::Type type : kAllTypes) {
    CAPTURE(static_cast<int>(type));
    const auto w = RandomRows(type, 3, n, 100 + static_cast<uint32_t>(type));
    const auto x = RandomActivations(n, 5);
    const bool quantized = ActTypeOf(type) != gguf::Type::F32;
    const gguf::Type at = ActTypeOf(type) == gguf::Type::Q8_0 ? gguf::Type::Q8_0 : gguf::Type::Q8_K;
    std::vector<uint8_t> a(static_cast<size_t>(RowBytes(at, n)));
    if (at == gguf::Type::Q8_0)
      QuantizeRowQ8_0(x.data(), a.data(), n);
    else
      QuantizeRowQ8K(x.data(), a.data(), n);
    std::vector<float> wf(n), af(n);
    if (quantized)
      REQUIRE(ref::DequantizeRow(at, a.data(), af.data(), n));
    else
      af = x;
    for (int r = 0; r < 3; ++r) {
      const uint8_t* wr = w.data() + r * RowBytes(type, n);
      REQUIRE(ref::DequantizeRow(type, wr, wf.data(), n));
      double want = 0, mag = 0;
      for (int64_t c = 0; c < n; ++c)
        want += double(wf[c]) * af[c], mag += std::fabs(double(wf[c]) * af[c]);
      const float got = RefDot(type, wr, a.data(), x.data(), n);
      // Integer inner sums are exact; what remains is float rounding of O(n) terms.
      CHECK(std::fabs(got - want) <= 1e-5 * mag + 1e-30);
    }
  }
}

// Runs cpu::MatMul and compares it against (a) the reference dots on the same quantized activations
// (tight: float rounding only) and (b) ref::MatMul on f32 activations (bound from the activation
// quantization error: |x - x_q| <= step/2 per element, step = |d| of its block).
void CheckMatMul(gguf::Type type, int64_t rows, int64_t cols, int64_t T, ThreadPool& pool) {
  CAPTURE(static_cast<int>(type), rows, cols, T, pool.size());
  const auto w = RandomRows(type, rows, cols, static_cast<uint32_t>(rows * 31 + T));
  const auto x = RandomActivations(T * cols, static_cast<uint32_t>(T * 7 + cols));
  const WeightMatrix wm = MakeWeightMatrix(type, cols, rows, w.data());
  REQUIRE(CheckWeightMatrix(wm).ok());
  std::vector<float> y_cpu(static_cast<size_t>(T * rows), NAN),
      y_ref(static_cast<size_t>(T * rows), NAN);
  cpu::MatMul(wm, x.data(), y_cpu.data(), T, pool);
  ref::MatMul(wm, x.data(), y_ref.data(), T);

  const bool kq = IsKQuant(type), q8 = ActTypeOf(type) == gguf::Type::Q8_0;
  const gguf::Type at = q8 ? gguf::Type::Q8_0 : gguf::Type::Q8_K;
  const int64_t ab = (kq || q8) ? RowBytes(at, cols) : 0;
  std::vector<uint8_t> a(static_cast<size_t>(ab));
  std::vector<float> wf(static_cast<size_t>(rows * cols)), xq(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r)
    REQUIRE(ref::DequantizeRow(type, w.data() + r * wm.row_bytes, wf.data() + r * cols, cols));
  double max_rel_tight = 0, max_rel_bound = 0;
  for (int64_t t = 0; t < T; ++t) {
    const float* xt = x.data() + t * cols;
    if (q8) QuantizeRowQ8_0(xt, a.data(), cols);
    if (kq) QuantizeRowQ8K(xt, a.data(), cols);
    if (kq || q8) REQUIRE(ref::DequantizeRow(at, a.data(), xq.data(), cols));
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t* wr = w.data() + r * wm.row_bytes;
      const float* wfr = wf.data() + r * cols;
      double mag = 0, qerr = 0;  // sum |w x|, and the activation-rounding bound sum |w| |x - x_q|
      for (int64_t c = 0; c < cols; ++c) {
        mag += std::fabs(double(wfr[c]) * xt[c]);
        if (kq || q8) qerr += std::fabs(double(wfr[c])) * std::fabs(double(xt[c]) - xq[c]);
      }
      const float cpu = y_cpu[t * rows + r];
      const float dot = RefDot(type, wr, a.data(), xt, cols);
      const double tight = std::fabs(double(cpu) - dot);
      REQUIRE(tight <= 2e-5 * mag + 1e-30);
      const double vs_ref = std::fabs(double(cpu) - y_ref[t * rows + r]);
      REQUIRE(vs_ref <= qerr + 2e-5 * mag + 1e-30);
      max_rel_tight = std::max(max_rel_tight, tight / (mag + 1e-30));
      max_rel_bound = std::max(max_rel_bound, vs_ref / (qerr + 2e-5 * mag + 1e-30));
    }
  }
  INFO("max |cpu - refdot| / sum|wx| = " << max_rel_tight
                                         << ", max share of the bound used = " << max_rel_bound);
  SUCCEED();
}

TEST_CASE("cpu::MatMul matches the reference on odd shapes", "[cpu]") {
  WARN("dot kernels: " << cpu::DotKernelIsa());
  ThreadPool pool(3);
  for (gguf::Type type : kAllTypes) {
    for (int64_t rows : {1, 7, 63, 500}) {
      for (int64_t T : {1, 7, 63}) CheckMatMul(type, rows, 512, T, pool);
    }
    CheckMatMul(type, 33, 1280, 9, pool);                          // 5 super-blocks per row
    if (BlockElems(type) == 1) CheckMatMul(type, 7, 37, 5, pool);  // float kernels' scalar tails
    if (BlockElems(type) == kQK8_0) CheckMatMul(type, 9, 32 * 13, 5, pool);  // odd block count
  }
}

TEST_CASE("every dot kernel agrees with the reference for every token count", "[cpu]") {
  // T = ntok = 1 .. kMaxDotTokens: each compile-time token count of the multi-token kernels once.
  ThreadPool pool(1);
  for (gguf::Type type : kAllTypes) {
    const int64_t cols = BlockElems(type) == kQK_K ? 3 * kQK_K
                         : BlockElems(type) == 1   ? 41
                                                   : 7 * kQK8_0;
    for (int T = 1; T <= cpu::kMaxDotTokens; ++T) CheckMatMul(type, 5, cols, T, pool);
  }
}

TEST_CASE("cpu::MatMul gives a token alone the bits it gets in a batch", "[cpu]") {
  // Decode (T = 1) and prefill (tiles of up to kMaxDotTokens tokens, odd row counts) of the same
  // token must agree bit for bit: the model's prefill == decode invariant rests on it. Float
  // weights: a tail (1037) and none (1040, where one token's panel is its row), both over two
  // passes.
  ThreadPool pool(2);
  for (gguf::Type type : kAllTypes) {
    const std::vector<int64_t> col_counts = BlockElems(type) == 1 ? std::vector<int64_t>{1037, 1040}
                                            : BlockElems(type) == kQK_K
                                                ? std::vector<int64_t>{4 * kQK_K}
                                                : std::vector<int64_t>{13 * kQK8_0};
    for (const int64_t cols : col_counts) {
      for (int64_t rows : {1, 3, 17}) {
        CAPTURE(static_cast<int>(type), rows, cols);
        const int64_t T = 11;
        const auto w = RandomRows(type, rows, cols, static_cast<uint32_t>(rows + 5));
        const auto x = RandomActivations(T * cols, 3);
        const WeightMatrix wm = MakeWeightMatrix(type, cols, rows, w.data());
        std::vector<float> batch(static_cast<size_t>(T * rows)), one(static_cast<size_t>(rows));
        cpu::MatMul(wm, x.data(), batch.data(), T, pool);
        for (int64_t t = 0; t < T; ++t) {
          cpu::MatMul(wm, x.data() + t * cols, one.data(), 1, pool);
          REQUIRE(std::memcmp(one.data(), batch.data() + t * rows, one.size() * sizeof(float)) ==
                  0);
        }
      }
    }
  }
}

TEST_CASE("cpu::MatMul is independent of the thread count", "[cpu]") {
  const int64_t rows = 63, cols = 768, T = 9;
  const auto w = RandomRows(gguf::Type::Q4_K, rows, cols, 9);
  const auto x = RandomActivations(T * cols, 9);
  const WeightMatrix wm = MakeWeightMatrix(gguf::Type::Q4_K, cols, rows, w.data());
  std::vector<float> y1(T * rows), y4(T * rows);
  ThreadPool p1(1), p4(4);
  cpu::MatMul(wm, x.data(), y1.data(), T, p1);
  cpu::MatMul(wm, x.data(), y4.data(), T, p4);
  CHECK(std::memcmp(y1.data(), y4.data(), y1.size() * sizeof(float)) == 0);
}

TEST_CASE("cpu::QuantizeRowQ8K is bit-identical to the reference", "[cpu]") {
  const int64_t n = 2048;
  for (uint32_t seed = 0; seed < 40; ++seed) {
    auto x = RandomActivations(n, seed);
    if (seed % 4 == 1) std::fill(x.begin() + 256, x.begin() + 512, 0.f);  // zero block
    if (seed % 4 == 2) x[300] = 50.f, x[290] = -50.f;  // magnitude tie: first wins
    if (seed % 4 == 3) {
      for (int64_t i = 0; i < 256; ++i)
        x[i] = 0.5f * static_cast<float>(i % 9) - 2.f;  // exact halves
      x[7] = -127.f;
    }
    if (seed == 5)
      for (auto& v : x) v *= 1e-30f;  // tiny values
    std::vector<uint8_t> a(RowBytes(gguf::Type::Q8_K, n)), b(RowBytes(gguf::Type::Q8_K, n));
    QuantizeRowQ8K(x.data(), a.data(), n);
    cpu::QuantizeRowQ8K(x.data(), b.data(), n);
    CAPTURE(seed);
    REQUIRE(std::memcmp(a.data(), b.data(), a.size()) == 0);
  }
}

TEST_CASE("cpu::MatMulMulti equals separate MatMul calls", "[cpu]") {
  ThreadPool pool(3);
  const int64_t cols = 512;
  const gguf::Type types[] = {gguf::Type::Q6_K, gguf::Type::Q4_K, gguf::Type::Q4_K,
                              gguf::Type::Q8_0, gguf::Type::F16,  gguf::Type::F32,
                              gguf::Type::Q5_K, gguf::Type::BF16};
  const int64_t rows[] = {70, 16, 1, 33, 5, 17, 40, 3};
  std::vector<std::vector<uint8_t>> data;
  std::vector<WeightMatrix> ws;
  for (int i = 0; i < 8; ++i) {
    data.push_back(RandomRows(types[i], rows[i], cols, 900 + i));
    ws.push_back(MakeWeightMatrix(types[i], cols, rows[i], data.back().data()));
  }
  for (int64_t T : {1, 9, 63}) {
    for (int n : {1, 3, 8}) {
      CAPTURE(T, n);
      const auto x = RandomActivations(T * cols, static_cast<uint32_t>(T));
      std::vector<std::vector<float>> multi(n), single(n);
      std::vector<float*> ys(n);
      for (int i = 0; i < n; ++i) {
        multi[i].assign(T * rows[i], NAN);
        single[i].assign(T * rows[i], NAN);
        ys[i] = multi[i].data();
        cpu::MatMul(ws[i], x.data(), single[i].data(), T, pool);
      }
      cpu::MatMulMulti(ws.data(), n, x.data(), ys.data(), T, pool);
      for (int i = 0; i < n; ++i)
        REQUIRE(std::memcmp(multi[i].data(), single[i].data(), multi[i].size() * 4) == 0);
    }
  }
}

TEST_CASE("CheckWeightMatrix rejects bad shapes and types", "[ref]") {
  uint8_t buf[1024] = {};
  CHECK(CheckWeightMatrix(MakeWeightMatrix(gguf::Type::Q4_K, 256, 2, buf)).ok());
  CHECK(CheckWeightMatrix(MakeWeightMatrix(gguf::Type::Q4_K, 100, 2, buf)).code() ==
        StatusCode::kInvalidArgument);
  CHECK(CheckWeightMatrix(MakeWeightMatrix(gguf::Type::Q4_0, 256, 2, buf)).ok());
  CHECK(CheckWeightMatrix(MakeWeightMatrix(gguf::Type::Q4_0, 48, 2, buf)).code() ==
        StatusCode::kInvalidArgument);
  CHECK(CheckWeightMatrix(MakeWeightMatrix(gguf::Type::IQ4_XS, 128, 2, buf)).code() ==
        StatusCode::kInvalidArgument);
  CHECK(CheckWeightMatrix(MakeWeightMatrix(gguf::Type::TQ1_0, 256, 2, buf)).code() ==
        StatusCode::kUnsupported);
  CHECK(CheckWeightMatrix(MakeWeightMatrix(gguf::Type::Q8_K, 256, 2, buf)).code() ==
        StatusCode::kUnsupported);
  CHECK(CheckWeightMatrix(MakeWeightMatrix(gguf::Type::F32, 256, 2, nullptr)).code() ==
        StatusCode::kInvalidArgument);
  WeightMatrix short_rows = MakeWeightMatrix(gguf::Type::Q6_K, 256, 2, buf);
  short_rows.row_bytes = 100;
  CHECK(CheckWeightMatrix(short_rows).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("MatMul on real quantized weights of the tiny fixture", "[ref][cpu][golden]") {
  gguf::Error err;
  auto file = gguf::File::Open(std::string(QWENRT_TEST_DATA) + "/tiny-s1-q4km.gguf", &err);
  REQUIRE(file.has_value());
  ThreadPool pool(2);
  for (const char* name : {"blk.0.ffn_down.weight", "blk.1.ffn_gate.weight", "blk.3.attn_v.weight",
                           "blk.2.ssm_beta.weight", "token_embd.weight"}) {
    CAPTURE(name);
    const gguf::TensorInfo* t = file->FindTensor(name);
    REQUIRE(t != nullptr);
    const WeightMatrix wm{t->type, t->ne[0], t->ne[1], t->data, t->row_bytes()};
    REQUIRE(CheckWeightMatrix(wm).ok());
    const int64_t T = 5, cols = wm.cols, rows = wm.rows;
    const auto x = RandomActivations(T * cols, 77);
    std::vector<float> y_ref(T * rows), y_cpu(T * rows), wf(cols * rows);
    ref::MatMul(wm, x.data(), y_ref.data(), T);
    cpu::MatMul(wm, x.data(), y_cpu.data(), T, pool);
    REQUIRE(ref::DequantizeRow(wm.type, wm.data, wf.data(), cols * rows));
    std::vector<BlockQ8K> q(cols / kQK_K);
    std::vector<float> xq(cols);
    for (int64_t tt = 0; tt < T; ++tt) {
      const float* xt = x.data() + tt * cols;
      QuantizeRowQ8K(xt, q.data(), cols);
      REQUIRE(ref::DequantizeRow(gguf::Type::Q8_K, q.data(), xq.data(), cols));
      for (int64_t r = 0; r < rows; ++r) {
        double want = 0, mag = 0, qerr = 0;
        for (int64_t c = 0; c < cols; ++c) {
          const double wv = wf[r * cols + c];
          want += wv * xt[c];
          mag += std::fabs(wv * xt[c]);
          qerr += std::fabs(wv) * std::fabs(double(xt[c]) - xq[c]);
        }
        // ref: f32 accumulation of `cols` products: |error| <= cols * eps * sum|w x| (loose form).
        REQUIRE(std::fabs(y_ref[tt * rows + r] - want) <= 1e-7 * cols * mag + 1e-30);
        REQUIRE(std::fabs(double(y_cpu[tt * rows + r]) - y_ref[tt * rows + r]) <=
                qerr + 2e-5 * mag + 1e-30);
      }
    }
  }
}

}  // namespace
}  // namespace qwenrt
