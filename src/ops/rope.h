// Partial rotary position embedding of the attention q/k heads (docs/spec/qwen35-architecture.md
// §8.1), NEOX pairing (i, i + R/2) over the first R dims of each head; dims >= R pass through.
// IMROPE sections arrive as a per-pair flag: a pair outside the text section sees position 0 (the
// identity).
//
// YaRN (docs/spec/qwen35-architecture.md §8.4; transformers' "yarn" rope_type, llama.cpp's
// rope_yarn): pair i's angle blends the interpolated theta * freq_scale and the extrapolated theta
// with ramp_mix = (1 - clamp((i - corr_low) / max(0.001, corr_high - corr_low), 0, 1)) *
// ext_factor, and cos/sin are multiplied by mscale. The high-frequency pairs (i < corr_low) keep
// their angle, the low-frequency ones (i > corr_high) are interpolated by freq_scale = 1 / factor.
// Static: the same blend at every position, short prompts included.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "ops/cpu_namespace.h"

namespace qwenrt {

// YaRN's constants for one model; ext_factor 0 = off (the plain angle theta * freq_scale, cos/sin
// unscaled).
struct Yarn {
  float ext_factor = 0.0f;
  float corr_low = 0.0f, corr_high = 0.0f;  // the ramp's pair range
  float mscale = 1.0f;                      // multiplies cos and sin
};

// transformers' "yarn" rope parameters for `n_dims` rotated dims and rope base `base`: the ramp
// range is the pairs whose wavelength fits beta_fast (-> low) and beta_slow (-> high) times into
// the training context `n_ctx_orig`, floored / ceiled and clamped to [0, n_dims - 1] (transformers'
// find_correction_range with truncate, llama.cpp's ggml_rope_yarn_corr_dims); mscale =
// attn_factor when it is > 0, else 0.1 ln(factor) + 1 (transformers' get_mscale). The caller sets
// freq_scale = 1 / factor.
inline Yarn YarnFor(int64_t n_dims, float base, float factor, int64_t n_ctx_orig, float beta_fast,
                    float beta_slow, float attn_factor, float ext_factor) {
  // In double, as transformers computes it in Python floats: the floor / ceil then agree.
  const auto dim_of = [&](double rotations) {
    return static_cast<double>(n_dims) *
           std::log(static_cast<double>(n_ctx_orig) / (rotations * 2.0 * 3.141592653589793)) /
           (2.0 * std::log(static_cast<double>(base)));
  };
  Yarn y;
  y.ext_factor = ext_factor;
  y.corr_low = static_cast<float>(std::max(0.0, std::floor(dim_of(beta_fast))));
  y.corr_high =
      static_cast<float>(std::min(static_cast<double>(n_dims - 1), std::ceil(dim_of(beta_slow))));
  y.mscale = attn_factor > 0.0f ? attn_factor : 0.1f * std::log(factor) + 1.0f;
  return y;
}

// theta_i = p * freq_scale * base^(-2i/R), computed iteratively in f32 as llama.cpp CPU does.
struct RopeParams {
  int64_t n_dims = 0;  // R
  float base = 10000.0f;
  float freq_scale = 1.0f;
  const std::vector<bool>* pair_uses_pos = nullptr;  // [R/2]; false: pair sees position 0
  Yarn yarn;
};

// The rotation of pair i whose extrapolated angle is `theta` (pos * base^(-2i/R)): cos and sin as
// ref::Rope and cpu::Rope both apply them, so the two stay bit-identical. rotate = false: position
// 0 (angle 0; YaRN's mscale still applies, as in transformers and llama.cpp).
inline void RopePairCosSin(const RopeParams& p, int64_t i, float theta, bool rotate, float* c,
                           float* s) {
  const Yarn& y = p.yarn;
  if (y.ext_factor == 0.0f) {
    const float angle = rotate ? theta * p.freq_scale : 0.0f;
    *c = std::cos(angle);
    *s = std::sin(angle);
    return;
  }
  const float r = (static_cast<float>(i) - y.corr_low) / std::max(0.001f, y.corr_high - y.corr_low);
  const float ramp_mix = (1.0f - std::min(1.0f, std::max(0.0f, r))) * y.ext_factor;
  const float interp = theta * p.freq_scale;
  const float angle = rotate ? interp * (1.0f - ramp_mix) + theta * ramp_mix : 0.0f;
  *c = std::cos(angle) * y.mscale;
  *s = std::sin(angle) * y.mscale;
}

namespace ref {
// Rotates each head of x in place at positions pos0 + t.  x: [T, heads, Dh]
void Rope(float* x, int64_t T, int64_t heads, int64_t Dh, int64_t pos0, const RopeParams& p);
}  // namespace ref

}  // namespace qwenrt

namespace QWENRT_CPU_NAMESPACE {
// As ref::Rope, tokens split over `pool`, each token's (cos, sin) table computed once for all its
// heads with ref's operations: bit-identical to ref.
void Rope(float* x, int64_t T, int64_t heads, int64_t Dh, int64_t pos0, const RopeParams& p,
          ThreadPool& pool);
}  // namespace QWENRT_CPU_NAMESPACE
