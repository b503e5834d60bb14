// AVX2 (+ VNNI where the build targets it) multi-token dot kernels of the grid i-quants against Q8_K.
//
// Every type is brought to one shape per 32-element chunk of a super-block:
//   wa: 32 unsigned weight magnitudes (u8; grid values <= 62, IQ1's |8 grid +- 1| <= 9)
//   sv: 32 bytes whose sign is the weight's sign (never zero)
//   sc: 16 x i16 group scales (2 ls + 1, per 16 or 32 elements)
// and for each token: acc += madd(maddubs(wa, sign(q_act, sv)), sc) -- exact i32 (maddubs pair sums are
// <= 2 * 62 * 127 < 2^15, so it never saturates). Per super-block and token one float fmadd of
// acc * d * d_act * factor, where factor is the type's power of two (ref/vec_dot_iq.cpp): results differ
// from ref:: only by float summation order. The weights are unpacked once per chunk for up to
// kMaxDotTokens tokens.
#include "ops/cpu_namespace.h"
#include "ops/vec_dot_iq.h"

#if QWENRT_X86_DOT
#include <immintrin.h>

#include "ops/cpu/dot_dispatch.h"
#include "ops/cpu/x86_int_dot.h"

namespace QWENRT_CPU_NAMESPACE {
namespace {

using iq::LoadU16;
using iq::LoadU32;

using namespace x86;

// 32 sign bits (bit j: element j negative) -> 32 bytes of -1 / +1.
inline __m256i SignsPM(uint32_t bits) {
  const __m256i rep = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                                          _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                            0x0101010101010101, 0));
  const __m256i mask = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i neg = _mm256_cmpeq_epi8(_mm256_and_si256(rep, mask), mask);
  return _mm256_or_si256(neg, _mm256_set1_epi8(1));
}

// Four 7-bit sign indices (bits 0-27 of aux) -> 32 sign bits through kKSigns.
inline uint32_t KSigns4(uint32_t aux) {
  return iq::kKSigns[aux & 0x7F] | (iq::kKSigns[(aux >> 7) & 0x7F] << 8) |
         (static_cast<uint32_t>(iq::kKSigns[(aux >> 14) & 0x7F]) << 16) |
         (static_cast<uint32_t>(iq::kKSigns[(aux >> 21) & 0x7F]) << 24);
}

inline __m256i Grid8x4(const uint64_t* t, int i0, int i1, int i2, int i3) {
  return _mm256_set_epi64x(static_cast<int64_t>(t[i3]), static_cast<int64_t>(t[i2]), static_cast<int64_t>(t[i1]),
                           static_cast<int64_t>(t[i0]));
}

// i16 scales: low 128-bit lane (elements 0-15) = lo, high lane (16-31) = hi.
inline __m256i Scales16(int lo, int hi) { return _mm256_set_m128i(_mm_set1_epi16(static_cast<short>(hi)), _mm_set1_epi16(static_cast<short>(lo))); }

struct Chunk {
  __m256i wa, sv, sc;
};

// IQ1's signed values 8 * grid + delta (delta bytes +-1 per 8 elements): magnitude and sign.
inline void Iq1Chunk(__m256i grid, __m256i delta, Chunk* c) {
  __m256i g8 = _mm256_add_epi8(grid, grid);
  g8 = _mm256_add_epi8(g8, g8);
  g8 = _mm256_add_epi8(g8, g8);
  const __m256i v = _mm256_add_epi8(g8, delta);
  c->wa = _mm256_abs_epi8(v);
  c->sv = v;
}

struct IQ2XXS {
  using Block = BlockIQ2XXS;
  static constexpr float kFactor = 0.125f;
  static uint16_t D(const Block& b) { return b.d; }
  static Chunk Get(const Block& b, int g) {
    const uint32_t idx = LoadU32(b.qs + 4 * g), aux = LoadU32(b.qs + 4 * g + 2);
    const uint64_t* t = iq::kIq2xxsGrid;
    const int s = static_cast<int>(2 * (aux >> 28) + 1);
    return {Grid8x4(t, idx & 0xFF, (idx >> 8) & 0xFF, (idx >> 16) & 0xFF, idx >> 24), SignsPM(KSigns4(aux)),
            _mm256_set1_epi16(static_cast<short>(s))};
  }
};

