// The op x backend table (in the spirit of ggml's test-backend-ops): every op forward.cpp calls,
// through the Backend interface, on every host backend, on odd shapes (T = 1, 7, 63; dims not
// multiples of 32 where the format allows) with seeded random inputs:
//   - cpu against ref, with a per-op tolerance (0 = bit-equal);
//   - each fused op against its reference composition on the same backend (bit-equal);
//   - one token per call against the whole batch (bit-equal: prefill == token-by-token decode);
//   - the table names every `be.X(` that forward.cpp calls.
// Failures report the max abs and max relative (to max |ref|) difference. CUDA: the CUDA pass has
// no host Backend (it is device-resident, forward_cuda.cpp); its kernels are checked against the
// same ref:: ops by kernels_cuda_test (and forward_cuda_test end to end) on a machine with a GPU.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "model/backend.h"
#include "ops/quant.h"
#include "testing/quantize.h"

namespace qwenrt {
namespace {

using Arrays = std::vector<std::vector<float>>;  // an op's outputs (and updated state), in order

std::vector<float> Rand(size_t n, uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<int32_t> RandInts(size_t n, uint32_t seed, int32_t below) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(0, below - 1);
  std::vector<int32_t> v(n);
  for (int32_t& x : v) x = d(rng);
  return v;
}

std::vector<float> AsFloats(const std::vector<int32_t>& v) {
  return std::vector<float>(v.begin(), v.end());
}

// Checks every array of `got` against `want`: bit-equal when tol == 0, else
// max|got - want| / max|want| <= tol (and everything finite).
void CheckSame(const std::string& what, const Arrays& got, const Arrays& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t a = 0; a < got.size(); ++a) {
    REQUIRE(got[a].size() == want[a].size());
    double max_abs = 0, max_ref = 0;
    size_t at = 0;
    bool finite = true, bits = true;
    for (size_t i = 0; i < got[a].size(); ++i) {
      const float g = got[a][i], w = want[a][i];
      finite = finite && std::isfinite(g) == std::isfinite(w);
      bits = bits && std::memcmp(&g, &w, sizeof(float)) == 0;
      const double d = std::fabs(double(g) - double(w));
      if (d > max_abs) max_abs = d, at = i;
      max_ref = std::max(max_ref, std::fabs(double(w)));
    }
    const double rel = max_ref > 0 ? max_abs / max_ref : max_abs;
    INFO(what << ", output " << a << " [" << got[a].size() << "]: max abs diff " << max_abs
              << " at " << at << ", max rel diff " << rel << ", tol " << tol);
    CHECK(finite);
    if (tol == 0) {
      CHECK(bits);
    } else {
      CHECK(rel <= tol);
    }
  }
}

// fn(t0, n) over the T tokens: all in one call, or one token per call.
template <class Fn>
void Tokens(int64_t T, bool one_by_one, const Fn& fn) {
  if (!one_by_one) return fn(int64_t{0}, T);
  for (int64_t t = 0; t < T; ++t) fn(t, int64_t{1});
}

// A weight matrix with its bytes: rows x cols random values quantized to `type`.
struct Matrix {
  std::vector<uint8_t> bytes;
  WeightMatrix w;
};

Matrix MakeMatrix(gguf::Type type, int64_t rows, int64_t cols, uint32_t seed) {
  Matrix m;
  const int64_t rb = RowBytes(type, cols);
  REQUIRE(rb > 0);
  m.bytes.resize(static_cast<size_t>(rb * rows));
  const std::vector<float> x = Rand(static_cast<size_t>(rows * cols), seed, -1.0f, 1.0f);
  for (int64_t r = 0; r < rows; ++r)
    REQUIRE(QuantizeRow(type, x.data() + r * cols, m.bytes.data() + r * rb, cols));
  m.w = MakeWeightMatrix(type, cols, rows, m.bytes.data());
  REQUIRE(CheckWeightMatrix(m.w).ok());
  return m;
}

// One row of the table.
struct Op {
  std::string name;      // the Backend method, then "/variant"
  double tol;            // cpu vs ref: max|Δ| / max|ref|; 0 = bit-equal
  bool split_invariant;  // one token per call gives the same bits as one call
  std::function<Arrays(Backend& be, int64_t T, bool one_by_one)> run;
};

// Shapes: odd sizes; rows of n = 333 make the T = 63 calls large enough to be threaded.
constexpr int64_t kN = 333, kRowsPerToken = 3;
constexpr int64_t kHk = 3, kHv = 5, kDk = 45, kDv = 37;  // GDN: C = 2*135 + 185 = 455 channels
constexpr int64_t kH = 6, kHkv = 2, kDh = 38, kNPast = 37;
constexpr int64_t kX = 11, kK = 3, kE = 333;  // MoE
constexpr float kEps = 1e-6f;

const std::vector<Op>& Ops() {
  static const std::vector<Op> ops = [] {
    std::vector<Op> v;

    // --- Embed ---
    for (gguf::Type type : {gguf::Type::F32, gguf::Type::F16, gguf::Type::BF16, gguf::Type::Q8_0,
                            gguf::Type::Q4_K, gguf::Type::Q6_K}) {
      const int64_t cols = BlockElems(type) == 1 ? 45 : (BlockElems(type) == 32 ? 96 : 256);
      auto table =
          std::make_shared<Matrix>(MakeMatrix(type, 50, cols, 1 + static_cast<uint32_t>(type)));
      v.push_back({std::string("Embed/") + gguf::TypeName(type), 0, true,
                   [table](Backend& be, int64_t T, bool split) {
                     const auto tokens = RandInts(T, 2, 50);
                     std::vector<float> x(T * table->w.cols);
                     Tokens(T, split, [&](int64_t t0, int64_t n) {
                       be.Embed(table->w, tokens.data() + t0, n, x.data() + t0 * table->w.cols);
                     });
                     return Arrays{x};
                   }});
    }

    // --- norms ---
    v.push_back({"RmsNorm", 0, true, [](Backend& be, int64_t T, bool split) {
                   auto x = Rand(T * kRowsPerToken * kN, 3);
                   const auto w = Rand(kN, 4);
                   std::vector<float> y(x.size());
                   Tokens(T, split, [&](int64_t t0, int64_t n) {
                     const int64_t o = t0 * kRowsPerToken * kN;
                     be.RmsNorm(x.data() + o, w.data(), y.data() + o, n * kRowsPerToken, kN, kEps);
                   });
                   // In place, as the q/k norms run.
                   be.RmsNorm(x.data(), w.data(), x.data(), T * kRowsPerToken, kN, kEps);
                   return Arrays{y, x};
                 }});
    v.push_back({"RmsNormRows", 0, true, [](Backend& be, int64_t T, bool split) {
                   const auto qg =
                       Rand(T * kRowsPerToken * 2 * kN, 5);  // [rows, 2, n]: read the first half
                   const auto w = Rand(kN, 6);
                   std::vector<float> y(T * kRowsPerToken * kN);
                   Tokens(T, split, [&](int64_t t0, int64_t n) {
                     be.RmsNormRows(qg.data() + t0 * kRowsPerToken * 2 * kN, 2 * kN, w.data(),
                                    y.data() + t0 * kRowsPerToken * kN, n * kRowsPerToken, kN,
                                    kEps);
                   });
                   return Arrays{y};
                 }});
    v.push_back({"AddRmsNorm", 0, true, [](Backend& be, int64_t T, bool split) {
                   auto x = Rand(T * kN, 7);
                   const auto mix = Rand(T * kN, 8), w = Rand(kN, 9);
                   std::vector<float> y(x.size());
                   Tokens(T, split, [&](int64_t t0, int64_t n) {
                     be.AddRmsNorm(x.data() + t0 * kN, mix.data() + t0 * kN, w.data(),
                                   y.data() + t0 * kN, n, kN, kEps);
                   });
                   return Arrays{x, y};
                 }});
    v.push_back({"GatedRmsNorm", 0, true, [](Backend& be, int64_t T, bool split) {
                   auto o = Rand(T * kHv * kDv, 10);  // normed in place, as the GDN output is
                   const auto z = Rand(T * kHv * kDv, 11), w = Rand(kDv, 12);
                   Tokens(T, split, [&](int64_t t0, int64_t n) {
                     float* p = o.data() + t0 * kHv * kDv;
                     be.GatedRmsNorm(p, w.data(), z.data() + t0 * kHv * kDv, p, n * kHv, kDv, kEps);
                   });
                   return Arrays{o};
                 }});

    // --- projections ---
    struct MatCase {
      gguf::Type type;
      int64_t cols;
      double tol;  // K-quants and Q8_0 meet Q8_K / Q8_0 activations on the CPU (llama.cpp's choice)
    };
    for (const MatCase& mc :
         {MatCase{gguf::Type::F32, 45, 1e-5}, MatCase{gguf::Type::F16, 45, 1e-5},
          MatCase{gguf::Type::BF16, 45, 1e-5}, MatCase{gguf::Type::Q8_0, 96, 2e-2},
          MatCase{gguf::Type::Q4_K, 256, 2e-2}, MatCase{gguf::Type::Q6_K, 512, 2e-2}}) {
      auto m = std::make_shared<Matrix>(
          MakeMatrix(mc.type, 37, mc.cols, 20 + static_cast<uint32_t>(mc.type)));
      v.push_back({std::string("MatMul/") + gguf::TypeName(mc.type), mc.tol, true,
                   [m](Backend& be, int64_t T, bool split) {
                     const int64_t cols = m->w.cols, rows = m->w.rows;
                     const auto x = Rand(T * cols, 21);
                     std::vector<float> y(T * rows);
                     Tokens(T, split, [&](int64_t t0, int64_t n) {
                       be.MatMul(m->w, x.data() + t0 * cols, y.data() + t0 * rows, n);
                     });
                     return Arrays{y};
                   }});
    }
    {
      // The GDN layer's four projections: mixed types and row counts, one shared input.
      auto ms = std::make_shared<std::vector<Matrix>>();
      ms->push_back(MakeMatrix(gguf::Type::Q4_K, 67, 256, 30));
      ms->push_back(MakeMatrix(gguf::Type::Q6_K, 19, 256, 31));
      ms->push_back(MakeMatrix(gguf::Type::F32, 5, 256, 32));
      ms->push_back(MakeMatrix(gguf::Type::Q8_0, 11, 256, 33));
      v.push_back({"MatMulMulti", 2e-2, true, [ms](Backend& be, int64_t T, bool split) {
                     const auto x = Rand(T * 256, 34);
                     Arrays ys;
                     std::vector<WeightMatrix> ws;
                     for (const Matrix& m : *ms) {
                       ws.push_back(m.w);
                       ys.emplace_back(T * m.w.rows);
                     }
                     Tokens(T, split, [&](int64_t t0, int64_t n) {
                       float* out[4];
                       for (size_t i = 0; i < 4; ++i) out[i] = ys[i].data() + t0 * ws[i].rows;
                       be.MatMulMulti(ws.data(), 4, x.data() + t0 * 256, out, n);
                     });
                     return ys;
                   }});
    }

    // --- gated delta net ---
    constexpr int64_t Cq = kHk * kDk, Cv = kHv * kDv, C = 2 * Cq + Cv;
    v.push_back({"CausalConvSilu", 1e-5, true, [](Backend& be, int64_t T, bool split) {
                   const int64_t Kc = 4;
                   const auto x = Rand(T * C, 40), w = Rand(C * Kc, 41, -0.5f, 0.5f);
                   auto state = Rand(C * (Kc - 1), 42);
                   std::vector<float> y(T * C);
                   Tokens(T, split, [&](int64_t t0, int64_t n) {
                     be.CausalConvSilu(CausalConvShape{n, C, Kc}, x.data() + t0 * C, w.data(),
                                       state.data(), y.data() + t0 * C);
                   });
                   return Arrays{y, state};
                 }});
    v.push_back(
        {"GdnSplit", 0, true, [](Backend& be, int64_t T, bool split) {
           const auto conv = Rand(T * C, 43), ssm_a = Rand(kHv, 44, -2.0f, -0.1f),
                      dt = Rand(kHv, 45);
           auto alpha = Rand(T * kHv, 46, -4.0f, 30.0f);  // both sides of softplus's x > 20 branch
           auto beta = Rand(T * kHv, 47, -6.0f, 6.0f);
           std::vector<float> q(T * Cq), k(T * Cq), vv(T * Cv);
           const float q_scale = 1.0f / std::sqrt(static_cast<float>(kDk));
           Tokens(T, split, [&](int64_t t0, int64_t n) {
             be.GdnSplit(GatedDeltaShape{n, kHk, kHv, kDk, kDv}, conv.data() + t0 * C, kEps,
                         q_scale, q.data() + t0 * Cq, k.data() + t0 * Cq, vv.data() + t0 * Cv,
                         alpha.data() + t0 * kHv, beta.data() + t0 * kHv, ssm_a.data(), dt.data());
           });
           return Arrays{q, k, vv, alpha, beta};
         }});
    // T = 63 takes the chunked form on the default CPU backend (>= 16 tokens), the recurrent one
    // on the split-invariant backend and for T = 1, 7.
    v.push_back({"GatedDelta", 2e-5, true, [](Backend& be, int64_t T, bool split) {
                   auto q = Rand(T * Cq, 50), k = Rand(T * Cq, 51);
                   ref::L2Norm(q.data(), T * kHk, kDk, kEps);
                   ref::L2Norm(k.data(), T * kHk, kDk, kEps);
                   for (float& x : q) x *= 1.0f / std::sqrt(static_cast<float>(kDk));
                   const auto vv = Rand(T * Cv, 52), g = Rand(T * kHv, 53, -2.0f, -0.01f),
                              beta = Rand(T * kHv, 54, 0.05f, 0.95f);
                   auto state = Rand(kHv * kDv * kDk, 55, -0.5f, 0.5f);
                   std::vector<float> out(T * Cv);
                   Tokens(T, split, [&](int64_t t0, int64_t n) {
                     be.GatedDelta(GatedDeltaShape{n, kHk, kHv, kDk, kDv}, q.data() + t0 * Cq,
                                   k.data() + t0 * Cq, vv.data() + t0 * Cv, g.data() + t0 * kHv,
                                   beta.data() + t0 * kHv, state.data(), out.data() + t0 * Cv);
                   });
                   return Arrays{out, state};
                 }});

    // --- full attention ---
    v.push_back({"Rope", 0, true, [](Backend& be, int64_t T, bool split) {
                   static const std::vector<bool> uses = {true, true, true, true,  true,
                                                          true, true, true, false, false,
                                                          true, false};  // R/2 = 12 pairs
                   const RopeParams p{24, 10000.0f, 0.75f, &uses, {}};
                   auto x = Rand(T * kH * kDh, 60);
                   Tokens(T, split, [&](int64_t t0, int64_t n) {
                     be.Rope(x.data() + t0 * kH * kDh, n, kH, kDh, 11 + t0, p);
                   });
                   return Arrays{x};
                 }});
    // YaRN: the ramp crosses the pairs (low 2, high 9 of 12), mscale on every pair, a pair at
    // position 0 included: cpu == ref bit for bit.
    v.push_back({"RopeYarn", 0, true, [](Backend& be, int64_t T, bool split) {
                   static const std::vector<bool> uses = {true, true, true,  true, true, true,
                                                          true, true, false, true, true, true};
                   RopeParams p{24, 10000.0f, 0.25f, &uses, {}};
                   p.yarn = YarnFor(24, 10000.0f, 4.0f, 64, 32.0f, 1.0f, 0.0f, 1.0f);
                   REQUIRE(p.yarn.corr_low < p.yarn.corr_high);
                   auto x = Rand(T * kH * kDh, 63);
                   Tokens(T, split, [&](int64_t t0, int64_t n) {
                     be.Rope(x.data() + t0 * kH * kDh, n, kH, kDh, 1000 + t0, p);
                   });
                   return Arrays{x};
                 }});
    // ref keeps f32, cpu rounds to f16: within half an f16 ulp (2^-11 relative).
    v.push_back({"RoundAttentionInputs", 4.9e-4, true, [](Backend& be, int64_t T, bool split) {
                   auto q = Rand(T * kH * kDh, 61), k = Rand(T * kHkv * kDh, 62),
                        vv = Rand(T * kHkv * kDh, 63);
                   Tokens(T, split, [&](int64_t t0, int64_t n) {
                     be.RoundAttentionInputs(q.data() + t0 * kH * kDh, n * kH * kDh,
                                             k.data() + t0 * kHkv * kDh,
                                             vv.data() + t0 * kHkv * kDh, n * kHkv * kDh);
                   });
                   return Arrays{q, k, vv};
                 }});
    v.push_back({"Attention", 1e-5, true, [](Backend& be, int64_t T, bool split) {
                   const int64_t n_kv = kNPast + T;
                   const auto q = Rand(T * kH * kDh, 64), k = Rand(n_kv * kHkv * kDh, 65),
                              vv = Rand(n_kv * kHkv * kDh, 66);
                   std::vector<float> out(T * kH * kDh);
                   REQUIRE(be.Reserve(n_kv, kH / kHkv, kDh).ok());
                   const uint8_t* kb = reinterpret_cast<const uint8_t*>(k.data());
                   const uint8_t* vb = reinterpret_cast<const uint8_t*>(vv.data());
                   Tokens(T, split, [&](int64_t t0, int64_t n) {
                     be.Attention(AttentionShape{n, kNPast + t0, kH, kHkv, kDh},
                                  q.data() + t0 * kH * kDh, ContiguousF32Rows(&kb, kHkv * kDh),
                                  ContiguousF32Rows(&vb, kHkv * kDh), out.data() + t0 * kH * kDh);
                   });
                   return Arrays{out};
                 }});
    v.push_back({"MulSigmoid", 0, true, [](Backend& be, int64_t T, bool split) {
                   auto att = Rand(T * kH * kDh, 67);
                   const auto qg =
                       Rand(T * kH * 2 * kDh, 68, -8.0f, 8.0f);  // gate = second half of each head
                   Tokens(T, split, [&](int64_t t0, int64_t n) {
                     be.MulSigmoid(att.data() + t0 * kH * kDh, qg.data() + t0 * kH * 2 * kDh + kDh,
                                   n * kH, kDh, 2 * kDh);
                   });
                   return Arrays{att};
                 }});

    // --- FFN, residual ---
    v.push_back({"SwiGlu", 0, true, [](Backend& be, int64_t T, bool split) {
                   const auto gate = Rand(T * kN, 70, -8.0f, 8.0f);
                   auto up = Rand(T * kN, 71);
                   Tokens(T, split, [&](int64_t t0, int64_t n) {
                     be.SwiGlu(gate.data() + t0 * kN, up.data() + t0 * kN, n * kN);
                   });
                   return Arrays{up};
                 }});
    v.push_back({"Add", 0, true, [](Backend& be, int64_t T, bool split) {
                   auto x = Rand(T * kN, 72);
                   const auto y = Rand(T * kN, 73);
                   Tokens(T, split, [&](int64_t t0, int64_t n) {
                     be.Add(x.data() + t0 * kN, y.data() + t0 * kN, n * kN);
                   });
                   return Arrays{x};
                 }});

    // --- mixture of experts ---
    v.push_back({"MoeRoute", 0, true, [](Backend& be, int64_t T, bool split) {
                   auto logits = Rand(T * kX, 80, -3.0f, 3.0f);
                   std::vector<int32_t> ids(T * kK);
                   std::vector<float> w(T * kK);
                   Tokens(T, split, [&](int64_t t0, int64_t n) {
                     be.MoeRoute(logits.data() + t0 * kX, n, kX, kK, ids.data() + t0 * kK,
                                 w.data() + t0 * kK);
                   });
                   return Arrays{logits, AsFloats(ids), w};
                 }});
    // The grouping is over the whole batch by definition: no per-token form.
    v.push_back({"GroupByExpert", 0, false, [](Backend& be, int64_t T, bool) {
                   const auto ids = RandInts(T * kK, 81, kX);
                   std::vector<int32_t> slots(T * kK), begin(kX + 1);
                   be.GroupByExpert(ids.data(), T * kK, kX, slots.data(), begin.data());
                   return Arrays{AsFloats(slots), AsFloats(begin)};
                 }});
    // Gather / scatter over all T*K pairs in grouped order (a permutation of the (token, slot)
    // rows).
    auto grouped = [](int64_t T) {
      const auto ids = RandInts(T * kK, 82, kX);
      std::vector<int32_t> slots(T * kK), begin(kX + 1);
      ref::GroupByExpert(ids.data(), T * kK, kX, slots.data(), begin.data());
      return slots;
    };
    v.push_back({"MoeGather", 0, true, [grouped](Backend& be, int64_t T, bool split) {
                   const auto slots = grouped(T);
                   const auto xn = Rand(T * kE, 83);
                   std::vector<float> xe(T * kK * kE);
                   Tokens(T, split, [&](int64_t t0, int64_t n) {  // K pairs per call when split
                     be.MoeGather(xn.data(), slots.data() + t0 * kK, n * kK, kK, kE,
                                  xe.data() + t0 * kK * kE);
                   });
                   return Arrays{xe};
                 }});
    v.push_back({"MoeScatter", 0, true, [grouped](Backend& be, int64_t T, bool split) {
                   const auto slots = grouped(T);
                   const auto ye = Rand(T * kK * kE, 84);
                   std::vector<float> yslot(T * kK * kE, std::nanf(""));
                   Tokens(T, split, [&](int64_t t0, int64_t n) {
                     be.MoeScatter(ye.data() + t0 * kK * kE, slots.data() + t0 * kK, n * kK, kE,
                                   yslot.data());
                   });
                   return Arrays{yslot};
                 }});
    v.push_back({"MoeCombine", 0, true, [](Backend& be, int64_t T, bool split) {
                   const auto yslot = Rand(T * kK * kE, 85), w = Rand(T * kK, 86, 0.0f, 1.0f);
                   std::vector<float> mix(T * kE, std::nanf(""));
                   Tokens(T, split, [&](int64_t t0, int64_t n) {
                     be.MoeCombine(yslot.data() + t0 * kK * kE, w.data() + t0 * kK, n, kK, kE,
                                   mix.data() + t0 * kE);
                   });
                   return Arrays{mix};
                 }});
    v.push_back({"AddSigmoidGated", 0, true, [](Backend& be, int64_t T, bool split) {
                   auto mix = Rand(T * kE, 87);
                   const auto y = Rand(T * kE, 88), gate = Rand(T, 89, -6.0f, 6.0f);
                   Tokens(T, split, [&](int64_t t0, int64_t n) {
                     be.AddSigmoidGated(mix.data() + t0 * kE, y.data() + t0 * kE, gate.data() + t0,
                                        n, kE);
                   });
                   return Arrays{mix};
                 }});
    return v;
  }();
  return ops;
}

// The host backends: ref, cpu (defaults) and cpu with the recurrent delta rule at every T (the
// configuration whose results do not depend on the split).
struct Backends {
  ThreadPool pool{3};
  std::unique_ptr<Backend> ref, cpu, cpu_split_invariant;
  Backends() {
    ref = std::move(MakeBackend(BackendKind::kRef, nullptr, {})).value();
    cpu = std::move(MakeBackend(BackendKind::kCpu, &pool, {})).value();
    BackendOptions o;
    o.gdn_chunk_min_tokens = std::numeric_limits<int64_t>::max();
    cpu_split_invariant = std::move(MakeBackend(BackendKind::kCpu, &pool, o)).value();
  }
};

TEST_CASE("op x backend: cpu matches ref on every op", "[ref][cpu]") {
  Backends b;
  for (const Op& op : Ops()) {
    for (int64_t T : {1, 7, 63}) {
      const Arrays want = op.run(*b.ref, T, false);
      CheckSame(op.name + " cpu vs ref, T=" + std::to_string(T), op.run(*b.cpu, T, false), want,
                op.tol);
    }
  }
}

TEST_CASE("op x backend: one token per call == one call for all tokens", "[ref][cpu]") {
  Backends b;
  for (const Op& op : Ops()) {
    if (!op.split_invariant) continue;
    for (int64_t T : {7, 63}) {
      for (auto [name, be] :
           {std::pair{"ref", b.ref.get()}, std::pair{"cpu", b.cpu_split_invariant.get()}}) {
        CheckSame(op.name + " " + name + " split, T=" + std::to_string(T), op.run(*be, T, true),
                  op.run(*be, T, false), 0);
      }
    }
  }
}

TEST_CASE("op x backend: fused ops equal their reference compositions bit for bit", "[ref][cpu]") {
  Backends b;
  for (auto [name, be_ptr] : {std::pair{"ref", b.ref.get()}, std::pair{"cpu", b.cpu.get()}}) {
    Backend& be = *be_ptr;
    for (int64_t T : {1, 7, 63}) {
      const std::string at = std::string(" on ") + name + ", T=" + std::to_string(T);
      {  // AddRmsNorm == Add, RmsNorm
        const auto x0 = Rand(T * kN, 100), mix = Rand(T * kN, 101), w = Rand(kN, 102);
        auto x1 = x0, x2 = x0;
        std::vector<float> y1(x0.size()), y2(x0.size());
        be.AddRmsNorm(x1.data(), mix.data(), w.data(), y1.data(), T, kN, kEps);
        be.Add(x2.data(), mix.data(), T * kN);
        be.RmsNorm(x2.data(), w.data(), y2.data(), T, kN, kEps);
        CheckSame("AddRmsNorm vs Add + RmsNorm" + at, {x1, y1}, {x2, y2}, 0);
      }
      {  // GatedRmsNorm == RmsNorm, SwiGlu(z, .)
        const auto o = Rand(T * kHv * kDv, 103), z = Rand(T * kHv * kDv, 104, -8.0f, 8.0f),
                   w = Rand(kDv, 105);
        auto y1 = o, y2 = o;
        be.GatedRmsNorm(y1.data(), w.data(), z.data(), y1.data(), T * kHv, kDv, kEps);
        be.RmsNorm(y2.data(), w.data(), y2.data(), T * kHv, kDv, kEps);
        be.SwiGlu(z.data(), y2.data(), T * kHv * kDv);
        CheckSame("GatedRmsNorm vs RmsNorm + SwiGlu" + at, {y1}, {y2}, 0);
      }
      {  // RmsNormRows == copy the rows out, RmsNorm
        const auto qg = Rand(T * kH * 2 * kDh, 106), w = Rand(kDh, 107);
        std::vector<float> y1(T * kH * kDh), y2(T * kH * kDh);
        be.RmsNormRows(qg.data(), 2 * kDh, w.data(), y1.data(), T * kH, kDh, kEps);
        for (int64_t r = 0; r < T * kH; ++r)
          std::copy_n(qg.data() + r * 2 * kDh, kDh, y2.data() + r * kDh);
        be.RmsNorm(y2.data(), w.data(), y2.data(), T * kH, kDh, kEps);
        CheckSame("RmsNormRows vs copy + RmsNorm" + at, {y1}, {y2}, 0);
      }
      {  // GdnSplit == copies, L2Norm(q), L2Norm(k), q *= q_scale, GdnGates
        constexpr int64_t Cq = kHk * kDk, Cv = kHv * kDv, C = 2 * Cq + Cv;
        const auto conv = Rand(T * C, 108), ssm_a = Rand(kHv, 109, -2.0f, -0.1f),
                   dt = Rand(kHv, 110);
        const auto alpha0 = Rand(T * kHv, 111, -4.0f, 30.0f),
                   beta0 = Rand(T * kHv, 112, -6.0f, 6.0f);
        const float q_scale = 1.0f / std::sqrt(static_cast<float>(kDk));
        std::vector<float> q1(T * Cq), k1(T * Cq), v1(T * Cv), q2(T * Cq), k2(T * Cq), v2(T * Cv);
        auto a1 = alpha0, b1 = beta0, a2 = alpha0, b2 = beta0;
        be.GdnSplit(GatedDeltaShape{T, kHk, kHv, kDk, kDv}, conv.data(), kEps, q_scale, q1.data(),
                    k1.data(), v1.data(), a1.data(), b1.data(), ssm_a.data(), dt.data());
        for (int64_t t = 0; t < T; ++t) {
          const float* y = conv.data() + t * C;
          std::copy_n(y, Cq, q2.data() + t * Cq);
          std::copy_n(y + Cq, Cq, k2.data() + t * Cq);
          std::copy_n(y + 2 * Cq, Cv, v2.data() + t * Cv);
        }
        ref::L2Norm(q2.data(), T * kHk, kDk, kEps);
        ref::L2Norm(k2.data(), T * kHk, kDk, kEps);
        for (float& x : q2) x *= q_scale;
        ref::GdnGates(a2.data(), b2.data(), ssm_a.data(), dt.data(), T, kHv);
        CheckSame("GdnSplit vs copies + L2Norm + scale + GdnGates" + at, {q1, k1, v1, a1, b1},
                  {q2, k2, v2, a2, b2}, 0);
      }
      {  // MatMulMulti == one MatMul per matrix
        std::vector<Matrix> ms;
        ms.push_back(MakeMatrix(gguf::Type::Q4_K, 67, 256, 113));
        ms.push_back(MakeMatrix(gguf::Type::Q6_K, 19, 256, 114));
        ms.push_back(MakeMatrix(gguf::Type::F32, 5, 256, 115));
        ms.push_back(MakeMatrix(gguf::Type::Q8_0, 11, 256, 116));
        const auto x = Rand(T * 256, 117);
        std::vector<WeightMatrix> ws;
        Arrays fused, each;
        for (const Matrix& m : ms) {
          ws.push_back(m.w);
          fused.emplace_back(T * m.w.rows);
          each.emplace_back(T * m.w.rows);
        }
        float* out[4];
        for (size_t i = 0; i < 4; ++i) out[i] = fused[i].data();
        be.MatMulMulti(ws.data(), 4, x.data(), out, T);
        for (size_t i = 0; i < 4; ++i) be.MatMul(ws[i], x.data(), each[i].data(), T);
        CheckSame("MatMulMulti vs MatMul each" + at, fused, each, 0);
      }
      {  // MoeGather / MoeScatter / MoeCombine == the per-row loops of their definition
        std::vector<int32_t> slots(T * kK), begin(kX + 1);
        const auto ids = RandInts(T * kK, 118, kX);
        be.GroupByExpert(ids.data(), T * kK, kX, slots.data(), begin.data());
        const auto xn = Rand(T * kE, 119), wts = Rand(T * kK, 120, 0.0f, 1.0f);
        std::vector<float> xe(T * kK * kE), want_xe(T * kK * kE), yslot(T * kK * kE), mix(T * kE),
            want_mix(T * kE, 0.0f);
        be.MoeGather(xn.data(), slots.data(), T * kK, kK, kE, xe.data());
        for (int64_t i = 0; i < T * kK; ++i)
          std::copy_n(xn.data() + slots[i] / kK * kE, kE, want_xe.data() + i * kE);
        be.MoeScatter(xe.data(), slots.data(), T * kK, kE,
                      yslot.data());  // back in (token, slot) order
        std::vector<float> want_yslot(T * kK * kE);
        for (int64_t p = 0; p < T * kK; ++p)
          std::copy_n(xn.data() + p / kK * kE, kE, want_yslot.data() + p * kE);
        be.MoeCombine(yslot.data(), wts.data(), T, kK, kE, mix.data());
        for (int64_t t = 0; t < T; ++t) {
          for (int64_t j = 0; j < kK; ++j) {
            const float wt = wts[t * kK + j];
            const float* y = want_yslot.data() + (t * kK + j) * kE;
            float* m = want_mix.data() + t * kE;
            for (int64_t i = 0; i < kE; ++i) m[i] += wt * y[i];
          }
        }
        CheckSame("MoeGather / MoeScatter / MoeCombine vs their loops" + at, {xe, yslot, mix},
                  {want_xe, want_yslot, want_mix}, 0);
      }
    }
  }
}

// The acceptance check of issue 9: every op forward.cpp calls is a row of the table above.
TEST_CASE("op x backend: the table covers every op forward.cpp calls", "[ref][cpu]") {
  const std::string path = std::string(QWENRT_TEST_DATA) + "/../../src/model/forward.cpp";
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const std::string src = text.str();
  std::set<std::string> table;
  for (const Op& op : Ops()) table.insert(op.name.substr(0, op.name.find('/')));
  for (const char* fused : {"AddRmsNorm", "GatedRmsNorm", "GdnSplit", "MatMulMulti"})
    table.insert(fused);
  const std::regex call(R"(\bbe\.([A-Za-z]+)\()");
  int n_calls = 0;
  for (auto it = std::sregex_iterator(src.begin(), src.end(), call); it != std::sregex_iterator();
       ++it) {
    const std::string name = (*it)[1];
    ++n_calls;
    INFO("forward.cpp calls be." << name);
    CHECK(table.count(name) == 1);
  }
  CHECK(n_calls > 20);
  // And no reference op behind the backend's back.
  CHECK(src.find("ref::") == std::string::npos);
}

}  // namespace
}  // namespace qwenrt
