// Packed IQ4_XS kernel (packed.h) against Q8_K activations: the 16-row x NT-token register tile of
// the K-quant packed kernels (packed_dot_x86.cpp).
//
// Per super-block, 32-element sub-block s, and token t:
//   u_k  = 64 bytes = elements 4k..4k+3 of the 16 rows: table value + 128 in [1, 241] (vpshufb)
//   acc  = sum_k vpdpbusd(u_k, broadcast(activation bytes 4k..4k+3))        -> 16 rows' int32 sums
//   S   += (acc - 128 * (bsums[2s] + bsums[2s + 1])) * scale(row, s)        -> ref's exact sum
// then once per super-block accf = fma(float(S), d(row) * d_act, accf). Nothing a token computes
// depends on the other tokens of the tile: ntok = 1 (decode) and ntok = 8 (prefill) give the same
// bits. Without AVX-512 VNNI the portable loop below computes the same integer sums (slower than
// the file-layout kernel there, so the loader keeps the file layout: PackedKernelFast).
#include "ops/cpu/dot_dispatch.h"
#include "ops/cpu_namespace.h"
#include "ops/packed.h"
#if QWENRT_PACKED_X86
#include "ops/cpu/packed_tile_x86.h"
#endif

namespace QWENRT_CPU_NAMESPACE {
namespace {

#if QWENRT_PACKED_X86
using namespace packed_x86;

template <int NT, bool kPrefetch>
void Tile(const PackedIQ4XS* x, const BlockQ8K* const* y, int64_t nb, float* out,
          int64_t out_stride, int nrows) {
  __m512 accf[NT];
  for (int t = 0; t < NT; ++t) accf[t] = _mm512_setzero_ps();
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const __m512i table =
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4ValuesU8.v)));
  for (int64_t b = 0; b < nb; ++b) {
    const PackedIQ4XS& X = x[b];
    __m512i sum[NT];
    for (int t = 0; t < NT; ++t) sum[t] = _mm512_setzero_si512();
    for (int s = 0; s < 8; ++s) {
      PrefetchAhead<kPrefetch>(x + b, s);
      __m512i q[8];  // q[k]: elements 32s + 4k .. 4k + 3 of the 16 rows, as u8
      for (int j = 0; j < 4; ++j) {
        const __m512i v = _mm512_loadu_si512(X.qs[s][j]);
        q[j] = _mm512_shuffle_epi8(table, _mm512_and_si512(v, m4));
        q[4 + j] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
      }
      const __m512i sc =
          _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(X.scales[s])));
      for (int t = 0; t < NT; ++t) {
        const int8_t* a = y[t][b].qs + 32 * s;
        __m512i lo, hi;
        DotQuads(q, a, &lo, &hi);
        const int32_t off = 128 * (y[t][b].bsums[2 * s] + y[t][b].bsums[2 * s + 1]);
        const __m512i dot = _mm512_sub_epi32(_mm512_add_epi32(lo, hi), _mm512_set1_epi32(off));
        sum[t] = _mm512_add_epi32(sum[t], _mm512_mullo_epi32(dot, sc));
      }
    }
    float d_act[NT];
    for (int t = 0; t < NT; ++t) d_act[t] = y[t][b].d;
    AddSuperBlock<NT>(sum, X.d, d_act, accf);
  }
  StoreTile<NT>(accf, out, out_stride, nrows);
}
#endif

}  // namespace

void DotPackedIQ4XS_Q8K(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                        float* out, int64_t out_stride, int nrows, bool stream) {
  const PackedTokens tok(a, a_stride, ntok);
  const auto* x = reinterpret_cast<const PackedIQ4XS*>(w);
  const int64_t nb = n / kQK_K;
#if QWENRT_PACKED_X86
  ForTile(ntok, stream,
          [&]<int NT, bool P>() { Tile<NT, P>(x, tok.y, nb, out, out_stride, nrows); });
#else
  // The portable form: per (row, token) the same integer sums, combined as ref::VecDotIQ4XS_Q8K
  // does.
  PortablePackedDot(ntok, nrows, nb, out, out_stride, [&](int t, int r, int64_t b) {
    int32_t sum = 0;
    for (int s = 0; s < 8; ++s) {
      int32_t dot = 0;
      for (int j = 0; j < 4; ++j) {
        for (int i = 0; i < 4; ++i) {
          const uint8_t q = x[b].qs[s][j][4 * r + i];
          dot += kIq4Values[q & 0x0F] * tok.y[t][b].qs[32 * s + 4 * j + i] +
                 kIq4Values[q >> 4] * tok.y[t][b].qs[32 * s + 16 + 4 * j + i];
        }
      }
      sum += x[b].scales[s][r] * dot;
    }
    return Fp16ToFp32(x[b].d[r]) * tok.y[t][b].d * static_cast<float>(sum);
  });
#endif
}

}  // namespace QWENRT_CPU_NAMESPACE
