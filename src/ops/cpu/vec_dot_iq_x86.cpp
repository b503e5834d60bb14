// AVX2 (+ VNNI where the build targets it) multi-token dot kernels of the grid i-quants against
// Q8_K.
//
// Every type is brought to one shape per 32-element chunk of a super-block:
//   wa: 32 unsigned weight magnitudes (u8; grid values <= 62, IQ1's |8 grid +- 1| <= 9)
//   sv: 32 bytes whose sign is the weight's sign (never zero)
//   sc: 16 x i16 group scales (2 ls + 1, per 16 or 32 elements)
// and for each token: acc += madd(maddubs(wa, sign(q_act, sv)), sc) -- exact i32 (maddubs pair sums
// are
// <= 2 * 62 * 127 < 2^15, so it never saturates). Per super-block and token one float fmadd of
// acc * d * d_act * factor, where factor is the type's power of two (ref/vec_dot_iq.cpp): results
// differ from ref:: only by float summation order. The weights are unpacked once per chunk for up
// to kMaxDotTokens tokens.
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
  const __m256i rep = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(bits)),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
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
  return _mm256_set_epi64x(static_cast<int64_t>(t[i3]), static_cast<int64_t>(t[i2]),
                           static_cast<int64_t>(t[i1]), static_cast<int64_t>(t[i0]));
}

// i16 scales: low 128-bit lane (elements 0-15) = lo, high lane (16-31) = hi.
inline __m256i Scales16(int lo, int hi) {
  return _mm256_set_m128i(_mm_set1_epi16(static_cast<short>(hi)),
                          _mm_set1_epi16(static_cast<short>(lo)));
}

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
    return {Grid8x4(t, idx & 0xFF, (idx >> 8) & 0xFF, (idx >> 16) & 0xFF, idx >> 24),
            SignsPM(KSigns4(aux)), _mm256_set1_epi16(static_cast<short>(s))};
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
    return {Grid8x4(iq::kIq2sGrid, q[0] | ((h & 3) << 8), q[1] | ((h & 0x0C) << 6),
                    q[2] | ((h & 0x30) << 4), q[3] | ((h & 0xC0) << 2)),
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
    const __m256i grid = _mm256_set_epi32(static_cast<int>(t[q[7]]), static_cast<int>(t[q[6]]),
                                          static_cast<int>(t[q[5]]), static_cast<int>(t[q[4]]),
                                          static_cast<int>(t[q[3]]), static_cast<int>(t[q[2]]),
                                          static_cast<int>(t[q[1]]), static_cast<int>(t[q[0]]));
    return {grid, SignsPM(KSigns4(aux)),
            _mm256_set1_epi16(static_cast<short>(2 * (aux >> 28) + 1))};
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
    return {grid, SignsPM(LoadU32(b.signs + 4 * g)),
            _mm256_set1_epi16(static_cast<short>(2 * s + 1))};
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
    Iq1Chunk(Grid8x4(iq::kIq1sGrid, q[0] | ((h & 7) << 8), q[1] | ((h & 0x38) << 5),
                     q[2] | ((h & 0x1C0) << 2), q[3] | ((h & 0xE00) >> 1)),
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
    Iq1Chunk(Grid8x4(iq::kIq1sGrid, q[0] | ((h0 & 7) << 8), q[1] | ((h0 & 0x70) << 4),
                     q[2] | ((h1 & 7) << 8), q[3] | ((h1 & 0x70) << 4)),
             _mm256_set_epi64x(h1 & 0x80 ? kMinus : kPlus, h1 & 0x08 ? kMinus : kPlus,
                               h0 & 0x80 ? kMinus : kPlus, h0 & 0x08 ? kMinus : kPlus),
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
    DotIq<T, NT>(static_cast<const typename T::Block*>(w), static_cast<const uint8_t*>(a), s,
                 n / kQK_K, o, os);
  });
}

