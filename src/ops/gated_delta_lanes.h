// The per-column work of the CUDA token-serial gated delta rule
// (src/ops/cuda/gated_delta_recurrent.cu), written once for a warp whose lanes are either real (on
// the GPU: this thread is one lane and the sums are shuffle reductions) or emulated (on the CPU:
// all 32 lanes in arrays, plain sums). The kernel and tests/ops_cuda_test.cpp run the same code, so
// the state layout, head mapping and update order are checked against ref::GatedDelta on machines
// without a GPU. No CUDA headers.
//
// One warp owns column j of value head h's state S_h (Dk x Dv, stored [Hv, Dv, Dk]: the column is
// contiguous at state + (h*Dv + j)*Dk) for the whole sequence; lane l keeps S[i][j] for
// i = l + 32p, p < kPerLane, in registers. Per token t (key head hk = h % Hk):
//   S[:, j] *= exp(g[t,h]);  r = beta[t,h] * (v[t,h,j] - S[:, j] . k[t,hk]);
//   S[:, j] += r * k[t,hk];  out[t,h,j] = S[:, j] . q[t,hk]
#pragma once

#include <cmath>
#include <cstdint>

#include "ops/gated_delta.h"
#include "ops/quant_lanes.h"  // QWENRT_HD, kLanes

namespace qwenrt::lanes {

// Warp = { static constexpr int kHere;  int Lane(int i) const;  float Sum(const float* part) const;
// } kHere lanes are computed by this thread (1 on the GPU, 32 in the CPU emulation); Sum adds the
// kHere partials of this thread and returns the total over the 32 lanes of the warp.
template <int kPerLane, typename Warp>
QWENRT_HD void GatedDeltaColumn(const Warp& warp, const GatedDeltaShape& sh, int64_t h, int64_t j,
                                const float* __restrict__ q, const float* __restrict__ k,
                                const float* __restrict__ v, const float* __restrict__ g,
                                const float* __restrict__ beta, float* __restrict__ state,
                                float* __restrict__ out) {
  constexpr int kHere = Warp::kHere;
  const int64_t Dk = sh.Dk, Dv = sh.Dv, Hk = sh.Hk, Hv = sh.Hv;
  const int64_t hk = h % Hk;
  float* col = state + (h * Dv + j) * Dk;
  float s[kHere][kPerLane];
  for (int a = 0; a < kHere; ++a) {
    for (int p = 0; p < kPerLane; ++p) {
      const int64_t i = warp.Lane(a) + p * kLanes;
      s[a][p] = i < Dk ? col[i] : 0.0f;
    }
  }
  for (int64_t t = 0; t < sh.T; ++t) {
    const float* kt = k + (t * Hk + hk) * Dk;
    const float* qt = q + (t * Hk + hk) * Dk;
    const float alpha = expf(g[t * Hv + h]);
    const float b = beta[t * Hv + h];
    const float vj = v[(t * Hv + h) * Dv + j];
    float kr[kHere][kPerLane], qr[kHere][kPerLane], part[kHere];
    for (int a = 0; a < kHere; ++a) {
      part[a] = 0.0f;
      for (int p = 0; p < kPerLane; ++p) {
        const int64_t i = warp.Lane(a) + p * kLanes;
        kr[a][p] = i < Dk ? kt[i] : 0.0f;
        qr[a][p] = i < Dk ? qt[i] : 0.0f;
        s[a][p] *= alpha;
        part[a] += s[a][p] * kr[a][p];
      }
    }
    const float r = b * (vj - warp.Sum(part));
    for (int a = 0; a < kHere; ++a) {
      part[a] = 0.0f;
      for (int p = 0; p < kPerLane; ++p) {
        s[a][p] += kr[a][p] * r;
        part[a] += s[a][p] * qr[a][p];
      }
    }
    const float o = warp.Sum(part);
    if (warp.Lane(0) == 0) out[(t * Hv + h) * Dv + j] = o;
  }
  for (int a = 0; a < kHere; ++a) {
    for (int p = 0; p < kPerLane; ++p) {
      const int64_t i = warp.Lane(a) + p * kLanes;
      if (i < Dk) col[i] = s[a][p];
    }
  }
}

// The CPU emulation of a warp: all 32 lanes in this thread.
struct EmulatedWarp {
  static constexpr int kHere = kLanes;
  QWENRT_HD int Lane(int i) const { return i; }
  QWENRT_HD float Sum(const float* part) const {
    float total = 0.0f;
    for (int i = 0; i < kLanes; ++i) total += part[i];
    return total;
  }
};

// ref::GatedDelta computed column by column through GatedDeltaColumn with emulated warps (Dk <=
// 256).
inline void EmulateGatedDeltaRecurrent(const GatedDeltaShape& sh, const float* q, const float* k,
                                       const float* v, const float* g, const float* beta,
                                       float* state, float* out) {
  const EmulatedWarp warp;
  for (int64_t h = 0; h < sh.Hv; ++h) {
    for (int64_t j = 0; j < sh.Dv; ++j) {
      switch ((sh.Dk + kLanes - 1) / kLanes) {
        case 1:
          GatedDeltaColumn<1>(warp, sh, h, j, q, k, v, g, beta, state, out);
          break;
        case 2:
          GatedDeltaColumn<2>(warp, sh, h, j, q, k, v, g, beta, state, out);
          break;
        case 3:
          GatedDeltaColumn<3>(warp, sh, h, j, q, k, v, g, beta, state, out);
          break;
        case 4:
          GatedDeltaColumn<4>(warp, sh, h, j, q, k, v, g, beta, state, out);
          break;
        default:
          GatedDeltaColumn<8>(warp, sh, h, j, q, k, v, g, beta, state, out);
          break;
      }
    }
  }
}

}  // namespace qwenrt::lanes
