// Packed Q3_K kernel (packed.h) against Q8_K activations: the 16-row x NT-token register tile of
// the K-quant packed kernels (packed_dot_x86.cpp), for 3-bit values stored as bit planes.
//
// Per super-block, 16-element group g (quads 4(g % 2) .. +3 of pair g / 2), and token t:
//   u_k  = 64 bytes = elements 4k..4k+3 of the 16 rows: the two low bits from lo, bit 2 from hi
//   acc  = sum_k vpdpbusd(u_k, broadcast(activation bytes 4k..4k+3))   -> 16 rows' int32 sums
//   S   += (acc - 4 * bsums[g]) * scale(row, g)                        -> ref's exact sum (u - 4 =
//   q3)
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

// Quad k of a pair: u = low bits | bit 2. The 16-bit shifts move bits only within each byte here
// (the masks keep bits whose source is in the same byte).
template <int k>
inline __m512i Quad(__m512i lo, __m512i hi) {
  const __m512i low =
      _mm512_and_si512(k % 4 == 0 ? lo : _mm512_srli_epi16(lo, 2 * (k % 4)), _mm512_set1_epi8(3));
  const __m512i h = k >= 2 ? _mm512_srli_epi16(hi, k - 2) : _mm512_slli_epi16(hi, 2 - k);
  return _mm512_or_si512(low, _mm512_and_si512(h, _mm512_set1_epi8(4)));
}

template <int NT, bool kPrefetch>
void Tile(const PackedQ3K* x, const BlockQ8K* const* y, int64_t nb, float* out, int64_t out_stride,
          int nrows) {
  __m512 accf[NT];
  for (int t = 0; t < NT; ++t) accf[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const PackedQ3K& X = x[b];
    __m512i sum[NT];
    for (int t = 0; t < NT; ++t) sum[t] = _mm512_setzero_si512();
    for (int p = 0; p < 8; ++p) {
      PrefetchAhead<kPrefetch>(x + b, p);
      const __m512i l0 = _mm512_loadu_si512(X.pairs[p].lo[0]),
                    l1 = _mm512_loadu_si512(X.pairs[p].lo[1]);
      const __m512i h = _mm512_loadu_si512(X.pairs[p].hi);
      const __m512i u[8] = {Quad<0>(l0, h), Quad<1>(l0, h), Quad<2>(l0, h), Quad<3>(l0, h),
                            Quad<4>(l1, h), Quad<5>(l1, h), Quad<6>(l1, h), Quad<7>(l1, h)};
      const __m512i sc0 =
          _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(X.scales[2 * p])));
      const __m512i sc1 = _mm512_cvtepi8_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(X.scales[2 * p + 1])));
      for (int t = 0; t < NT; ++t) {
        const int8_t* a = y[t][b].qs + 32 * p;
        __m512i g0, g1;  // groups 2p and 2p + 1
        DotQuads(u, a, &g0, &g1);
        const int16_t* bs = y[t][b].bsums + 2 * p;
        g0 = _mm512_sub_epi32(g0, _mm512_set1_epi32(4 * bs[0]));
        g1 = _mm512_sub_epi32(g1, _mm512_set1_epi32(4 * bs[1]));
        sum[t] = _mm512_add_epi32(
            sum[t], _mm512_add_epi32(_mm512_mullo_epi32(g0, sc0), _mm512_mullo_epi32(g1, sc1)));
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

void DotPackedQ3K_Q8K(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                      float* out, int64_t out_stride, int nrows, bool stream) {
  const PackedTokens tok(a, a_stride, ntok);
  const auto* x = reinterpret_cast<const PackedQ3K*>(w);
  const int64_t nb = n / kQK_K;
#if QWENRT_PACKED_X86
  ForTile(ntok, stream,
          [&]<int NT, bool P>() { Tile<NT, P>(x, tok.y, nb, out, out_stride, nrows); });
#else
  // The portable form: per (row, token) the same integer sums, combined as ref::VecDotQ3K_Q8K does.
  PortablePackedDot(ntok, nrows, nb, out, out_stride, [&](int t, int r, int64_t b) {
    int32_t sum = 0;
    for (int g = 0; g < 16; ++g) {
      const PackedQ3K::Pair& P = x[b].pairs[g / 2];
      int32_t dot = 0;
      for (int k = 4 * (g % 2); k < 4 * (g % 2) + 4; ++k) {
        for (int i = 0; i < 4; ++i) {
          const int u =
              ((P.lo[k / 4][4 * r + i] >> (2 * (k % 4))) & 3) | (((P.hi[4 * r + i] >> k) & 1) << 2);
          dot += (u - 4) * tok.y[t][b].qs[32 * (g / 2) + 4 * k + i];
        }
      }
      sum += x[b].scales[g][r] * dot;
    }
    return Fp16ToFp32(x[b].d[r]) * tok.y[t][b].d * static_cast<float>(sum);
  });
#endif
}

}  // namespace QWENRT_CPU_NAMESPACE