#if defined(__AVX512BW__) && defined(__AVX512VNNI__)
// GCC 12's AVX-512 headers start the gathers and conversions from an "undefined" register it then
// reports as maybe uninitialized (a false positive; as in packed_tile_x86.h).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// AVX-512: a super-block in four steps of 64 elements. A step's grid rows come by one gather
// (instead of a scalar load and insert per row), its signs are a mask that negates the activation
// bytes, and its scales are shifted out of the packed fields in one vector op. The integer sums are
// those of the 32-element chunks above (maddubs never saturates for the same reason); the float
// combine is one fmadd per super-block and token, so every token count gives the same bits.
struct Step {
  __m512i wa;     // 64 unsigned weight magnitudes
  __mmask64 neg;  // bit j: element j negative
  __m512i sc;     // 32 x i16 scales, lane j for elements 2j, 2j + 1
};

// Lane j of 32 x i16 = 2 * ((bits >> shift_j) & mask) + 1.
inline __m512i OddScales(uint32_t bits, __m512i shifts, int mask) {
  const __m512i s =
      _mm512_and_si512(_mm512_srlv_epi16(_mm512_set1_epi16(static_cast<short>(bits)), shifts),
                       _mm512_set1_epi16(static_cast<short>(mask)));
  return _mm512_add_epi16(_mm512_add_epi16(s, s), _mm512_set1_epi16(1));
}
// Shift per lane: one 4-bit field per 32 elements (lanes 0-15: bits 0-3, 16-31: bits 4-7) ...
inline __m512i ShiftsPer32() {
  return _mm512_set_epi64(0x0004000400040004, 0x0004000400040004, 0x0004000400040004,
                          0x0004000400040004, 0, 0, 0, 0);
}
// ... and one 3-bit field per 16 elements (IQ1_M: lanes 8k .. 8k + 7 take bits 3k .. 3k + 2).
inline __m512i ShiftsPer16x3() {
  return _mm512_set_epi64(0x0009000900090009, 0x0009000900090009, 0x0006000600060006,
                          0x0006000600060006, 0x0003000300030003, 0x0003000300030003, 0, 0);
}

struct NoPrep {};

// Per row k of 8: (bits >> shift_k) & mask, as u32 lanes (the high index bits and flags that qh
// packs).
inline __m256i Fields8(uint32_t bits, __m256i shifts, int mask) {
  return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(bits)), shifts),
                          _mm256_set1_epi32(mask));
}
// 8 grid indices: the low bytes q8[0..7] | hi << 8.
inline __m256i Indices8(const uint8_t* q8, __m256i hi) {
  return _mm256_or_si256(
      _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q8))),
      _mm256_slli_epi32(hi, 8));
}

// Each byte (a 7-bit sign index, < 128) completed by its parity in bit 7: kKSigns[i] = i |
// parity(i) << 7, computed instead of looked up.
inline __m256i WithParity(__m256i f) {
  const __m256i parity = _mm256_broadcastsi128_si256(
      _mm_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0));
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  return _mm256_or_si256(
      f,
      _mm256_xor_si256(_mm256_shuffle_epi8(parity, _mm256_and_si256(f, m4)),
                       _mm256_shuffle_epi8(parity, _mm256_and_si256(_mm256_srli_epi16(f, 4), m4))));
}

