// Element-wise activations of the forward pass: the scalar functions every backend shares (so the
// CUDA device versions can be written with the same operations), and the array ops built on them:
// residual add, SwiGLU (the FFN's and, fused into GatedRmsNorm, the GDN output gate's) and the
// sigmoid output gate of full attention. Norms are in norm.h, MoE combines in moe.h.
//
// Each output element depends only on the same element of the inputs, so results never depend on
// how many rows a call covers (prefill == token-by-token decode, bit for bit).
#pragma once

#include <cmath>
#include <cstdint>

#include "base/thread_pool.h"
#include "ops/cpu_namespace.h"

namespace qwenrt {

inline float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
inline float Silu(float x) { return x / (1.0f + std::exp(-x)); }
inline float Softplus(float x) { return x > 20.0f ? x : std::log(1.0f + std::exp(x)); }  // as ggml

namespace ref {
// x += y.                                 x, y: [n]
void Add(float* x, const float* y, int64_t n);
// x = silu(x).                            x: [n]
void Silu(float* x, int64_t n);
// up = silu(gate) * up.                   gate, up: [n]
void SwiGlu(const float* gate, float* up, int64_t n);
// x[r][c] *= sigmoid(gate[r * gate_stride + c]).   x: [rows, n]; gate rows `gate_stride` apart
// (gate_stride = n for a contiguous gate; 2*Dh to read the attention gate in place from the joint
// q/gate projection [T, H, 2, Dh]).
void MulSigmoid(float* x, const float* gate, int64_t rows, int64_t n, int64_t gate_stride);
}  // namespace ref

}  // namespace qwenrt

namespace QWENRT_CPU_NAMESPACE {
// The same contracts, split over `pool` in contiguous pieces, each computed by the ref loop
// (vectorised by the compiler where it can be): bit-identical to ref.
void Add(float* x, const float* y, int64_t n, ThreadPool& pool);
void SwiGlu(const float* gate, float* up, int64_t n, ThreadPool& pool);
void MulSigmoid(float* x, const float* gate, int64_t rows, int64_t n, int64_t gate_stride,
                ThreadPool& pool);
}  // namespace QWENRT_CPU_NAMESPACE
