// The CUDA forward pass's building blocks on device pointers, declared in plain C++ (no CUDA
// headers) so that src/model/forward_cuda.cpp reads like forward.cpp. Implemented in
// src/ops/cuda/*.cu; only linked when qwenrt is built with CUDA (QWENRT_HAVE_CUDA).
//
// Conventions: every pointer is a device pointer unless its name ends in `_host`; shapes follow the
// ref:: op of the same name (activations.h, attention.h, conv.h, gated_delta.h, gdn_split.h,
// matmul.h, moe.h, norm.h, rope.h). Launch* functions enqueue on `stream` and return the launch
// status (DEVICE with the CUDA error text); errors of a kernel itself surface at the next
// synchronising call. Nothing here throws, aborts or exits.
// Every kernel's result for one output element depends only on that element's inputs, never on how
// many rows/tokens the launch covers, so a prefill equals the same tokens decoded one at a time,
// bit for bit (docs/engine.md, "split invariance").
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"
#include "ops/activations.h"
#include "ops/attention.h"
#include "ops/conv.h"
#include "ops/gated_delta.h"
#include "ops/gdn_split.h"
#include "ops/moe.h"
#include "ops/norm.h"
#include "ops/rope.h"
#include "qwenrt/gguf.hpp"

namespace qwenrt::cuda {

using Stream = void*;  // a cudaStream_t

// --- memory and streams ------------------------------------------------------------------------
Status Malloc(void** ptr, size_t bytes);  // error: DEVICE (out of device memory included)
void Free(void* ptr);                     // nullptr: no-op
Status StreamCreate(Stream* stream);
void StreamDestroy(Stream stream);
Status StreamSynchronize(Stream stream);
Status CopyToDevice(void* dst, const void* src_host, size_t bytes, Stream stream);
Status CopyToHost(void* dst_host, const void* src, size_t bytes, Stream stream);
// Enqueued only: `dst_pinned` (MallocHost memory) is complete after the next StreamSynchronize.
Status CopyToHostAsync(void* dst_pinned, const void* src, size_t bytes, Stream stream);
Status CopyOnDevice(void* dst, const void* src, size_t bytes, Stream stream);
Status Memset(void* dst, int value, size_t bytes, Stream stream);
// CUDA graphs: capture the launches enqueued on `stream` between BeginCapture and EndCapture (other
// threads may use CUDA meanwhile), then replay them with GraphLaunch. EndCapture always ends the
// capture, also after an error. A Graph is a cudaGraphExec_t.
using Graph = void*;
Status BeginCapture(Stream stream);
Status EndCapture(Stream stream, Graph* graph);
Status GraphLaunch(Graph graph, Stream stream);
void GraphDestroy(Graph graph);  // nullptr: no-op
// Pinned host memory for fast transfers. error: DEVICE.
Status MallocHost(void** ptr, size_t bytes);
void FreeHost(void* ptr);

// --- matrices ----------------------------------------------------------------------------------
// y[t][r] = sum_c W[r][c] * x[t][c]   w: rows x cols GGUF blocks (row r at w + r*row_bytes);
// x: [T, cols]; y: [T, rows]. Exact f32 (weights decoded as ref::DequantizeRow); each (t, r) is
// summed in the same order whatever T is. Errors: UNSUPPORTED type.
Status LaunchMatMul(gguf::Type type, const uint8_t* w, size_t row_bytes, int64_t cols, int64_t rows,
                    const float* x, float* y, int64_t T, Stream stream);
// True for the weight types LaunchMatMul implements (F32 F16 BF16 Q8_0 Q4_K Q5_K Q6_K).
bool HasMatMulKernel(gguf::Type type);

// Several matrices with the same `cols` applied to the same x [T, cols] in one launch: targets[i].y
// [T, targets[i].rows] = x W_i^T, bit for bit what LaunchMatMul gives for each. 1 <= n <= 4.
struct MatMulTarget {
  gguf::Type type;
  const uint8_t* w;
  size_t row_bytes;
  int64_t rows;
  float* y;
};
inline constexpr int kMaxMatMulTargets = 4;
Status LaunchMatMulMulti(const MatMulTarget* targets, int n, int64_t cols, const float* x,
                         int64_t T, Stream stream);

// --- element-wise and per-row ops (same math as ref::)
// ----------------------------------------------
Status LaunchRmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps,
                     Stream stream);
