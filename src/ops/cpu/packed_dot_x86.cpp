// AVX-512 VNNI packed kernels (packed.h): a 16-row x NT-token register tile per call.
//
// Per super-block and 32-element sub-block s (Q4_K, Q5_K) / 16-element group g (Q6_K):
//   w_j  = 64 bytes = 4 consecutive elements of the 16 rows (u8, nibbles -- and Q5_K's fifth bits
//   --
//          unpacked once for NT tokens)
//   acc  = sum_j vpdpbusd(w_j, broadcast(4 activation bytes of token t))   -> 16 rows' int32 sums
//   S   += acc * scale(row)                                                -> exact, as
//   ref::VecDot*
// then once per super-block and token: the mins (Q4_K) / the -32 offset (Q6_K) from the Q8_K bsums
// with vpdpwssd, and accf = fma(float(S), d(row) * d_act, accf) in a fixed order. The 16 int32 /
// f32 lanes are the 16 rows, so the results are stored with no horizontal sum. Nothing a token
// computes depends on the other tokens of the tile: ntok = 1 (decode) and ntok = 8 (prefill) give
// the same bits.
#include "ops/cpu/dot_dispatch.h"
#include "ops/cpu_namespace.h"
#include "ops/packed.h"
#if QWENRT_PACKED_X86
#include <type_traits>

#include "ops/cpu/packed_tile_x86.h"

namespace QWENRT_CPU_NAMESPACE {
namespace {

using namespace packed_x86;

inline __m512i Load(const void* p) { return _mm512_loadu_si512(p); }

inline const PackedQ4K& Low(const PackedQ4K& x) { return x; }
inline const PackedQ4K& Low(const PackedQ5K& x) { return x.low; }

// Q4_K and Q5_K (Record = PackedQ4K / PackedQ5K): the same tile, Q5_K's values with their fifth
// bit.
template <typename Record, int NT, bool kPrefetch>
void KWithMins(const Record* x, const BlockQ8K* const* y, int64_t nb, float* out,
               int64_t out_stride, int nrows) {
  __m512 accf[NT];
  for (int t = 0; t < NT; ++t) accf[t] = _mm512_setzero_ps();
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  for (int64_t b = 0; b < nb; ++b) {
    const PackedQ4K& X = Low(x[b]);
    __m512i s1[NT];
    for (int t = 0; t < NT; ++t) s1[t] = _mm512_setzero_si512();
    for (int s = 0; s < 8; ++s) {
      PrefetchAhead<kPrefetch>(x + b, s);
      __m512i q[8];
      for (int j = 0; j < 4; ++j) {
        const __m512i v = Load(X.qs[s][j]);
        q[j] = _mm512_and_si512(v, m4);                            // elements 32s + 4j + i
        q[4 + j] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);  // elements 32s + 16 + 4j + i
      }
      if constexpr (std::is_same_v<Record, PackedQ5K>) AddFifthBits(q, Load(x[b].qh[s]));
      const __m512i sc =
          _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(X.scales[s])));
      for (int t = 0; t < NT; ++t) {
        const int8_t* a = y[t][b].qs + 32 * s;
        __m512i lo, hi;
        DotQuads(q, a, &lo, &hi);
        s1[t] = _mm512_add_epi32(s1[t], _mm512_mullo_epi32(_mm512_add_epi32(lo, hi), sc));
      }
    }
    // sum_s m_s * (bsums[2s] + bsums[2s+1]): lanes hold (m_s, m_s) as an int16 pair.
    __m512i mp[8];
    for (int s = 0; s < 8; ++s) {
      const __m512i v =
          _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(X.mins[s])));
      mp[s] = _mm512_or_si512(v, _mm512_slli_epi32(v, 16));
    }
    AddSuperBlockMins<NT>(s1, mp, X.d, X.dmin, y, b, accf);
  }
  StoreTile<NT>(accf, out, out_stride, nrows);
}

