// Portable packed kernels (packed.h), for the levels with neither AVX-512 VNNI nor AVX2: per (row,
// token) the same exact integer sums as the SIMD version, read from the interleaved layout. Slower
// than the file-layout kernels of vec_dot.h, which is why the loader packs only when
// PackedKernelsFast(); they exist so that a packed matrix is usable (and testable) on every build.
#include "ops/cpu_namespace.h"
#include "ops/packed.h"
#if !QWENRT_PACKED_X86 && !QWENRT_X86_DOT

namespace QWENRT_CPU_NAMESPACE {

void DotPackedQ4K_Q8K(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                      float* out, int64_t out_stride, int nrows, bool stream) {
  const int64_t nb = n / kQK_K;
  const auto* x = reinterpret_cast<const PackedQ4K*>(w);
  for (int t = 0; t < ntok; ++t) {
    const auto* y = reinterpret_cast<const BlockQ8K*>(a + t * a_stride);
    for (int r = 0; r < nrows; ++r) {
      float acc = 0;
      for (int64_t b = 0; b < nb; ++b) {
        int32_t s1 = 0, s2 = 0;
        for (int s = 0; s < 8; ++s) {
          int32_t dot = 0;
          for (int j = 0; j < 4; ++j) {
            for (int i = 0; i < 4; ++i) {
              const uint8_t q = x[b].qs[s][j][4 * r + i];
              dot += (q & 0x0F) * y[b].qs[32 * s + 4 * j + i] +
                     (q >> 4) * y[b].qs[32 * s + 16 + 4 * j + i];
            }
          }
          s1 += x[b].scales[s][r] * dot;
          s2 += x[b].mins[s][r] * (y[b].bsums[2 * s] + y[b].bsums[2 * s + 1]);
        }
        acc += static_cast<float>(s1) * (Fp16ToFp32(x[b].d[r]) * y[b].d) -
               static_cast<float>(s2) * (Fp16ToFp32(x[b].dmin[r]) * y[b].d);
      }
      out[t * out_stride + r] = acc;
    }
  }
}

void DotPackedQ6K_Q8K(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                      float* out, int64_t out_stride, int nrows, bool stream) {
  const int64_t nb = n / kQK_K;
  const auto* x = reinterpret_cast<const PackedQ6K*>(w);
  for (int t = 0; t < ntok; ++t) {
    const auto* y = reinterpret_cast<const BlockQ8K*>(a + t * a_stride);
    for (int r = 0; r < nrows; ++r) {
      float acc = 0;
      for (int64_t b = 0; b < nb; ++b) {
        int32_t sum = 0;
        for (int g = 0; g < 16; ++g) {
          const PackedQ6K::Group& G = x[b].groups[g];
          int32_t dot = 0;
          for (int i = 0; i < 4; ++i) {
            const int l0 = G.ql[0][4 * r + i], l1 = G.ql[1][4 * r + i], h = G.qh[4 * r + i];
            const int u0 = (l0 & 15) | ((h & 3) << 4), u1 = (l1 & 15) | (((h >> 2) & 3) << 4);
            const int u2 = (l0 >> 4) | (((h >> 4) & 3) << 4), u3 = (l1 >> 4) | ((h >> 6) << 4);
            const int8_t* q = y[b].qs + 16 * g;
            dot += u0 * q[i] + u1 * q[4 + i] + u2 * q[8 + i] + u3 * q[12 + i];
          }
          const int sc = x[b].scales[g / 2][r][g % 2];
          sum += sc * dot - 32 * sc * y[b].bsums[g];  // u - 32 = q6
        }
        acc += static_cast<float>(sum) * (Fp16ToFp32(x[b].d[r]) * y[b].d);
      }
      out[t * out_stride + r] = acc;
    }
  }
}

bool PackedKernelsFast() { return false; }
const char* PackedKernelIsa() { return "scalar"; }

}  // namespace QWENRT_CPU_NAMESPACE
#endif  // !QWENRT_PACKED_X86 && !QWENRT_X86_DOT
