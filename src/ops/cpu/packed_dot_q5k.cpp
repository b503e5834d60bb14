// The portable packed Q5_K kernel (packed.h), for the levels without AVX-512 VNNI: per (row, token)
// the exact integer sums of ref::VecDotQ5K_Q8K, read from the interleaved layout. The loader packs
// Q5_K only where the SIMD tile exists (packed_dot_x86.cpp, PackedKernelFast); this keeps a packed
// matrix usable and testable on every level.
#include "ops/cpu_namespace.h"
#include "ops/packed.h"
#if !QWENRT_PACKED_X86

namespace QWENRT_CPU_NAMESPACE {

void DotPackedQ5K_Q8K(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                      float* out, int64_t out_stride, int nrows, bool stream) {
  const PackedTokens tok(a, a_stride, ntok);
  const auto* x = reinterpret_cast<const PackedQ5K*>(w);
  PortablePackedDot(ntok, nrows, n / kQK_K, out, out_stride, [&](int t, int r, int64_t b) {
    const BlockQ8K& Y = tok.y[t][b];
    const PackedQ4K& X = x[b].low;
    int32_t s1 = 0, s2 = 0;
    for (int s = 0; s < 8; ++s) {
      int32_t dot = 0;
      for (int k = 0; k < 8; ++k) {  // quad k: elements 32s + 16(k / 4) + 4(k % 4) + i
        for (int i = 0; i < 4; ++i) {
          const int q = ((X.qs[s][k % 4][4 * r + i] >> (4 * (k / 4))) & 0x0F) |
                        (((x[b].qh[s][4 * r + i] >> k) & 1) << 4);
          dot += q * Y.qs[32 * s + 16 * (k / 4) + 4 * (k % 4) + i];
        }
      }
      s1 += X.scales[s][r] * dot;
      s2 += X.mins[s][r] * (Y.bsums[2 * s] + Y.bsums[2 * s + 1]);
    }
    return static_cast<float>(s1) * (Fp16ToFp32(X.d[r]) * Y.d) -
           static_cast<float>(s2) * (Fp16ToFp32(X.dmin[r]) * Y.d);
  });
}

}  // namespace QWENRT_CPU_NAMESPACE
#endif  // !QWENRT_PACKED_X86