struct IQ2XS {
  using Block = BlockIQ2XS;
  static constexpr float kFactor = 0.125f;
  static uint16_t D(const Block& b) { return b.d; }
  static Chunk Get(const Block& b, int g) {
    const uint16_t* q = b.qs + 4 * g;
    const uint32_t signs = iq::kKSigns[q[0] >> 9] | (iq::kKSigns[q[1] >> 9] << 8) |
                           (static_cast<uint32_t>(iq::kKSigns[q[2] >> 9]) << 16) |
                           (static_cast<uint32_t>(iq::kKSigns[q[3] >> 9]) << 24);
    const int lo = b.scales[g] & 0x0F, hi = b.scales[g] >> 4;
    return {Grid8x4(iq::kIq2xsGrid, q[0] & 511, q[1] & 511, q[2] & 511, q[3] & 511), SignsPM(signs),
            Scales16(2 * lo + 1, 2 * hi + 1)};
  }
};

struct IQ2S {
  using Block = BlockIQ2S;
  static constexpr float kFactor = 0.125f;
  static uint16_t D(const Block& b) { return b.d; }
  static Chunk Get(const Block& b, int g) {
    const uint8_t* q = b.qs + 4 * g;
    const int h = b.qh[g];
    const int lo = b.scales[g] & 0x0F, hi = b.scales[g] >> 4;
    return {Grid8x4(iq::kIq2sGrid, q[0] | ((h & 3) << 8), q[1] | ((h & 0x0C) << 6), q[2] | ((h & 0x30) << 4),
                    q[3] | ((h & 0xC0) << 2)),
            SignsPM(LoadU32(b.qs + kQK_K / 8 + 4 * g)), Scales16(2 * lo + 1, 2 * hi + 1)};
  }
};

struct IQ3XXS {
  using Block = BlockIQ3XXS;
  static constexpr float kFactor = 0.25f;
  static uint16_t D(const Block& b) { return b.d; }
  static Chunk Get(const Block& b, int g) {
    const uint8_t* q = b.qs + 8 * g;
    const uint32_t* t = iq::kIq3xxsGrid;
    const uint32_t aux = LoadU32(b.qs + kQK_K / 4 + 4 * g);
    const __m256i grid = _mm256_set_epi32(static_cast<int>(t[q[7]]), static_cast<int>(t[q[6]]), static_cast<int>(t[q[5]]),
                                          static_cast<int>(t[q[4]]), static_cast<int>(t[q[3]]), static_cast<int>(t[q[2]]),
                                          static_cast<int>(t[q[1]]), static_cast<int>(t[q[0]]));
    return {grid, SignsPM(KSigns4(aux)), _mm256_set1_epi16(static_cast<short>(2 * (aux >> 28) + 1))};
  }
};

struct IQ3S {
  using Block = BlockIQ3S;
  static constexpr float kFactor = 1.0f;
  static uint16_t D(const Block& b) { return b.d; }
  static Chunk Get(const Block& b, int g) {
    const uint8_t* q = b.qs + 8 * g;
    const int h = b.qh[g];
    const uint32_t* t = iq::kIq3sGrid;
    auto e = [&](int p) { return static_cast<int>(t[q[p] | (((h >> p) & 1) << 8)]); };
    const __m256i grid = _mm256_set_epi32(e(7), e(6), e(5), e(4), e(3), e(2), e(1), e(0));
    const int s = (b.scales[g / 2] >> (4 * (g % 2))) & 0x0F;
    return {grid, SignsPM(LoadU32(b.signs + 4 * g)), _mm256_set1_epi16(static_cast<short>(2 * s + 1))};
  }
};