// The 256 sign bits of a super-block whose 8 chunks each have an aux word of four 7-bit sign
// indices (bits 7l .. 7l + 6, for elements 8l .. 8l + 7 of the chunk) and the 4-bit scale in bits
// 28-31 (IQ2_XXS, IQ3_XXS). bits[h] = the signs of step h, aux[g] = chunk g's word.
struct AuxSigns {
  alignas(32) uint64_t bits[4];
  alignas(32) uint32_t aux[8];
  // Step h's two 4-bit chunk scales, low nibble first.
  uint32_t Scales(int h) const { return (aux[2 * h] >> 28) | ((aux[2 * h + 1] >> 28) << 4); }
};
inline AuxSigns SignsOfAux(__m256i aux) {
  __m256i f = _mm256_and_si256(aux, _mm256_set1_epi32(0x7F));  // field l -> byte l
  f = _mm256_or_si256(f, _mm256_and_si256(_mm256_slli_epi32(aux, 1), _mm256_set1_epi32(0x7F00)));
  f = _mm256_or_si256(f, _mm256_and_si256(_mm256_slli_epi32(aux, 2), _mm256_set1_epi32(0x7F0000)));
  f = _mm256_or_si256(f,
                      _mm256_and_si256(_mm256_slli_epi32(aux, 3), _mm256_set1_epi32(0x7F000000)));
  AuxSigns s;
  _mm256_store_si256(reinterpret_cast<__m256i*>(s.bits), WithParity(f));
  _mm256_store_si256(reinterpret_cast<__m256i*>(s.aux), aux);
  return s;
}

// Shift per lane: one 4-bit field per 16 elements (IQ2_XS, IQ2_S: lanes 8k .. 8k + 7 take bits 4k
// .. 4k + 3).
inline __m512i ShiftsPer16x4() {
  return _mm512_set_epi64(0x000C000C000C000C, 0x000C000C000C000C, 0x0008000800080008,
                          0x0008000800080008, 0x0004000400040004, 0x0004000400040004, 0, 0);
}

struct IQ2XXS64 {
  using Block = BlockIQ2XXS;
  static constexpr float kFactor = 0.125f;
  static uint16_t D(const Block& b) { return b.d; }
  static AuxSigns Prepare(const Block& b) {
    const __m512i w = _mm512_loadu_si512(b.qs);  // per chunk: index word, aux word
    return SignsOfAux(_mm512_cvtepi64_epi32(_mm512_srli_epi64(w, 32)));
  }
  static Step Get(const Block& b, const AuxSigns& s, int h) {
    const uint8_t* q = reinterpret_cast<const uint8_t*>(b.qs) + 16 * h;  // chunks 2h, 2h + 1
    const uint64_t rows = iq::LoadU32(q) | (static_cast<uint64_t>(iq::LoadU32(q + 8)) << 32);
    const __m256i idx = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(rows)));
    return {_mm512_i32gather_epi64(idx, iq::kIq2xxsGrid, 8), _cvtu64_mask64(s.bits[h]),
            OddScales(s.Scales(h), ShiftsPer32(), 15)};
  }
};

struct IQ2XS64 {
  using Block = BlockIQ2XS;
  static constexpr float kFactor = 0.125f;
  static uint16_t D(const Block& b) { return b.d; }
  static NoPrep Prepare(const Block&) { return {}; }
  static Step Get(const Block& b, NoPrep, int h) {
    const __m256i q =
        _mm256_cvtepu16_epi32(Load128(b.qs + 8 * h));  // 8 rows: index | sign index << 9
    const __m256i idx = _mm256_and_si256(q, _mm256_set1_epi32(511));
    const __m256i signs = WithParity(_mm256_srli_epi32(q, 9));
    const uint64_t neg = static_cast<uint64_t>(_mm_cvtsi128_si64(_mm256_cvtepi32_epi8(signs)));
    return {_mm512_i32gather_epi64(idx, iq::kIq2xsGrid, 8), _cvtu64_mask64(neg),
            OddScales(iq::LoadU16(b.scales + 2 * h), ShiftsPer16x4(), 15)};
  }
};