// RmsNorm of rows starting at x + r * x_stride (e.g. the query rows inside the joint q/gate
// projection).
Status LaunchRmsNormRows(const float* x, int64_t x_stride, const float* w, float* y, int64_t rows,
                         int64_t n, float eps, Stream stream);
// y = silu(z) * RmsNorm(x) (the GDN output's gated norm), bit for bit LaunchRmsNorm then
// LaunchSwiGlu. x, z, y: [rows, n] (y may alias x).
Status LaunchGatedRmsNorm(const float* x, const float* w, const float* z, float* y, int64_t rows,
                          int64_t n, float eps, Stream stream);
// x += mix, then y = RmsNorm(x) (the residual add and the next sub-block's norm), bit for bit
// LaunchAdd followed by LaunchRmsNorm. x, mix, y: [rows, n]; y must not alias x or mix.
Status LaunchAddRmsNorm(float* x, const float* mix, const float* w, float* y, int64_t rows,
                        int64_t n, float eps, Stream stream);
// x[r] = x[r] / max(||x[r]||, eps) * scale, in place. x: [rows, n]
Status LaunchL2NormScale(float* x, int64_t rows, int64_t n, float eps, float scale, Stream stream);
// The same per row, reading the T * heads rows of n from a strided source (e.g. the q or k columns
// of the GDN conv output): row (t, h) = src + t * src_token_stride + h * n -> dst [T, heads, n].
// src and dst must not overlap.
Status LaunchL2NormScaleRows(const float* src, int64_t src_token_stride, int64_t T, int64_t heads,
                             int64_t n, float eps, float scale, float* dst, Stream stream);
Status LaunchAdd(float* x, const float* y, int64_t n, Stream stream);         // x += y
Status LaunchSwiGlu(const float* gate, float* up, int64_t n, Stream stream);  // up = silu(gate)*up
Status LaunchMulSigmoid(float* x, const float* gate, int64_t n,
                        Stream stream);  // x *= sigmoid(gate)
// x[r][c] *= sigmoid(gate[r * gate_stride + c]), x: [rows, n] (the attention output gate, read in
// place from the joint q/gate projection).
Status LaunchMulSigmoid(float* x, const float* gate, int64_t rows, int64_t n, int64_t gate_stride,
                        Stream stream);
// alpha = ssm_a * softplus(alpha + dt_bias), beta = sigmoid(beta).  alpha, beta: [T, Hv]
Status LaunchGdnGates(float* alpha, float* beta, const float* ssm_a, const float* dt_bias,
                      int64_t T, int64_t Hv, Stream stream);
// dst[r][0..width) = src[r][offset .. offset+width)   src: [rows, src_stride]; dst: [rows, width]
Status LaunchCopyColumns(const float* src, int64_t rows, int64_t src_stride, int64_t offset,
                         int64_t width, float* dst, Stream stream);

// The GDN step between the conv and the delta rule in one launch (src/ops/cuda/gdn_split.cu): q, k
// L2-normed (q also scaled) out of the conv output [T, C], v copied out, and the gates as
// LaunchGdnGates. Bit for bit the four separate launches. q, k: [T, Hk, Dk]; v: [T, Hv, Dv].
Status LaunchGdnSplit(const float* conv, int64_t T, int64_t Hk, int64_t Dk, int64_t Hv, int64_t Dv,
                      float eps, float q_scale, float* q, float* k, float* v, float* alpha,
                      float* beta, const float* ssm_a, const float* dt_bias, Stream stream);

