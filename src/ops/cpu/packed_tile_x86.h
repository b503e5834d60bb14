// The pieces every AVX-512 VNNI packed kernel (packed.h) shares: fp16 row scales, the fifth-bit
// plane, the 4-byte activation broadcast, the eight-quad dot product of one 32-element stretch, the
// once-per-super-block combinations, and the masked store of a tile. Internal to
// src/ops/cpu/ (included only where QWENRT_PACKED_X86).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <utility>

#include "ops/cpu/dot_dispatch.h"
#include "ops/cpu/prefetch.h"
#include "ops/cpu_namespace.h"

// GCC 12's AVX-512 headers start some intrinsics from an "undefined" register it then reports as
// maybe uninitialized (a false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace QWENRT_CPU_NAMESPACE::packed_x86 {

// The 16 rows' fp16 values at p as f32 lanes.
inline __m512 Halves(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Quad k's fifth bits (bit k of each byte of qh, the layout of PackedQ5_0 / Q5_1 / Q5K) moved to
// bit 4 and or-ed into q[k], for k = 0..7. The 16-bit shifts move bits only within each byte here
// (<= 4 left, <= 3 right, then the mask).
template <int k>
inline __m512i FifthBit(__m512i qh) {
  const __m512i v = k < 4    ? _mm512_slli_epi16(qh, 4 - k)
                    : k == 4 ? qh
                             : _mm512_srli_epi16(qh, k - 4);
  return _mm512_and_si512(v, _mm512_set1_epi8(0x10));
}
template <int... k>
inline void AddFifthBits(__m512i* q, __m512i qh, std::integer_sequence<int, k...>) {
  ((q[k] = _mm512_or_si512(q[k], FifthBit<k>(qh))), ...);
}
inline void AddFifthBits(__m512i* q, __m512i qh) {
  AddFifthBits(q, qh, std::make_integer_sequence<int, 8>{});
}

// 4 bytes at p broadcast to the 16 dword lanes (folds into vpdpbusd's {1to16} memory operand).
inline __m512i Bcast(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm512_set1_epi32(v);
}

// q[k] holds elements 4k .. 4k + 3 of the 16 rows (u8), a the 32 activation bytes of one token:
// *lo = the rows' sums over quads 0-3 (elements 0-15), *hi over quads 4-7 (16-31). Two chains halve
// the dpbusd latency a lone token waits on.
inline void DotQuads(const __m512i* q, const int8_t* a, __m512i* lo, __m512i* hi) {
  __m512i l = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[0], Bcast(a));
  __m512i h = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[4], Bcast(a + 16));
  l = _mm512_dpbusd_epi32(l, q[1], Bcast(a + 4));
  h = _mm512_dpbusd_epi32(h, q[5], Bcast(a + 20));
  l = _mm512_dpbusd_epi32(l, q[2], Bcast(a + 8));
  h = _mm512_dpbusd_epi32(h, q[6], Bcast(a + 24));
  l = _mm512_dpbusd_epi32(l, q[3], Bcast(a + 12));
  h = _mm512_dpbusd_epi32(h, q[7], Bcast(a + 28));
  *lo = l;
  *hi = h;
}

// accf[t] += float(sum[t]) * (d(row) * d_act(t)): the once-per-super-block combination of the Q8_K
// kernels. d16: the 16 rows' fp16 scales; d_act[t]: token t's Q8_K scale of this super-block.
template <int NT>
inline void AddSuperBlock(const __m512i* sum, const uint16_t* d16, const float* d_act,
                          __m512* accf) {
  const __m512 d = Halves(d16);
  for (int t = 0; t < NT; ++t) {
    accf[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[t]),
                              _mm512_mul_ps(d, _mm512_set1_ps(d_act[t])), accf[t]);
  }
}