struct IQ2S64 {
  using Block = BlockIQ2S;
  static constexpr float kFactor = 0.125f;
  static uint16_t D(const Block& b) { return b.d; }
  static NoPrep Prepare(const Block&) { return {}; }
  static Step Get(const Block& b, NoPrep, int h) {
    const __m256i hi =
        Fields8(iq::LoadU16(b.qh + 2 * h), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14), 3);
    const __m256i idx = Indices8(b.qs + 8 * h, hi);
    return {_mm512_i32gather_epi64(idx, iq::kIq2sGrid, 8),
            _cvtu64_mask64(iq::LoadU64(b.qs + kQK_K / 8 + 8 * h)),
            OddScales(iq::LoadU16(b.scales + 2 * h), ShiftsPer16x4(), 15)};
  }
};

// IQ1's 8 rows of 8 elements: grid values (-1, 0, 1) as 8 * grid + delta, delta -1 for the rows
// whose bit is set in `minus`, else +1.
inline Step Iq1Step(__m256i idx, __mmask8 minus, __m512i sc) {
  const __m512i grid = _mm512_i32gather_epi64(idx, iq::kIq1sGrid, 8);
  const __m512i delta = _mm512_mask_blend_epi64(minus, _mm512_set1_epi8(1), _mm512_set1_epi8(-1));
  __m512i v = _mm512_add_epi8(grid, grid);
  v = _mm512_add_epi8(v, v);
  v = _mm512_add_epi8(_mm512_add_epi8(v, v), delta);
  return {_mm512_abs_epi8(v), _mm512_movepi8_mask(v), sc};
}

struct IQ1S64 {
  using Block = BlockIQ1S;
  static constexpr float kFactor = 0.125f;
  static uint16_t D(const Block& b) { return b.d; }
  static NoPrep Prepare(const Block&) { return {}; }
  static Step Get(const Block& b, NoPrep, int h) {
    const uint32_t w0 = b.qh[2 * h], w1 = b.qh[2 * h + 1];  // chunks 2h, 2h + 1: rows 0-3, 4-7
    const __m256i hi = Fields8(w0 | (w1 << 16), _mm256_setr_epi32(0, 3, 6, 9, 16, 19, 22, 25), 7);
    const __m256i idx = Indices8(b.qs + 8 * h, hi);
    const auto minus = static_cast<__mmask8>((w0 & 0x8000 ? 0x0F : 0) | (w1 & 0x8000 ? 0xF0 : 0));
    return Iq1Step(idx, minus,
                   OddScales(((w0 >> 12) & 7) | (((w1 >> 12) & 7) << 4), ShiftsPer32(), 15));
  }
};

struct IQ3S64 {
  using Block = BlockIQ3S;
  static constexpr float kFactor = 1.0f;
  static uint16_t D(const Block& b) { return b.d; }
  static NoPrep Prepare(const Block&) { return {}; }
  static Step Get(const Block& b, NoPrep, int h) {
    __m512i idx = _mm512_cvtepu8_epi32(Load128(b.qs + 16 * h));  // 16 rows of 4 elements
    idx = _mm512_mask_or_epi32(idx, _cvtu32_mask16(iq::LoadU16(b.qh + 2 * h)), idx,
                               _mm512_set1_epi32(256));
    return {_mm512_i32gather_epi32(idx, iq::kIq3sGrid, 4),
            _cvtu64_mask64(iq::LoadU64(b.signs + 8 * h)),
            OddScales(b.scales[h], ShiftsPer32(), 15)};
  }
};

struct IQ3XXS64 {
  using Block = BlockIQ3XXS;
  static constexpr float kFactor = 0.25f;
  static uint16_t D(const Block& b) { return b.d; }
  static AuxSigns Prepare(const Block& b) { return SignsOfAux(Load256(b.qs + kQK_K / 4)); }
  static Step Get(const Block& b, const AuxSigns& s, int h) {
    const __m512i idx = _mm512_cvtepu8_epi32(Load128(b.qs + 16 * h));
    return {_mm512_i32gather_epi32(idx, iq::kIq3xxsGrid, 4), _cvtu64_mask64(s.bits[h]),
            OddScales(s.Scales(h), ShiftsPer32(), 15)};
  }
};

