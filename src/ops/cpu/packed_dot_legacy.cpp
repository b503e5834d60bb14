// Packed Q4_0 / Q4_1 / Q5_0 / Q5_1 / IQ4_NL / MXFP4 / Q8_0 kernels (packed.h) against Q8_0
// activations: the 16-row x NT-token register tile of the K-quant packed kernels
// (packed_dot_x86.cpp) for the 32-element block types.
//
// Per 32-element block s of a 256-element record, and token t:
//   u_k  = 64 bytes = elements 4k..4k+3 of the 16 rows as u8: Q4_0's nibble q in [0, 15], IQ4_NL's
//          and MXFP4's table value + 128 (one vpshufb of the nibbles), Q8_0's q + 128 (stored so)
//   acc  = sum_k vpdpbusd(u_k, broadcast(activation bytes 4k..4k+3 of token t))  -> 16 rows' int32
//   sums S    = acc - off * sum(a)  with off = 8 (Q4_0: q - 8) or 128                 ->
//   ref::VecDot*'s exact sum accf = fma(float(S), d(row) * d_act, accf), blocks in order (MXFP4: d
//   = E8M0ToFp32Half(e)).
// Nothing a token computes depends on the other tokens of the tile: ntok = 1 (decode) and ntok = 8
// (prefill) give the same bits. Without AVX-512 VNNI the portable loops below compute the same
// integer sums (slower than the file-layout kernels there, so the loader keeps the file layout for
// these types: PackedKernelFast).
#include "ops/cpu/dot_dispatch.h"
#include "ops/cpu_namespace.h"
#include "ops/packed.h"

#if QWENRT_PACKED_X86
#include "ops/cpu/packed_tile_x86.h"
#endif

namespace QWENRT_CPU_NAMESPACE {
namespace {

enum class Kind { kQ4_0, kQ4_1, kQ5_0, kQ5_1, kIQ4NL, kMXFP4, kQ8_0 };
template <Kind K>
struct Traits;
template <>
struct Traits<Kind::kQ4_0> {
  using Record = PackedQ4_0;
  static constexpr int32_t kOff = 8;
};
template <>
struct Traits<Kind::kQ4_1> {
  using Record = PackedQ4_1;
  static constexpr int32_t kOff = 0;
};
template <>
struct Traits<Kind::kQ5_0> {
  using Record = PackedQ5_0;
  static constexpr int32_t kOff = 16;
};
template <>
struct Traits<Kind::kQ5_1> {
  using Record = PackedQ5_1;
  static constexpr int32_t kOff = 0;
};
template <>
struct Traits<Kind::kIQ4NL> {
  using Record = PackedQ4_0;
  static constexpr int32_t kOff = 128;
};
template <>
struct Traits<Kind::kMXFP4> {
  using Record = PackedMXFP4;
  static constexpr int32_t kOff = 128;
};
template <>
struct Traits<Kind::kQ8_0> {
  using Record = PackedQ8_0;
  static constexpr int32_t kOff = 128;
};
template <Kind K>
using Record = typename Traits<K>::Record;
template <Kind K>
constexpr int32_t kOff = Traits<K>::kOff;
template <Kind K>
constexpr bool kHasMin = K == Kind::kQ4_1 || K == Kind::kQ5_1;  // + m * d_act * sum(a) per block
template <Kind K>
constexpr bool kFiveBits = K == Kind::kQ5_0 || K == Kind::kQ5_1;

#if QWENRT_PACKED_X86
using namespace packed_x86;

// Sum of 32 signed bytes: vpsadbw of a + 128 (the xor), minus 32 * 128.
inline int32_t SumBytes(const int8_t* a) {
  const __m256i v = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)),
                                     _mm256_set1_epi8(-128));
  const __m256i s = _mm256_sad_epu8(v, _mm256_setzero_si256());
  const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  return static_cast<int32_t>(_mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1)) - 32 * 128;
}

