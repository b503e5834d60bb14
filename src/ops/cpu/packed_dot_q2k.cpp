// Packed Q2_K kernel (packed.h) against Q8_K activations: the 16-row x NT-token register tile of
// the K-quant packed kernels (packed_dot_x86.cpp), for 2-bit values stored as Q3_K's low bit
// planes.
//
// Per super-block, 32-element pair p (groups 2p, 2p + 1 of 16 elements), and token t:
//   u_k  = 64 bytes = elements 4k..4k+3 of the 16 rows, q in [0, 3]
//   acc  = sum_k vpdpbusd(u_k, broadcast(activation bytes 4k..4k+3))   -> 16 rows' int32 sums
//   S1  += acc_g * scale(row, g)
// then once per super-block the mins from the Q8_K bsums with vpdpwssd, S2 = sum_g min(row, g) *
// bsums[g], and accf += d * d_act * S1 - dmin * d_act * S2 (ref::VecDotQ2K_Q8K's exact integer
// sums). Nothing a token computes depends on the other tokens of the tile: ntok = 1 (decode) and
// ntok = 8 (prefill) give the same bits. Without AVX-512 VNNI the portable loop below computes the
// same integer sums (slower than the file-layout kernel there: PackedKernelFast).
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

// Quad k of a pair from its bit planes (the 16-bit shifts stay within each byte: shift <= 6, then &
// 3).
template <int k>
inline __m512i Quad(__m512i lo) {
  return _mm512_and_si512(k == 0 ? lo : _mm512_srli_epi16(lo, 2 * k), _mm512_set1_epi8(3));
}

inline __m512i Groups(const uint8_t* p) {  // 16 rows' bytes as int32 lanes
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

template <int NT, bool kPrefetch>
void Tile(const PackedQ2K* x, const BlockQ8K* const* y, int64_t nb, float* out, int64_t out_stride,
          int nrows) {
  __m512 accf[NT];
  for (int t = 0; t < NT; ++t) accf[t] = _mm512_setzero_ps();
  const __m512i m15 = _mm512_set1_epi32(15);
  for (int64_t b = 0; b < nb; ++b) {
    const PackedQ2K& X = x[b];
    __m512i s1[NT];
    for (int t = 0; t < NT; ++t) s1[t] = _mm512_setzero_si512();
    for (int p = 0; p < 8; ++p) {
      PrefetchAhead<kPrefetch>(x + b, p);
      const __m512i l0 = _mm512_loadu_si512(X.lo[p][0]), l1 = _mm512_loadu_si512(X.lo[p][1]);
      const __m512i u[8] = {Quad<0>(l0), Quad<1>(l0), Quad<2>(l0), Quad<3>(l0),
                            Quad<0>(l1), Quad<1>(l1), Quad<2>(l1), Quad<3>(l1)};
      const __m512i sc0 = _mm512_and_si512(Groups(X.scales[2 * p]), m15);
      const __m512i sc1 = _mm512_and_si512(Groups(X.scales[2 * p + 1]), m15);
      for (int t = 0; t < NT; ++t) {
        __m512i g0, g1;  // groups 2p and 2p + 1
        DotQuads(u, y[t][b].qs + 32 * p, &g0, &g1);
        s1[t] = _mm512_add_epi32(
            s1[t], _mm512_add_epi32(_mm512_mullo_epi32(g0, sc0), _mm512_mullo_epi32(g1, sc1)));
      }
    }
    // sum_g m_g * bsums[g]: lanes hold (m_2p, m_2p+1) as an int16 pair.
    __m512i mp[8];
    for (int p = 0; p < 8; ++p) {
      mp[p] =
          _mm512_or_si512(_mm512_srli_epi32(Groups(X.scales[2 * p]), 4),
                          _mm512_slli_epi32(_mm512_srli_epi32(Groups(X.scales[2 * p + 1]), 4), 16));
    }
    AddSuperBlockMins<NT>(s1, mp, X.d, X.dmin, y, b, accf);
  }
  StoreTile<NT>(accf, out, out_stride, nrows);
}
#endif

}  // namespace

void DotPackedQ2K_Q8K(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                      float* out, int64_t out_stride, int nrows, bool stream) {
  const PackedTokens tok(a, a_stride, ntok);
  const auto* x = reinterpret_cast<const PackedQ2K*>(w);
  const int64_t nb = n / kQK_K;
#if QWENRT_PACKED_X86
  ForTile(ntok, stream,
          [&]<int NT, bool P>() { Tile<NT, P>(x, tok.y, nb, out, out_stride, nrows); });
#else
  // The portable form: per (row, token) the same integer sums, combined as ref::VecDotQ2K_Q8K does.
  PortablePackedDot(ntok, nrows, nb, out, out_stride, [&](int t, int r, int64_t b) {
    const BlockQ8K& Y = tok.y[t][b];
    int32_t sumi = 0, summ = 0;
    for (int g = 0; g < 16; ++g) {
      int32_t dot = 0;
      for (int k = 4 * (g % 2); k < 4 * (g % 2) + 4; ++k) {
        for (int i = 0; i < 4; ++i) {
          const int q = (x[b].lo[g / 2][k / 4][4 * r + i] >> (2 * (k % 4))) & 3;
          dot += q * Y.qs[32 * (g / 2) + 4 * k + i];
        }
      }
      sumi += (x[b].scales[g][r] & 0x0F) * dot;
      summ += (x[b].scales[g][r] >> 4) * Y.bsums[g];
    }
    return Fp16ToFp32(x[b].d[r]) * Y.d * static_cast<float>(sumi) -
           Fp16ToFp32(x[b].dmin[r]) * Y.d * static_cast<float>(summ);
  });
#endif
}

}  // namespace QWENRT_CPU_NAMESPACE
