// Packed (row-interleaved) matrices of every type with a packed layout (ops/packed.h): cpu::MatMul
// on the packed copy against the reference dots on the file's rows (same integer sums: only float
// rounding may differ), the split-invariance contract (a token's outputs do not depend on how many
// tokens share the call, the thread count, or the 16-row group padding), and the packed kernels
// directly for every token count.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/thread_pool.h"
#include "model/model.h"
#include "ops/matmul.h"
#include "ops/packed.h"
#include "ops/quant.h"
#include "ops/vec_dot.h"

namespace qwenrt {
namespace {

// Random well-formed rows: random quant bytes, fp16 scales O(1e-3) (values O(0.1)).
std::vector<uint8_t> RandomRows(gguf::Type type, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> data(static_cast<size_t>(RowBytes(type, cols) * rows));
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> ud(0.5e-3f, 2e-3f);
  const int64_t nb = rows * cols / kQK_K;
  if (type == gguf::Type::Q4_0 || type == gguf::Type::IQ4_NL ||
      type == gguf::Type::Q5_0) {  // d first
    const size_t block = static_cast<size_t>(RowBytes(type, kQK4_0));
    for (size_t i = 0; i < data.size(); i += block) {
      const uint16_t d = Fp32ToFp16(0.1f * ud(rng));
      std::memcpy(data.data() + i, &d, 2);
    }
  } else if (type == gguf::Type::Q4_1 || type == gguf::Type::Q5_1) {  // d, m first
    const size_t block = static_cast<size_t>(RowBytes(type, kQK4_0));
    for (size_t i = 0; i < data.size(); i += block) {
      const uint16_t dm[2] = {Fp32ToFp16(0.1f * ud(rng)), Fp32ToFp16(-ud(rng))};
      std::memcpy(data.data() + i, dm, 4);
    }
  } else if (type == gguf::Type::MXFP4) {  // exponents 2^-9 .. 2^-6, and the two subnormal ones
    auto* b = reinterpret_cast<BlockMXFP4*>(data.data());
    for (int64_t i = 0; i < rows * cols / kQK4_0; ++i)
      b[i].e = static_cast<uint8_t>(i % 97 == 0 ? i % 2 : 118 + rng() % 4);
  } else if (type == gguf::Type::Q8_0) {
    auto* b = reinterpret_cast<BlockQ8_0*>(data.data());
    for (int64_t i = 0; i < rows * cols / kQK8_0; ++i) b[i].d = Fp32ToFp16(0.01f * ud(rng));
  } else if (type == gguf::Type::Q2_K) {
    auto* b = reinterpret_cast<BlockQ2K*>(data.data());
    for (int64_t i = 0; i < nb; ++i)
      b[i].d = Fp32ToFp16(0.1f * ud(rng)), b[i].dmin = Fp32ToFp16(0.1f * ud(rng));
  } else if (type == gguf::Type::Q3_K) {
    auto* b = reinterpret_cast<BlockQ3K*>(data.data());
    for (int64_t i = 0; i < nb; ++i) b[i].d = Fp32ToFp16(0.1f * ud(rng));
  } else if (type == gguf::Type::IQ4_XS) {
    auto* b = reinterpret_cast<BlockIQ4XS*>(data.data());
    for (int64_t i = 0; i < nb; ++i) b[i].d = Fp32ToFp16(0.01f * ud(rng));
  } else if (type == gguf::Type::Q4_K) {
    auto* b = reinterpret_cast<BlockQ4K*>(data.data());
    for (int64_t i = 0; i < nb; ++i) b[i].d = Fp32ToFp16(ud(rng)), b[i].dmin = Fp32ToFp16(ud(rng));
  } else if (type == gguf::Type::Q5_K) {
    auto* b = reinterpret_cast<BlockQ5K*>(data.data());
    for (int64_t i = 0; i < nb; ++i)
      b[i].d = Fp32ToFp16(0.5f * ud(rng)), b[i].dmin = Fp32ToFp16(ud(rng));
  } else {
    auto* b = reinterpret_cast<BlockQ6K*>(data.data());
    for (int64_t i = 0; i < nb; ++i) b[i].d = Fp32ToFp16(0.1f * ud(rng));
  }
  return data;
}

std::vector<float> RandomActivations(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = nd(rng);
  for (int64_t i = 0; i < n; i += 97) x[static_cast<size_t>(i)] *= 8.f;  // outliers
  return x;
}

std::vector<uint8_t> Pack(const WeightMatrix& w) {
  std::vector<uint8_t> p(PackedBytes(w.type, w.cols, w.rows));
  const int64_t groups = (w.rows + kPackRows - 1) / kPackRows;
  // In two calls, as the loader's threads do: each writes only its groups.
  PackGroups(w.type, w.data, w.row_bytes, w.cols, w.rows, 0, groups / 2, p.data());
  PackGroups(w.type, w.data, w.row_bytes, w.cols, w.rows, groups / 2, groups, p.data());
  return p;
}

float RefDot(gguf::Type type, const uint8_t* w, const uint8_t* a, int64_t n) {
  switch (type) {
    case gguf::Type::Q4_K:
      return ref::VecDotQ4K_Q8K(w, a, n);
    case gguf::Type::Q5_K:
      return ref::VecDotQ5K_Q8K(w, a, n);
    case gguf::Type::MXFP4:
      return ref::VecDotMXFP4_Q8_0(w, a, n);
    case gguf::Type::Q6_K:
      return ref::VecDotQ6K_Q8K(w, a, n);
    case gguf::Type::Q4_0:
      return ref::VecDotQ4_0_Q8_0(w, a, n);
    case gguf::Type::Q8_0:
      return ref::VecDotQ8_0_Q8_0(w, a, n);
    case gguf::Type::IQ4_XS:
      return ref::VecDotIQ4XS_Q8K(w, a, n);
    case gguf::Type::Q3_K:
      return ref::VecDotQ3K_Q8K(w, a, n);
    case gguf::Type::Q2_K:
      return ref::VecDotQ2K_Q8K(w, a, n);
    case gguf::Type::Q4_1:
      return ref::VecDotQ4_1_Q8_0(w, a, n);
    case gguf::Type::Q5_0:
      return ref::VecDotQ5_0_Q8_0(w, a, n);
    case gguf::Type::Q5_1:
      return ref::VecDotQ5_1_Q8_0(w, a, n);
    default:
      return ref::VecDotIQ4NL_Q8_0(w, a, n);
  }
}

// The activation format a type's kernels take: Q8_0 rows for the 32-element block types, else Q8_K.
gguf::Type ActType(gguf::Type type) {
  return BlockElems(type) == kQK8_0 ? gguf::Type::Q8_0 : gguf::Type::Q8_K;
}
void QuantizeAct(gguf::Type type, const float* x, uint8_t* dst, int64_t n) {
  if (ActType(type) == gguf::Type::Q8_0) {
    QuantizeRowQ8_0(x, dst, n);
  } else {
    QuantizeRowQ8K(x, dst, n);
  }
}

const gguf::Type kTypes[] = {
    gguf::Type::Q4_K,   gguf::Type::Q6_K,  gguf::Type::Q4_0, gguf::Type::IQ4_NL, gguf::Type::Q8_0,
    gguf::Type::IQ4_XS, gguf::Type::Q3_K,  gguf::Type::Q4_1, gguf::Type::Q5_0,   gguf::Type::Q5_1,
    gguf::Type::Q5_K,   gguf::Type::MXFP4, gguf::Type::Q2_K};

// cpu::MatMul of `w` (whose packed copy is set) against the reference dots of its file rows, and
// every token alone against the whole batch, bit for bit.
void CheckPackedMatrix(const WeightMatrix& w, int64_t T, ThreadPool& pool) {
  const gguf::Type type = w.type;
  const int64_t rows = w.rows, cols = w.cols;
  const auto x = RandomActivations(T * cols, static_cast<uint32_t>(T * 3 + rows));
  // y with a guard after it: a padded group's rows must never be stored.
  std::vector<float> y(static_cast<size_t>(T * rows + 64), -7.f);
  cpu::MatMul(w, x.data(), y.data(), T, pool);
  for (size_t i = static_cast<size_t>(T * rows); i < y.size(); ++i) REQUIRE(y[i] == -7.f);

  std::vector<uint8_t> a(static_cast<size_t>(RowBytes(ActType(type), cols)));
  std::vector<float> wf(static_cast<size_t>(cols)), one(static_cast<size_t>(rows));
  for (int64_t t = 0; t < T; ++t) {
    const float* xt = x.data() + t * cols;
    QuantizeAct(type, xt, a.data(), cols);
    // The same token alone (decode): bit-identical.
    cpu::MatMul(w, xt, one.data(), 1, pool);
    REQUIRE(std::memcmp(one.data(), y.data() + t * rows, one.size() * sizeof(float)) == 0);
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t* wr = w.data + r * w.row_bytes;
      REQUIRE(ref::DequantizeRow(type, wr, wf.data(), cols));
      double mag = 0;
      for (int64_t c = 0; c < cols; ++c) mag += std::fabs(double(wf[c]) * xt[c]);
      const float want = RefDot(type, wr, a.data(), cols);
      REQUIRE(std::fabs(double(y[t * rows + r]) - want) <= 2e-5 * mag + 1e-30);
    }
  }
}

void CheckPacked(gguf::Type type, int64_t rows, int64_t cols, int64_t T, ThreadPool& pool) {
  CAPTURE(gguf::TypeName(type), rows, cols, T, pool.size());
  const auto data = RandomRows(type, rows, cols, static_cast<uint32_t>(rows * 131 + cols + T));
  WeightMatrix w = MakeWeightMatrix(type, cols, rows, data.data());
  REQUIRE(CheckWeightMatrix(w).ok());
  const auto packed = Pack(w);
  w.packed = packed.data();
  CheckPackedMatrix(w, T, pool);
}

TEST_CASE("packed cpu::MatMul matches the reference dots on odd shapes", "[cpu][packed]") {
  WARN("packed kernels: " << cpu::PackedKernelIsa());
  ThreadPool pool(3);
  for (gguf::Type type : kTypes) {
    for (int64_t rows : {1, 7, 16, 17, 63, 200}) {
      for (int64_t T : {1, 5, 8, 9, 23}) CheckPacked(type, rows, 512, T, pool);
    }
    CheckPacked(type, 33, 256, 3, pool);
    CheckPacked(type, 31, 1280, 11, pool);  // 5 super-blocks per row
  }
}

TEST_CASE("packed kernels give every token the same bits for every token count", "[cpu][packed]") {
  const int64_t cols = 768, rows = 13;  // one padded group
  for (gguf::Type type : kTypes) {
    CAPTURE(gguf::TypeName(type));
    const auto data = RandomRows(type, rows, cols, 5);
    const WeightMatrix w = MakeWeightMatrix(type, cols, rows, data.data());
    const auto packed = Pack(w);
    const cpu::PackedKernel k = cpu::PackedKernelOf(type);  // the level in use
    REQUIRE(k != nullptr);
    const size_t stride = static_cast<size_t>(RowBytes(ActType(type), cols));
    std::vector<uint8_t> a(stride * cpu::kMaxDotTokens);
    const auto x = RandomActivations(cols * cpu::kMaxDotTokens, 11);
    for (int t = 0; t < cpu::kMaxDotTokens; ++t)
      QuantizeAct(type, x.data() + t * cols, a.data() + t * stride, cols);
    std::vector<float> alone(static_cast<size_t>(cpu::kMaxDotTokens * kPackRows), NAN);
    for (int t = 0; t < cpu::kMaxDotTokens; ++t) {
      k(packed.data(), a.data() + t * stride, stride, 1, cols, alone.data() + t * kPackRows,
        kPackRows, rows, true);
    }
    for (int ntok = 1; ntok <= cpu::kMaxDotTokens; ++ntok) {
      for (int t0 = 0; t0 + ntok <= cpu::kMaxDotTokens; ++t0) {
        CAPTURE(ntok, t0);
        std::vector<float> tile(static_cast<size_t>(ntok * kPackRows), NAN);
        for (const bool stream : {false, true}) {  // prefetching or not: the same bits
          std::fill(tile.begin(), tile.end(), NAN);
          k(packed.data(), a.data() + t0 * stride, stride, ntok, cols, tile.data(), kPackRows, rows,
            stream);
          for (int t = 0; t < ntok; ++t) {
            REQUIRE(std::memcmp(tile.data() + t * kPackRows, alone.data() + (t0 + t) * kPackRows,
                                rows * sizeof(float)) == 0);
            for (int r = rows; r < kPackRows; ++r)
              REQUIRE(std::isnan(tile[t * kPackRows + r]));  // not stored
          }
        }
      }
    }
  }
}

TEST_CASE("packed cpu::MatMul is independent of the thread count", "[cpu][packed]") {
  const int64_t rows = 100, cols = 1024, T = 19;
  for (gguf::Type type : kTypes) {
    const auto data = RandomRows(type, rows, cols, 9);
    WeightMatrix w = MakeWeightMatrix(type, cols, rows, data.data());
    const auto packed = Pack(w);
    w.packed = packed.data();
    const auto x = RandomActivations(T * cols, 9);
    std::vector<float> y1(T * rows), y4(T * rows);
    ThreadPool p1(1), p4(4);
    cpu::MatMul(w, x.data(), y1.data(), T, p1);
    cpu::MatMul(w, x.data(), y4.data(), T, p4);
    CHECK(std::memcmp(y1.data(), y4.data(), y1.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("a loaded model's packed matrices compute what their file rows do",
          "[cpu][packed][golden]") {
  if (!cpu::PackedKernelsFast()) {
    WARN("the loader packs only where the packed kernels are SIMD: nothing to check on this build");
    return;
  }
  ThreadPool pool(2);
  for (const char* name : {"tiny-s1-q4km", "tinymoe-s1-q4km"}) {
    ModelLoadOptions options;
    options.pack_weights = true;
    auto model = Model::Load(std::string(QWENRT_TEST_DATA) + "/" + name + ".gguf", options);
    REQUIRE(model.ok());
    CHECK((*model)->packed_bytes() > 0);
    const Weights& w = (*model)->weights();
    std::vector<const WeightMatrix*> mats = {&w.output};
    for (const LayerWeights& l : w.layers) {
      for (const WeightMatrix* m :
           {&l.gdn.qkv, &l.gdn.gate, &l.gdn.alpha, &l.gdn.beta, &l.gdn.out, &l.attn.q, &l.attn.k,
            &l.attn.v, &l.attn.o, &l.ffn.gate, &l.ffn.up, &l.ffn.down, &l.moe.shexp_gate,
            &l.moe.shexp_up, &l.moe.shexp_down}) {
        mats.push_back(m);
      }
    }
    int packed = 0;
    for (const WeightMatrix* m : mats) {
      if (m->packed == nullptr) continue;
      CAPTURE(name, m->rows, m->cols);
      ++packed;
      CheckPackedMatrix(*m, 9, pool);
    }
    CHECK(packed > 0);
  }
}

TEST_CASE("PackedBytes sizes and rejections", "[packed]") {
  CHECK(PackedBytes(gguf::Type::Q4_K, 512, 17) == 2 * 2 * sizeof(PackedQ4K));
  CHECK(PackedBytes(gguf::Type::Q6_K, 256, 16) == sizeof(PackedQ6K));
  CHECK(PackedBytes(gguf::Type::Q8_0, 256, 16) == sizeof(PackedQ8_0));
  CHECK(PackedBytes(gguf::Type::Q5_0, 256, 16) == sizeof(PackedQ5_0));
  CHECK(PackedBytes(gguf::Type::Q5_K, 512, 16) == 2 * sizeof(PackedQ5K));
  CHECK(PackedBytes(gguf::Type::MXFP4, 256, 16) == sizeof(PackedMXFP4));
  CHECK(PackedBytes(gguf::Type::Q2_K, 256, 17) == 2 * sizeof(PackedQ2K));
  CHECK(PackedBytes(gguf::Type::IQ4_XS, 768, 16) == 3 * sizeof(PackedIQ4XS));
  CHECK(PackedBytes(gguf::Type::Q3_K, 256, 20) == 2 * sizeof(PackedQ3K));
  CHECK(PackedBytes(gguf::Type::Q4_0, 512, 17) == 2 * 2 * sizeof(PackedQ4_0));
  CHECK(PackedBytes(gguf::Type::IQ4_NL, 256, 1) == sizeof(PackedQ4_0));
  CHECK(PackedBytes(gguf::Type::Q4_0, 288, 16) == 0);  // 9 blocks of 32: the file layout stays
  CHECK(PackedBytes(gguf::Type::Q4_K, 100, 16) == 0);
  CHECK(!HasPackedLayout(gguf::Type::F16));
  CHECK(!HasPackedLayout(gguf::Type::IQ3_S));
}

}  // namespace
}  // namespace qwenrt