// The 16 rows' float scales of block s: fp16 d, or MXFP4's E8M0ToFp32Half(e) (subnormal for e < 2).
template <Kind K>
inline __m512 Scales(const Record<K>& X, int s) {
  if constexpr (K == Kind::kMXFP4) {
    const __m512i e =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(X.e[s])));
    const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
    const __m512i tiny = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
    return _mm512_castsi512_ps(
        _mm512_mask_mov_epi32(normal, _mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2)), tiny));
  } else {
    return Halves(X.d[s]);
  }
}

template <Kind K, int NT, bool kPrefetch>
void Tile(const Record<K>* x, const BlockQ8_0* const* y, int64_t nb, float* out, int64_t out_stride,
          int nrows) {
  __m512 accf[NT];
  for (int t = 0; t < NT; ++t) accf[t] = _mm512_setzero_ps();
  const __m512i m4 = _mm512_set1_epi8(0x0F);
  const uint8_t* values = K == Kind::kMXFP4 ? kMxfp4ValuesU8.v : kIq4ValuesU8.v;
  const __m512i table =
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(values)));
  for (int64_t b = 0; b < nb; ++b) {
    const Record<K>& X = x[b];
    for (int s = 0; s < 8; ++s) {
      PrefetchAhead<kPrefetch>(x + b, s);
      __m512i q[8];  // q[k]: elements 4k .. 4k + 3 of block s of the 16 rows, as u8
      if constexpr (K == Kind::kQ8_0) {
        for (int k = 0; k < 8; ++k) q[k] = _mm512_loadu_si512(X.qs[s][k]);
      } else {
        for (int j = 0; j < 4; ++j) {
          const __m512i v = _mm512_loadu_si512(X.qs[s][j]);
          q[j] = _mm512_and_si512(v, m4);                            // elements 4j + i
          q[4 + j] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);  // elements 16 + 4j + i
          if constexpr (K == Kind::kIQ4NL || K == Kind::kMXFP4) {
            q[j] = _mm512_shuffle_epi8(table, q[j]);
            q[4 + j] = _mm512_shuffle_epi8(table, q[4 + j]);
          }
        }
        if constexpr (kFiveBits<K>) AddFifthBits(q, _mm512_loadu_si512(X.qh[s]));
      }
      const __m512 dw = Scales<K>(X, s);
      __m512 mw = _mm512_setzero_ps();
      if constexpr (kHasMin<K>) mw = Halves(X.m[s]);
      for (int t = 0; t < NT; ++t) {
        const BlockQ8_0& A = y[t][8 * b + s];
        const int8_t* a = A.qs;
        __m512i lo, hi;
        DotQuads(q, a, &lo, &hi);
        const __m512 da = _mm512_set1_ps(_cvtsh_ss(A.d));
        if constexpr (kHasMin<K>) {  // d * da * sum(q a) + m * da * sum(a), as ref
          accf[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(lo, hi)),
                                    _mm512_mul_ps(dw, da), accf[t]);
          accf[t] = _mm512_fmadd_ps(_mm512_set1_ps(static_cast<float>(SumBytes(a))),
                                    _mm512_mul_ps(mw, da), accf[t]);
        } else {
          const __m512i sum =
              _mm512_sub_epi32(_mm512_add_epi32(lo, hi), _mm512_set1_epi32(kOff<K> * SumBytes(a)));
          accf[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw, da), accf[t]);
        }
      }
    }
  }
  StoreTile<NT>(accf, out, out_stride, nrows);
}

template <Kind K>
void Dot(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n, float* out,
         int64_t out_stride, int nrows, bool stream) {
  const BlockQ8_0* y[kMaxDotTokens];
  for (int t = 0; t < ntok && t < kMaxDotTokens; ++t)
    y[t] = reinterpret_cast<const BlockQ8_0*>(a + t * a_stride);
  const auto* x = reinterpret_cast<const Record<K>*>(w);
  ForTile(ntok, stream,
          [&]<int NT, bool P>() { Tile<K, NT, P>(x, y, n / kQK_K, out, out_stride, nrows); });
}
#else
// The portable form: per (row, token) the same integer sums, combined as ref::VecDot*_Q8_0 does.
template <Kind K>
int Value(const Record<K>& x, int s, int r,
          int e) {  // element e of block s of row r, as ref decodes it
  if constexpr (K == Kind::kQ8_0) {
    return x.qs[s][e / 4][4 * r + e % 4] - 128;
  } else {
    const uint8_t q = x.qs[s][e % 16 / 4][4 * r + e % 4];
    int u = e < 16 ? q & 0x0F : q >> 4;
    if constexpr (kFiveBits<K>) u |= ((x.qh[s][4 * r + e % 4] >> (e / 4)) & 1) << 4;
    if constexpr (K == Kind::kIQ4NL) return kIq4Values[u];
    if constexpr (K == Kind::kMXFP4) return kMxfp4Values[u];
    return u - kOff<K>;
  }
}