struct IQ1M64 {
  using Block = BlockIQ1M;
  static constexpr float kFactor = 0.125f;
  static uint16_t D(const Block& b) { return iq::Iq1mD(b); }
  static NoPrep Prepare(const Block&) { return {}; }
  static Step Get(const Block& b, NoPrep, int h) {
    // Rows 8h .. 8h + 7 of 8 elements: nibble k of qh[4h ..] holds index bits 8-10 and, in bit 3,
    // the sign of the row's delta.
    const __m256i nib =
        Fields8(iq::LoadU32(b.qh + 4 * h), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28), 15);
    const __m256i idx = Indices8(b.qs + 8 * h, _mm256_and_si256(nib, _mm256_set1_epi32(7)));
    return Iq1Step(idx, _mm256_test_epi32_mask(nib, _mm256_set1_epi32(8)),
                   OddScales(iq::LoadU16(b.scales + 2 * h), ShiftsPer16x3(), 7));
  }
};

template <typename T, int NT>
void DotIq64(const typename T::Block* x, const uint8_t* a, size_t a_stride, int64_t nb, float* out,
             int64_t out_stride) {
  const BlockQ8K* y[NT];
  for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8K*>(a + t * a_stride);
  __m512 accf[NT];
  for (int t = 0; t < NT; ++t) accf[t] = _mm512_setzero_ps();
  const __m512i zero = _mm512_setzero_si512();
  for (int64_t b = 0; b < nb; ++b) {
    const auto prep = T::Prepare(x[b]);
    __m512i acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = zero;
    for (int h = 0; h < 4; ++h) {
      const Step s = T::Get(x[b], prep, h);
      for (int t = 0; t < NT; ++t) {
        const __m512i q = _mm512_loadu_si512(y[t][b].qs + 64 * h);
        const __m512i qa = _mm512_mask_sub_epi8(q, s.neg, zero, q);
        acc[t] = _mm512_dpwssd_epi32(acc[t], _mm512_maddubs_epi16(s.wa, qa), s.sc);
      }
    }
    const float d = Half(T::D(x[b])) * T::kFactor;
    for (int t = 0; t < NT; ++t) {
      accf[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[t]), _mm512_set1_ps(d * y[t][b].d), accf[t]);
    }
  }
  for (int t = 0; t < NT; ++t) out[t * out_stride] = _mm512_reduce_add_ps(accf[t]);
}

template <typename T>
void Dot64(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    DotIq64<T, NT>(static_cast<const typename T::Block*>(w), static_cast<const uint8_t*>(a), s,
                   n / kQK_K, o, os);
  });
}
// A type's kernel on this level: the 64-element steps, or the 32-element chunks.
#define QWENRT_IQ_DOT(T) Dot64<T##64>(w, a, s, ntok, n, o, os)
#else
#define QWENRT_IQ_DOT(T) Dot<T>(w, a, s, ntok, n, o, os)
#endif

}  // namespace

void DotIQ2XXS_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o,
                   int64_t os) {
  QWENRT_IQ_DOT(IQ2XXS);
}
void DotIQ2XS_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o,
                  int64_t os) {
  QWENRT_IQ_DOT(IQ2XS);
}
void DotIQ2S_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o,
                 int64_t os) {
  QWENRT_IQ_DOT(IQ2S);
}
void DotIQ3XXS_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o,
                   int64_t os) {
  QWENRT_IQ_DOT(IQ3XXS);
}
void DotIQ3S_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o,
                 int64_t os) {
  QWENRT_IQ_DOT(IQ3S);
}
void DotIQ1S_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o,
                 int64_t os) {
  QWENRT_IQ_DOT(IQ1S);
}
void DotIQ1M_Q8K(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o,
                 int64_t os) {
  QWENRT_IQ_DOT(IQ1M);
}

}  // namespace QWENRT_CPU_NAMESPACE
#endif  // QWENRT_X86_DOT
