// Scalar reference ops of the forward pass (one op per file in src/ref/): no SIMD, no threads, f32
// math with the accumulation choices of llama.cpp's CPU backend (spec §14). Matmul and the delta
// rule live in matmul.h / gated_delta.h. Shapes: rows are contiguous, `[rows, n]` row-major.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace qwenrt {

inline float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
inline float Silu(float x) { return x / (1.0f + std::exp(-x)); }
inline float Softplus(float x) { return x > 20.0f ? x : std::log(1.0f + std::exp(x)); }  // as ggml

// Rotary embedding parameters (spec §8.1): NEOX pairing (i, i + R/2) over the first R dims of each
// head; theta_i = p * freq_scale * base^(-2i/R), computed iteratively in f32 as llama.cpp CPU does.
struct RopeParams {
  int64_t n_dims = 0;     // R
  float base = 10000.0f;
  float freq_scale = 1.0f;
  const std::vector<bool>* pair_uses_pos = nullptr;  // [R/2]; false: pair sees position 0
};

// Full attention shapes: T new queries at positions n_past .. n_past+T-1 over the cache rows
// 0 .. n_past+T-1 (which already hold the new keys/values). Query head h uses KV head h / (H/Hkv).
struct AttentionShape {
  int64_t T, n_past, H, Hkv, Dh;
};

namespace ref {

// y[r] = x[r] * (1 / sqrt(mean(x[r]^2) + eps)) * w      x, y: [rows, n] (may alias); w: [n]
void RmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps);

// x[r] /= max(||x[r]||, eps), in place.                  x: [rows, n]
void L2Norm(float* x, int64_t rows, int64_t n, float eps);

// Rotates each head of x in place at positions pos0 + t.  x: [T, heads, Dh]
void Rope(float* x, int64_t T, int64_t heads, int64_t Dh, int64_t pos0, const RopeParams& p);

// Causal softmax attention with scale 1/sqrt(Dh).
// q: [T, H, Dh]; k, v: [n_past+T, Hkv, Dh] (cache rows); out: [T, H, Dh];
// scores: scratch of at least n_past+T floats.
void Attention(const AttentionShape& s, const float* q, const float* k, const float* v, float* out,
               float* scores);

// Decay and write strength per token and value head (spec §7 steps 2–3):
// g = ssm_a * softplus(alpha + dt_bias) (in place over alpha), beta = sigmoid(beta) (in place).
// alpha, beta: [T, Hv]; ssm_a, dt_bias: [Hv].
void GdnGates(float* alpha, float* beta, const float* ssm_a, const float* dt_bias, int64_t T, int64_t Hv);

// Element-wise helpers, n elements.
void Add(float* x, const float* y, int64_t n);                // x += y
void Silu(float* x, int64_t n);                               // x = silu(x)
void SwiGlu(const float* gate, float* up, int64_t n);         // up = silu(gate) * up
void MulSigmoid(float* x, const float* gate, int64_t n);      // x *= sigmoid(gate)

// MoE routing (spec §9.2 steps 2–4): softmax over the X router logits of each token, top-k in
// descending order, weights renormalised (sum clamped below at 6.103515625e-5).
// logits: [T, X] (overwritten with the probabilities); ids, weights: [T, k].
void MoeRoute(float* logits, int64_t T, int64_t X, int64_t k, int32_t* ids, float* weights);

// Groups the n (token, slot) pairs i = t*k + j by their expert ids[i] (a stable counting sort):
// slots[expert_begin[e] .. expert_begin[e+1]) are the pairs routed to expert e, in increasing i.
// ids: [n] in [0, X); slots: [n]; expert_begin: [X + 1].
void GroupByExpert(const int32_t* ids, int64_t n, int64_t X, int32_t* slots, int32_t* expert_begin);

}  // namespace ref
}  // namespace qwenrt
