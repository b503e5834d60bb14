// Scalar dot products of the 32-element block types (Q4_0 Q4_1 Q5_0 Q5_1 IQ4_NL MXFP4) against Q8_0
// activations (vec_dot.h). Each block's integer sum is exact; then one float combination per block,
// in block order. The SIMD kernels in cpu/ compute the same integers.
#include "ops/vec_dot.h"

namespace qwenrt::ref {
namespace {

// Element j (< 32) of a block's 16 nibble bytes: elements 0..15 are the low nibbles.
inline int Nibble(const uint8_t* qs, int j) { return (qs[j % 16] >> (4 * (j / 16))) & 0x0F; }
inline int HighBit5(const uint8_t* qh, int j) { return (qh[j / 8] >> (j % 8)) & 1; }

// sum_j q_j * a_j and sum_j a_j for the 32 integer weights q of one block against one Q8_0 block.
struct BlockSums {
  int32_t qa = 0, a = 0;
};
template <typename F>
BlockSums Sums(const BlockQ8_0& y, F q_of) {
  BlockSums s;
  for (int j = 0; j < kQK4_0; ++j) {
    s.qa += q_of(j) * y.qs[j];
    s.a += y.qs[j];
  }
  return s;
}

}  // namespace

float VecDotQ4_0_Q8_0(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const BlockQ4_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK4_0; ++b) {
    const BlockSums s = Sums(y[b], [&](int j) { return Nibble(x[b].qs, j) - 8; });
    sum += Fp16ToFp32(x[b].d) * Fp16ToFp32(y[b].d) * static_cast<float>(s.qa);
  }
  return sum;
}

float VecDotQ4_1_Q8_0(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const BlockQ4_1*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK4_0; ++b) {
    const BlockSums s = Sums(y[b], [&](int j) { return Nibble(x[b].qs, j); });
    const float da = Fp16ToFp32(y[b].d);
    sum += Fp16ToFp32(x[b].d) * da * static_cast<float>(s.qa) +
           Fp16ToFp32(x[b].m) * da * static_cast<float>(s.a);
  }
  return sum;
}

float VecDotQ5_0_Q8_0(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const BlockQ5_0*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK4_0; ++b) {
    const BlockSums s =
        Sums(y[b], [&](int j) { return (Nibble(x[b].qs, j) | (HighBit5(x[b].qh, j) << 4)) - 16; });
    sum += Fp16ToFp32(x[b].d) * Fp16ToFp32(y[b].d) * static_cast<float>(s.qa);
  }
  return sum;
}

float VecDotQ5_1_Q8_0(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const BlockQ5_1*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK4_0; ++b) {
    const BlockSums s =
        Sums(y[b], [&](int j) { return Nibble(x[b].qs, j) | (HighBit5(x[b].qh, j) << 4); });
    const float da = Fp16ToFp32(y[b].d);
    sum += Fp16ToFp32(x[b].d) * da * static_cast<float>(s.qa) +
           Fp16ToFp32(x[b].m) * da * static_cast<float>(s.a);
  }
  return sum;
}

float VecDotIQ4NL_Q8_0(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const BlockIQ4NL*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK4_0; ++b) {
    const BlockSums s = Sums(y[b], [&](int j) { return int{kIq4Values[Nibble(x[b].qs, j)]}; });
    sum += Fp16ToFp32(x[b].d) * Fp16ToFp32(y[b].d) * static_cast<float>(s.qa);
  }
  return sum;
}

float VecDotMXFP4_Q8_0(const void* w, const void* a, int64_t n) {
  const auto* x = static_cast<const BlockMXFP4*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0;
  for (int64_t b = 0; b < n / kQK4_0; ++b) {
    const BlockSums s = Sums(y[b], [&](int j) { return int{kMxfp4Values[Nibble(x[b].qs, j)]}; });
    sum += E8M0ToFp32Half(x[b].e) * Fp16ToFp32(y[b].d) * static_cast<float>(s.qa);
  }
  return sum;
}

}  // namespace qwenrt::ref