template <Kind K>
float Scale(const Record<K>& x, int s, int r) {
  if constexpr (K == Kind::kMXFP4) {
    return E8M0ToFp32Half(x.e[s][r]);
  } else {
    return Fp16ToFp32(x.d[s][r]);
  }
}

template <Kind K>
void Dot(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n, float* out,
         int64_t out_stride, int nrows, bool stream) {
  const int64_t nb = n / kQK_K;
  const auto* x = reinterpret_cast<const Record<K>*>(w);
  for (int t = 0; t < ntok; ++t) {
    const auto* y = reinterpret_cast<const BlockQ8_0*>(a + t * a_stride);
    for (int r = 0; r < nrows; ++r) {
      float acc = 0;
      for (int64_t b = 0; b < nb; ++b) {
        for (int s = 0; s < 8; ++s) {
          const BlockQ8_0& A = y[8 * b + s];
          int32_t dot = 0, sum_a = 0;
          for (int e = 0; e < 32; ++e) {
            dot += Value<K>(x[b], s, r, e) * A.qs[e];
            sum_a += A.qs[e];
          }
          const float da = Fp16ToFp32(A.d);
          if constexpr (kHasMin<K>) {
            acc += Scale<K>(x[b], s, r) * da * static_cast<float>(dot) +
                   Fp16ToFp32(x[b].m[s][r]) * da * static_cast<float>(sum_a);
          } else {
            acc += Scale<K>(x[b], s, r) * da * static_cast<float>(dot);
          }
        }
      }
      out[t * out_stride + r] = acc;
    }
  }
}
#endif

}  // namespace

void DotPackedQ4_0_Q8_0(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                        float* out, int64_t out_stride, int nrows, bool stream) {
  Dot<Kind::kQ4_0>(w, a, a_stride, ntok, n, out, out_stride, nrows, stream);
}
void DotPackedQ4_1_Q8_0(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                        float* out, int64_t out_stride, int nrows, bool stream) {
  Dot<Kind::kQ4_1>(w, a, a_stride, ntok, n, out, out_stride, nrows, stream);
}
void DotPackedQ5_0_Q8_0(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                        float* out, int64_t out_stride, int nrows, bool stream) {
  Dot<Kind::kQ5_0>(w, a, a_stride, ntok, n, out, out_stride, nrows, stream);
}
void DotPackedQ5_1_Q8_0(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                        float* out, int64_t out_stride, int nrows, bool stream) {
  Dot<Kind::kQ5_1>(w, a, a_stride, ntok, n, out, out_stride, nrows, stream);
}
void DotPackedIQ4NL_Q8_0(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                         float* out, int64_t out_stride, int nrows, bool stream) {
  Dot<Kind::kIQ4NL>(w, a, a_stride, ntok, n, out, out_stride, nrows, stream);
}
void DotPackedMXFP4_Q8_0(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                         float* out, int64_t out_stride, int nrows, bool stream) {
  Dot<Kind::kMXFP4>(w, a, a_stride, ntok, n, out, out_stride, nrows, stream);
}
void DotPackedQ8_0_Q8_0(const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n,
                        float* out, int64_t out_stride, int nrows, bool stream) {
  Dot<Kind::kQ8_0>(w, a, a_stride, ntok, n, out, out_stride, nrows, stream);
}

}  // namespace QWENRT_CPU_NAMESPACE
