// The causal depthwise convolution + SiLU of a Gated DeltaNet layer
// (docs/spec/qwen35-architecture.md §7 step 4), with its rolling conv state. It runs on the raw qkv
// projections of T tokens, before the split into q, k, v, the L2 norms and the delta rule
// (gated_delta.h).
//
// Math, per channel c and token t (Kc taps; tap Kc-1 multiplies the current token):
//   u_t[c] = sum_{j=0}^{Kc-1} w[c][j] * x_{t-(Kc-1)+j}[c]        (no bias)
//   y_t[c] = SiLU(u_t[c]) = u / (1 + exp(-u))
// where x_tau for tau < 0 comes from the conv state, which holds the Kc-1 inputs before token 0,
// oldest first. Afterwards the state holds the last Kc-1 raw inputs x (not u, not y), taken from
// the old state when T < Kc-1, so running T tokens in pieces equals running them at once.
//
// Layouts (all f32, row-major, contiguous):
//   x     [T, C]       raw inputs (the qkv projection rows, GGUF channel order)
//   w     [C, Kc]      ssm_conv1d weight as stored in GGUF (ne = {Kc, C}): row c = Kc taps
//   state [C, Kc-1]    element (j, c) at c*(Kc-1) + j, oldest first (llama.cpp layout,
//   qwen35-architecture.md §7.1);
//                      zeros at sequence start; updated in place
//   y     [T, C]       outputs; must not alias x
//
// Preconditions (the caller owns the shapes): T >= 0, C >= 1, Kc >= 1, pointers valid for the
// sizes above. T == 0 leaves the state unchanged.
// Memory: nothing is allocated (the CPU version uses small fixed stack buffers).
// Thread safety: any thread, as long as calls sharing a ThreadPool do not overlap.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "ops/cpu_namespace.h"

namespace qwenrt {

struct CausalConvShape {
  int64_t T;   // tokens
  int64_t C;   // channels (2*Hk*Dk + Hv*Dv for a GDN layer)
  int64_t Kc;  // kernel taps (ssm.conv_kernel, 4)
};

namespace ref {
// Scalar, one channel at a time, std::exp. The oracle.
void CausalConvSilu(const CausalConvShape& shape, const float* x, const float* w, float* state,
                    float* y);
}  // namespace ref

}  // namespace qwenrt

namespace QWENRT_CPU_NAMESPACE {
// Multithreaded over channel blocks, SIMD across channels (vectorised exp). Same results as ref
// up to the last bits of exp (relative error < 1e-6).
void CausalConvSilu(const CausalConvShape& shape, const float* x, const float* w, float* state,
                    float* y, ThreadPool& pool);
}  // namespace QWENRT_CPU_NAMESPACE