struct IQ1S {
  using Block = BlockIQ1S;
  static constexpr float kFactor = 0.125f;
  static uint16_t D(const Block& b) { return b.d; }
  static Chunk Get(const Block& b, int g) {
    const uint8_t* q = b.qs + 4 * g;
    const int h = b.qh[g];
    Chunk c;
    Iq1Chunk(Grid8x4(iq::kIq1sGrid, q[0] | ((h & 7) << 8), q[1] | ((h & 0x38) << 5), q[2] | ((h & 0x1C0) << 2),
                     q[3] | ((h & 0xE00) >> 1)),
             _mm256_set1_epi8(h & 0x8000 ? -1 : 1), &c);
    c.sc = _mm256_set1_epi16(static_cast<short>(2 * ((h >> 12) & 7) + 1));
    return c;
  }
};

struct IQ1M {
  using Block = BlockIQ1M;
  static constexpr float kFactor = 0.125f;
  static uint16_t D(const Block& b) { return iq::Iq1mD(b); }
  static Chunk Get(const Block& b, int g) {
    const uint8_t* q = b.qs + 4 * g;
    const int h0 = b.qh[2 * g], h1 = b.qh[2 * g + 1];  // nibbles of chunks 4g .. 4g + 3
    constexpr int64_t kPlus = 0x0101010101010101, kMinus = -1;
    Chunk c;
    Iq1Chunk(Grid8x4(iq::kIq1sGrid, q[0] | ((h0 & 7) << 8), q[1] | ((h0 & 0x70) << 4), q[2] | ((h1 & 7) << 8),
                     q[3] | ((h1 & 0x70) << 4)),
             _mm256_set_epi64x(h1 & 0x80 ? kMinus : kPlus, h1 & 0x08 ? kMinus : kPlus, h0 & 0x80 ? kMinus : kPlus,
                               h0 & 0x08 ? kMinus : kPlus),
             &c);
    c.sc = Scales16(2 * iq::Iq1mScale(b, 2 * g) + 1, 2 * iq::Iq1mScale(b, 2 * g + 1) + 1);
    return c;
  }
};

template <typename T, int NT>
void DotIq(const typename T::Block* x, const uint8_t* a, size_t a_stride, int64_t nb, float* out,
           int64_t out_stride) {
  const BlockQ8K* y[NT];
  for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8K*>(a + t * a_stride);
  __m256 accf[NT];
  for (int t = 0; t < NT; ++t) accf[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    __m256i acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = _mm256_setzero_si256();
    for (int g = 0; g < 8; ++g) {
      const Chunk c = T::Get(x[b], g);
      for (int t = 0; t < NT; ++t) {
        const __m256i qa = _mm256_sign_epi8(Load256(y[t][b].qs + 32 * g), c.sv);
        acc[t] = MaddAcc(acc[t], _mm256_maddubs_epi16(c.wa, qa), c.sc);
      }
    }
    const float d = Half(T::D(x[b])) * T::kFactor;
    for (int t = 0; t < NT; ++t) {
      accf[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[t]), _mm256_set1_ps(d * y[t][b].d), accf[t]);
    }
  }
  for (int t = 0; t < NT; ++t) out[t * out_stride] = HsumPs(accf[t]);
}

// The entry point of type T: ntok tokens against one weight row.
template <typename T>
void Dot(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    DotIq<T, NT>(static_cast<const typename T::Block*>(w), static_cast<const uint8_t*>(a), s, n / kQK_K, o, os);
  });
}

}  // namespace

void DotIQ2XXS_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  Dot<IQ2XXS>(w, a, s, ntok, n, o, os);
}
void DotIQ2XS_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  Dot<IQ2XS>(w, a, s, ntok, n, o, os);
}
void DotIQ2S_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  Dot<IQ2S>(w, a, s, ntok, n, o, os);
}
void DotIQ3XXS_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  Dot<IQ3XXS>(w, a, s, ntok, n, o, os);
}
void DotIQ3S_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  Dot<IQ3S>(w, a, s, ntok, n, o, os);
}
void DotIQ1S_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  Dot<IQ1S>(w, a, s, ntok, n, o, os);
}
void DotIQ1M_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  Dot<IQ1M>(w, a, s, ntok, n, o, os);
}

}  // namespace QWENRT_CPU_NAMESPACE
#endif  // QWENRT_X86_DOT
