// The float rows x tokens tile (float_rows.h) with AVX-512: 1 or 4 rows x up to 6 tokens, one
// 16-lane accumulator per (row, token), the last n % 16 elements by masked loads into the same
// accumulators, one horizontal sum at the end. Other levels answer null (their per-row DotFloat of
// vec_dot_x86.cpp / vec_dot_scalar.cpp serves).
#include <algorithm>

#include "ops/cpu/dot_dispatch.h"
#include "ops/cpu/float_rows.h"
#include "ops/vec_dot.h"

#if QWENRT_X86_DOT && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include <immintrin.h>
#define QWENRT_FLOAT_ROWS 1
// GCC 12's AVX-512 headers start some conversions from an "undefined" register it then reports as
// maybe uninitialized (a false positive; as in packed_tile_x86.h).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#else
#define QWENRT_FLOAT_ROWS 0
#endif

namespace QWENRT_CPU_NAMESPACE {
#if QWENRT_FLOAT_ROWS
namespace {

// 16 weights from element i of row p as f32; the masked form reads only the lanes of m.
struct F32 {
  static __m512 Load(const uint8_t* p, int64_t i) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(p) + i);
  }
  static __m512 Load(const uint8_t* p, int64_t i, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(p) + i);
  }
};
struct F16 {
  static __m512 Load(const uint8_t* p, int64_t i) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(reinterpret_cast<const uint16_t*>(p) + i)));
  }
  static __m512 Load(const uint8_t* p, int64_t i, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(p) + i));
  }
};
struct BF16 {
  static __m512 Widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static __m512 Load(const uint8_t* p, int64_t i) {
    return Widen(_mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(reinterpret_cast<const uint16_t*>(p) + i)));
  }
  static __m512 Load(const uint8_t* p, int64_t i, __mmask16 m) {
    return Widen(_mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(p) + i));
  }
};

// R rows x NT tokens over elements [i0, i1) of n, the tokens from an NT-token panel. The
// accumulators start at zero (i0 == 0) or from keep[r * NT + t], and go back there unless i1 == n,
// where the tail (weights by masked loads, the panel's zero padding) and the horizontal sums end
// them: splitting n into passes leaves every (row, token)'s sequence of FMAs unchanged.
template <typename W, int R, int NT>
void Tile(const uint8_t* w, size_t row_bytes, const float* panel, int64_t i0, int64_t i1, int64_t n,
          __m512* keep, float* out, int64_t out_stride) {
  __m512 acc[R][NT];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < NT; ++t) acc[r][t] = i0 == 0 ? _mm512_setzero_ps() : keep[r * NT + t];
  }
  const auto step = [&](const __m512(&wv)[R], const float* q) {
    for (int t = 0; t < NT; ++t) {
      __m512 xv = _mm512_loadu_ps(q + t * 16);
      // One load per activation vector, kept in a register for the R FMAs: folded into each FMA
      // as a memory operand (GCC's choice) it is loaded R times and the load ports limit the tile.
      asm("" : "+v"(xv));
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  };
  int64_t i = i0;
  for (; i + 16 <= i1; i += 16) {
    __m512 wv[R];
    for (int r = 0; r < R; ++r) wv[r] = W::Load(w + r * row_bytes, i);
    step(wv, panel + i * NT);
  }
  if (i1 < n) {  // a pass of whole steps: i == i1
    for (int r = 0; r < R; ++r) {
      for (int t = 0; t < NT; ++t) keep[r * NT + t] = acc[r][t];
    }
    return;
  }
  if (i < n) {
    const auto m = static_cast<__mmask16>((1u << (n - i)) - 1);
    __m512 wv[R];
    for (int r = 0; r < R; ++r) wv[r] = W::Load(w + r * row_bytes, i, m);
    step(wv, panel + i * NT);
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < NT; ++t) out[t * out_stride + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
}

template <typename W>
void Rows(const uint8_t* w, size_t row_bytes, int nrows, const float* panel, int ntok, int64_t n,
          float* out, int64_t out_stride) {
  ForNtok<kFloatTileTokens>(ntok, [&]<int NT>() {
    // Rows per tile: four share each activation load when there are tokens enough to keep the FMA
    // units busy; at one or two tokens one row at a time streams the weights fastest (measured: F16
    // decode of the 0.8B shape 15.0 t/s with one row, 12.4 with eight rows in flight).
    constexpr int R = NT <= 2 ? 1 : 4;
    // Passes over the elements: with several tokens, 1024 at a time, so the panel's slice (6 x 4
    // KiB) stays in L1 while the tile's rows stream past it; each (row, token) still sums the same
    // way whatever the tile's shape or passes.
    const int64_t pass = NT <= 2 ? n : 1024;
    __m512 keep[16 * kFloatTileTokens];  // nrows <= 16
    for (int64_t i0 = 0; i0 < n; i0 += pass) {
      const int64_t i1 = std::min(n, i0 + pass);
      int r = 0;
      for (; r + R <= nrows; r += R) {
        Tile<W, R, NT>(w + r * row_bytes, row_bytes, panel, i0, i1, n, keep + r * NT, out + r,
                       out_stride);
      }
      for (; r < nrows; ++r) {
        Tile<W, 1, NT>(w + r * row_bytes, row_bytes, panel, i0, i1, n, keep + r * NT, out + r,
                       out_stride);
      }
    }
  });
}

}  // namespace

FloatRowsKernel FloatRowsKernelFor(gguf::Type type) {
  switch (type) {
    case gguf::Type::F32:
      return Rows<F32>;
    case gguf::Type::F16:
      return Rows<F16>;
    case gguf::Type::BF16:
      return Rows<BF16>;
    default:
      return nullptr;
  }
}
#else
FloatRowsKernel FloatRowsKernelFor(gguf::Type) { return nullptr; }
#endif

void PackPanel(const float* x, int64_t x_stride, int ntok, int64_t n, float* panel) {
  const int64_t steps = PanelElems(n) / 16;
  for (int64_t s = 0; s < steps; ++s) {
    for (int t = 0; t < ntok; ++t) {
      float* dst = panel + (s * ntok + t) * 16;
      const int64_t i = s * 16, m = std::min<int64_t>(16, n - i);
      std::copy(x + t * x_stride + i, x + t * x_stride + i + m, dst);
      std::fill(dst + m, dst + 16, 0.0f);
    }
  }
}

}  // namespace QWENRT_CPU_NAMESPACE