// The same for the K-quants with mins (Q2_K, Q4_K, Q5_K): accf[t] += d * d_act * S1[t] - dmin *
// d_act
// * S2, where S2 = sum_p vpdpwssd(mp[p], token t's bsums 2p, 2p + 1) -- mp[p]'s lanes hold the
// int16 pair of mins that multiplies that bsums pair. The super-block's d*S1 - dmin*S2 is rounded
// once, then added.
template <int NT>
inline void AddSuperBlockMins(const __m512i* s1, const __m512i* mp, const uint16_t* d16,
                              const uint16_t* dmin16, const BlockQ8K* const* y, int64_t b,
                              __m512* accf) {
  const __m512 d = Halves(d16), dmin = Halves(dmin16);
  for (int t = 0; t < NT; ++t) {
    const int16_t* bs = y[t][b].bsums;
    __m512i s2a = _mm512_dpwssd_epi32(_mm512_setzero_si512(), mp[0], Bcast(bs));
    __m512i s2b = _mm512_dpwssd_epi32(_mm512_setzero_si512(), mp[1], Bcast(bs + 2));
    for (int p = 2; p < 8; p += 2) {
      s2a = _mm512_dpwssd_epi32(s2a, mp[p], Bcast(bs + 2 * p));
      s2b = _mm512_dpwssd_epi32(s2b, mp[p + 1], Bcast(bs + 2 * p + 2));
    }
    const __m512 dy = _mm512_set1_ps(y[t][b].d);
    const __m512 m =
        _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(s2a, s2b)), _mm512_mul_ps(dmin, dy));
    accf[t] =
        _mm512_add_ps(accf[t], _mm512_fmsub_ps(_mm512_cvtepi32_ps(s1[t]), _mm512_mul_ps(d, dy), m));
  }
}

// Prefetches part `part` (of 8) of the record two ahead of `x` when kPrefetch. With several tokens
// a record takes long enough to compute that the hardware prefetcher no longer keeps the loads in
// flight: the tile then waited on memory and computed in turn (at 8 tokens the Q6_K LM head ran at
// 13.5 GB/s against 19.4 with one; with this, 18.4). The loop's bounds are compile-time: with
// PrefetchLines' run-time byte count per part the T = 8 matmuls took 37.4 ms against 33-35.
template <bool kPrefetch, typename Record>
inline void PrefetchAhead(const Record* x, int part) {
  if constexpr (kPrefetch) {
    constexpr int kLines = (sizeof(Record) + 63) / 64, kPerPart = (kLines + 7) / 8;
    const char* next = reinterpret_cast<const char*>(x + 2);
    for (int i = part * kPerPart; i < (part + 1) * kPerPart && i < kLines; ++i)
      PrefetchLine(next + 64 * i);
  }
}

// Runs tile.template operator()<NT, kPrefetch>() for NT = ntok (1..kMaxDotTokens) and kPrefetch =
// stream && NT >= 2. Each tile is compiled with and without the prefetch, so prefill's token tiles
// after the first (the group then in cache) run the plain loop (with a run-time flag in the loop,
// the Q4_K tile took 12% more of a 512-token prefill); one token streams fast enough without (the
// 0.8B shape's matmuls 25.9 ms without, 27.2 ms with).
template <typename F>
inline void ForTile(int ntok, bool stream, F&& tile) {
  ForNtok(ntok, [&]<int NT>() {
    if constexpr (NT >= 2) {
      if (stream) {
        tile.template operator()<NT, true>();
        return;
      }
    }
    tile.template operator()<NT, false>();
  });
}

// out[t * out_stride + r] = acc[t] lane r, for r < nrows (the padded rows of a group are not
// stored).
template <int NT>
inline void StoreTile(const __m512* acc, float* out, int64_t out_stride, int nrows) {
  const __mmask16 rows = static_cast<__mmask16>((1u << nrows) - 1u);
  for (int t = 0; t < NT; ++t) _mm512_mask_storeu_ps(out + t * out_stride, rows, acc[t]);
}

}  // namespace QWENRT_CPU_NAMESPACE::packed_x86