template <int NT, bool kPrefetch>
void Q6K(const PackedQ6K* x, const BlockQ8K* const* y, int64_t nb, float* out, int64_t out_stride,
         int nrows) {
  __m512 accf[NT];
  for (int t = 0; t < NT; ++t) accf[t] = _mm512_setzero_ps();
  const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30),
                minus32 = _mm512_set1_epi16(-32);
  for (int64_t b = 0; b < nb; ++b) {
    const PackedQ6K& X = x[b];
    __m512i sum[NT];
    for (int t = 0; t < NT; ++t) sum[t] = _mm512_setzero_si512();
    for (int p = 0; p < 8; ++p) {
      PrefetchAhead<kPrefetch>(x + b, p);
      // Lanes r: (scale 2p, scale 2p+1) of row r as int16; as int32 for the groups; times -32 for
      // the offset.
      const __m512i pv =
          _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(X.scales[p])));
      const __m512i sc[2] = {_mm512_srai_epi32(_mm512_slli_epi32(pv, 16), 16),
                             _mm512_srai_epi32(pv, 16)};
      for (int gi = 0; gi < 2; ++gi) {
        const int g = 2 * p + gi;
        const PackedQ6K::Group& G = X.groups[g];
        const __m512i l0 = Load(G.ql[0]), l1 = Load(G.ql[1]), h = Load(G.qh);
        const __m512i u0 = _mm512_or_si512(_mm512_and_si512(l0, m4),
                                           _mm512_and_si512(_mm512_slli_epi16(h, 4), m30));
        const __m512i u1 = _mm512_or_si512(_mm512_and_si512(l1, m4),
                                           _mm512_and_si512(_mm512_slli_epi16(h, 2), m30));
        const __m512i u2 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l0, 4), m4),
                                           _mm512_and_si512(h, m30));
        const __m512i u3 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l1, 4), m4),
                                           _mm512_and_si512(_mm512_srli_epi16(h, 2), m30));
        for (int t = 0; t < NT; ++t) {
          const int8_t* a = y[t][b].qs + 16 * g;
          __m512i lo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u0, Bcast(a));
          __m512i hi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u2, Bcast(a + 8));
          lo = _mm512_dpbusd_epi32(lo, u1, Bcast(a + 4));
          hi = _mm512_dpbusd_epi32(hi, u3, Bcast(a + 12));
          sum[t] = _mm512_add_epi32(sum[t], _mm512_mullo_epi32(_mm512_add_epi32(lo, hi), sc[gi]));
        }
      }
      const __m512i pm = _mm512_mullo_epi16(pv, minus32);  // u - 32 = q6: -32 * scale * bsum
      for (int t = 0; t < NT; ++t)
        sum[t] = _mm512_dpwssd_epi32(sum[t], pm, Bcast(y[t][b].bsums + 2 * p));
    }
    const __m512 d = Halves(X.d);
    for (int t = 0; t < NT; ++t) {
      accf[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[t]),
                                _mm512_mul_ps(d, _mm512_set1_ps(y[t][b].d)), accf[t]);
    }
  }
  StoreTile<NT>(accf, out, out_stride, nrows);
}

static_assert(kMaxDotTokens == 8, "the packed kernels are instantiated for 1..8 tokens");

}  // namespace

void DotPackedQ4K_Q8K(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                      float* out, int64_t out_stride, int nrows, bool stream) {
  const PackedTokens tok(a, a_stride, ntok);
  const auto* x = reinterpret_cast<const PackedQ4K*>(w);
  ForTile(ntok, stream, [&]<int NT, bool P>() {
    KWithMins<PackedQ4K, NT, P>(x, tok.y, n / kQK_K, out, out_stride, nrows);
  });
}
void DotPackedQ5K_Q8K(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                      float* out, int64_t out_stride, int nrows, bool stream) {
  const PackedTokens tok(a, a_stride, ntok);
  const auto* x = reinterpret_cast<const PackedQ5K*>(w);
  ForTile(ntok, stream, [&]<int NT, bool P>() {
    KWithMins<PackedQ5K, NT, P>(x, tok.y, n / kQK_K, out, out_stride, nrows);
  });
}
void DotPackedQ6K_Q8K(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                      float* out, int64_t out_stride, int nrows, bool stream) {
  const PackedTokens tok(a, a_stride, ntok);
  const auto* x = reinterpret_cast<const PackedQ6K*>(w);
  ForTile(ntok, stream,
          [&]<int NT, bool P>() { Q6K<NT, P>(x, tok.y, n / kQK_K, out, out_stride, nrows); });
}

bool PackedKernelsFast() { return true; }
const char* PackedKernelIsa() { return "avx512vnni"; }

}  // namespace QWENRT_CPU_NAMESPACE
#endif  // QWENRT_PACKED_X86