// --- sequence ops
// ------------------------------------------------------------------------------------ As
// ref::CausalConvSilu (conv.h): x [T, C]; w [C, Kc]; state [C, Kc-1] updated; y [T, C].
Status LaunchCausalConvSilu(const CausalConvShape& shape, const float* x, const float* w,
                            float* state, float* y, Stream stream);
// As ref::Rope: x [T, heads, Dh] in place at positions pos0 + t. `pair_uses_pos`: [n_dims/2] bytes
// (device), 0 = that pair sees position 0; nullptr = all pairs rotate. `pos_dev` (device,
// optional): added to pos0 when the kernel runs, so a captured graph can be replayed at any
// position.
Status LaunchRope(float* x, int64_t T, int64_t heads, int64_t Dh, int64_t pos0, int64_t n_dims,
                  float base, float freq_scale, const uint8_t* pair_uses_pos, Stream stream,
                  const int64_t* pos_dev = nullptr);
// As ref::Attention (causal, GQA h -> h / (H/Hkv), scale 1/sqrt(Dh)): q [T, H, Dh];
// k, v [n_past+T, Hkv, Dh] cache rows; out [T, H, Dh]. Dh <= 512 (UNSUPPORTED above). The keys are
// split into chunks (flash-decoding) whose partial results go to `scratch` (device, at least
// H * 64 * (Dh + 2) floats; AttentionScratchFloats(H, Dh) lets 64 tokens run per pass).
int64_t AttentionScratchFloats(int64_t H, int64_t Dh);
// `n_past_dev` (device, optional) is added to shape.n_past when the kernels run (graph replay).
// At most kAttentionMaxKeys keys (n_past + T; UNSUPPORTED above; not checked with n_past_dev).
inline constexpr int64_t kAttentionMaxKeys = 64 * 12288;
Status LaunchAttention(const AttentionShape& shape, const float* q, const float* k, const float* v,
                       float* out, float* scratch, int64_t scratch_floats, Stream stream,
                       const int64_t* n_past_dev = nullptr);
// dst + (pos + *pos_dev) * row <- src [T, row] (the new K or V rows into the cache). pos_dev
// optional.
Status LaunchStoreRows(float* dst, int64_t row, int64_t pos, const int64_t* pos_dev,
                       const float* src, int64_t T, Stream stream);
// As ref::GatedDelta, token-serial (src/ops/cuda/gated_delta_recurrent.cu).
Status LaunchGatedDelta(const GatedDeltaShape& shape, const float* q, const float* k,
                        const float* v, const float* g, const float* beta, float* state, float* out,
                        Stream stream);

// --- mixture of experts --------------------------------------------------------------------------
// dst[i] = src[rows[i]] for i < n.  src: [*, E]; rows: [n] int32 (device); dst: [n, E]
Status LaunchMoeGather(const float* src, const int32_t* rows, int64_t n, int64_t E, float* dst,
                       Stream stream);
// dst[rows[i]] = src[i] for i < n.  src: [n, E]; rows: [n]; dst: [*, E]
Status LaunchMoeScatter(const float* src, const int32_t* rows, int64_t n, int64_t E, float* dst,
                        Stream stream);
// mix[t] = sum_{j<K} weights[t][j] * yslot[t][j], summed in j order from 0.
// yslot: [T, K, E]; weights: [T, K]; mix: [T, E]
Status LaunchMoeCombine(const float* yslot, const float* weights, int64_t T, int64_t K, int64_t E,
                        float* mix, Stream stream);
// mix[t] += sigmoid(gate[t]) * y[t].  mix, y: [T, E]; gate: [T]
Status LaunchAddSigmoidGated(float* mix, const float* y, const float* gate, int64_t T, int64_t E,
                             Stream stream);

}  // namespace qwenrt::cuda
