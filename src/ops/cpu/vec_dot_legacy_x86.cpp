// AVX2 multi-token dot kernels of the 32-element block types against Q8_0 activations (vec_dot.h).
//
// Each weight block is decoded once into 32 int8 values w, then for every token:
//   signed values (Q4_0, Q5_0, IQ4_NL, MXFP4): s = dot(|w| as u8, a * sign(w))   (exact i32 sums)
//   unsigned values (Q4_1, Q5_1):              s = dot(w, a), plus dot(1, a) for the min term
// and accf += float(s) * scale_w * fp16(d_a) (+ float(sum a) * fp16(m) * fp16(d_a)), one horizontal
// sum per row at the end. Integer sums equal ref::VecDot*_Q8_0's, so results differ only by float
// summation order. Without AVX2 the kernels are the scalar loops of vec_dot_scalar.cpp.
#include "ops/cpu_namespace.h"
#include "ops/vec_dot.h"

#if QWENRT_X86_DOT
#include "ops/cpu/dot_dispatch.h"
#include "ops/cpu/x86_int_dot.h"

namespace QWENRT_CPU_NAMESPACE {
namespace {

using namespace x86;

// A decoded block: 32 int8 weight values, their scale, and (kHasMin) the min added to every
// element.
struct Decoded {
  __m256i w;
  float d;
  float m;
};

struct Q4_0 {
  using Block = BlockQ4_0;
  static constexpr bool kHasMin = false;
  static Decoded Decode(const Block& b) {
    return {_mm256_sub_epi8(Nibbles32(b.qs), _mm256_set1_epi8(8)), Half(b.d), 0.f};
  }
};
struct Q4_1 {
  using Block = BlockQ4_1;
  static constexpr bool kHasMin = true;
  static Decoded Decode(const Block& b) { return {Nibbles32(b.qs), Half(b.d), Half(b.m)}; }
};
inline __m256i FiveBits(const uint8_t* qs, const uint8_t* qh) {
  uint32_t bits;
  __builtin_memcpy(&bits, qh, 4);
  return _mm256_or_si256(Nibbles32(qs),
                         _mm256_and_si256(BitsToBytes(bits), _mm256_set1_epi8(0x10)));
}
struct Q5_0 {
  using Block = BlockQ5_0;
  static constexpr bool kHasMin = false;
  static Decoded Decode(const Block& b) {
    return {_mm256_sub_epi8(FiveBits(b.qs, b.qh), _mm256_set1_epi8(16)), Half(b.d), 0.f};
  }
};
struct Q5_1 {
  using Block = BlockQ5_1;
  static constexpr bool kHasMin = true;
  static Decoded Decode(const Block& b) { return {FiveBits(b.qs, b.qh), Half(b.d), Half(b.m)}; }
};
inline __m256i Table(const int8_t (&values)[16]) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(values)));
}
struct IQ4NL {
  using Block = BlockIQ4NL;
  static constexpr bool kHasMin = false;
  static Decoded Decode(const Block& b) {
    return {_mm256_shuffle_epi8(Table(kIq4Values), Nibbles32(b.qs)), Half(b.d), 0.f};
  }
};
struct MXFP4 {
  using Block = BlockMXFP4;
  static constexpr bool kHasMin = false;
  static Decoded Decode(const Block& b) {
    return {_mm256_shuffle_epi8(Table(kMxfp4Values), Nibbles32(b.qs)), E8M0ToFp32Half(b.e), 0.f};
  }
};

template <class T, int NT>
void Dot32(const typename T::Block* x, const uint8_t* a, size_t a_stride, int64_t nb, float* out,
           int64_t out_stride) {
  const BlockQ8_0* y[NT];
  for (int t = 0; t < NT; ++t) y[t] = reinterpret_cast<const BlockQ8_0*>(a + t * a_stride);
  __m256 accf[NT];
  for (int t = 0; t < NT; ++t) accf[t] = _mm256_setzero_ps();
  const __m256i ones = _mm256_set1_epi8(1);
  for (int64_t b = 0; b < nb; ++b) {
    const Decoded blk = T::Decode(x[b]);
    // Signed values: |w| (no -128 occurs: the smallest value is -127) and a * sign(w). Unsigned
    // ones are used as they are. Either way |u| <= 127, so maddubs' pair sums cannot saturate.
    const __m256i u = T::kHasMin ? blk.w : _mm256_sign_epi8(blk.w, blk.w);
    for (int t = 0; t < NT; ++t) {
      const __m256i qa = Load256(y[t][b].qs);
      const __m256i s = DotU8S8(u, T::kHasMin ? qa : _mm256_sign_epi8(qa, blk.w));
      const float da = Half(y[t][b].d);
      accf[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(blk.d * da), accf[t]);
      if constexpr (T::kHasMin) {
        const __m256i sa = DotU8S8(ones, qa);
        accf[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sa), _mm256_set1_ps(blk.m * da), accf[t]);
      }
    }
  }
  for (int t = 0; t < NT; ++t) out[t * out_stride] = HsumPs(accf[t]);
}

// The entry point of type T: ntok tokens against one weight row.
template <class T>
void Dot(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o, int64_t os) {
  ForNtok(ntok, [&]<int NT>() {
    Dot32<T, NT>(static_cast<const typename T::Block*>(w), static_cast<const uint8_t*>(a), s,
                 n / kQK4_0, o, os);
  });
}

}  // namespace

void DotQ4_0_Q8_0(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o,
                  int64_t os) {
  Dot<Q4_0>(w, a, s, ntok, n, o, os);
}
void DotQ4_1_Q8_0(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o,
                  int64_t os) {
  Dot<Q4_1>(w, a, s, ntok, n, o, os);
}
void DotQ5_0_Q8_0(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o,
                  int64_t os) {
  Dot<Q5_0>(w, a, s, ntok, n, o, os);
}
void DotQ5_1_Q8_0(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o,
                  int64_t os) {
  Dot<Q5_1>(w, a, s, ntok, n, o, os);
}
void DotIQ4NL_Q8_0(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o,
                   int64_t os) {
  Dot<IQ4NL>(w, a, s, ntok, n, o, os);
}
void DotMXFP4_Q8_0(const void* w, const void* a, size_t s, int ntok, int64_t n, float* o,
                   int64_t os) {
  Dot<MXFP4>(w, a, s, ntok, n, o, os);
}

}  // namespace QWENRT_CPU_NAMESPACE
#endif  // QWENRT_X86_DOT
