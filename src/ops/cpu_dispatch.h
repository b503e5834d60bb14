// The CPU kernels chosen at run time. src/ops/cpu/*.cpp is compiled once per ISA level
// (cmake/QwenrtCpuLevels.cmake: baseline, avx2, avx512 on x86-64; baseline, dotprod on aarch64; or
// the one native level of a QWENRT_NATIVE build), each copy in its own namespace
// qwenrt::isa_<level>::cpu (QWENRT_CPU_NAMESPACE, cpu_namespace.h). Each copy fills one KernelTable
// with its entry points (cpu/kernel_table.cpp); cpu_dispatch.cpp defines the plain qwenrt::cpu::
// functions that the rest of the library calls, each a call through the table of the level chosen
// on first use: the best one this CPU runs (cpu_features.h), capped by the environment variable
// QWENRT_CPU_ISA=<level name> if set.
//
// Inside a level, kernels call each other directly (matmul.cpp calls its own level's DotQ4K_Q8K),
// so the table costs one indirect call per op, not per row. A new kernel file in src/ops/cpu/ is
// part of every level by itself; only a new cpu:: function called from outside src/ops/cpu/ needs a
// line in QWENRT_CPU_KERNELS below.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "ops/activations.h"
#include "ops/attention.h"
#include "ops/conv.h"
#include "ops/cpu_namespace.h"
#include "ops/embed.h"
#include "ops/gated_delta.h"
#include "ops/gdn_split.h"
#include "ops/matmul.h"
#include "ops/moe.h"
#include "ops/norm.h"
#include "ops/packed.h"
#include "ops/rope.h"
#include "ops/vec_dot.h"
#include "ops/vec_dot_iq.h"

// X(return type, name, (parameters), (arguments)): every cpu:: entry point of ops/*.h.
#define QWENRT_CPU_KERNELS(X)                                                                      \
  X(void, Add, (float* x, const float* y, int64_t n, ThreadPool& pool), (x, y, n, pool))           \
  X(void, SwiGlu, (const float* gate, float* up, int64_t n, ThreadPool& pool),                     \
    (gate, up, n, pool))                                                                           \
  X(void, MulSigmoid,                                                                              \
    (float* x, const float* gate, int64_t rows, int64_t n, int64_t gate_stride, ThreadPool& pool), \
    (x, gate, rows, n, gate_stride, pool))                                                         \
  X(void, Attention,                                                                               \
    (const AttentionShape& s, const float* q, const KvView& k, const KvView& v, float* out,        \
     float* scratch, ThreadPool& pool),                                                            \
    (s, q, k, v, out, scratch, pool))                                                              \
  X(void, RoundToF16, (float* x, int64_t n), (x, n))                                               \
  X(void, CausalConvSilu,                                                                          \
    (const CausalConvShape& shape, const float* x, const float* w, float* state, float* y,         \
     ThreadPool& pool),                                                                            \
    (shape, x, w, state, y, pool))                                                                 \
  X(void, Embed,                                                                                   \
    (const WeightMatrix& table, const int32_t* tokens, int64_t T, float* x, ThreadPool& pool),     \
    (table, tokens, T, x, pool))                                                                   \
  X(void, GatedDeltaRecurrent,                                                                     \
    (const GatedDeltaShape& shape, const float* q, const float* k, const float* v, const float* g, \
     const float* beta, float* state, float* out, ThreadPool& pool),                               \
    (shape, q, k, v, g, beta, state, out, pool))                                                   \
  X(void, GatedDeltaChunk,                                                                         \
    (const GatedDeltaShape& shape, const float* q, const float* k, const float* v, const float* g, \
     const float* beta, float* state, float* out, ThreadPool& pool),                               \
    (shape, q, k, v, g, beta, state, out, pool))                                                   \
  X(void, GatedDelta,                                                                              \
    (const GatedDeltaShape& shape, const float* q, const float* k, const float* v, const float* g, \
     const float* beta, float* state, float* out, ThreadPool& pool),                               \
    (shape, q, k, v, g, beta, state, out, pool))                                                   \
  X(void, GdnSplit,                                                                                \
    (const GatedDeltaShape& s, const float* conv, float eps, float q_scale, float* q, float* k,    \
     float* v, float* alpha, float* beta, const float* ssm_a, const float* dt_bias,                \
     ThreadPool& pool),                                                                            \
    (s, conv, eps, q_scale, q, k, v, alpha, beta, ssm_a, dt_bias, pool))                           \
  X(void, MatMul, (const WeightMatrix& w, const float* x, float* y, int64_t T, ThreadPool& pool),  \
    (w, x, y, T, pool))                                                                            \
  X(void, MatMulMulti,                                                                             \
    (const WeightMatrix* ws, int n, const float* x, float* const* ys, int64_t T,                   \
     ThreadPool& pool),                                                                            \
    (ws, n, x, ys, T, pool))                                                                       \
  X(void, MoeGather,                                                                               \
    (const float* src, const int32_t* slots, int64_t n, int64_t K, int64_t E, float* dst,          \
     ThreadPool& pool),                                                                            \
    (src, slots, n, K, E, dst, pool))                                                              \
  X(void, MoeScatter,                                                                              \
    (const float* src, const int32_t* slots, int64_t n, int64_t E, float* dst, ThreadPool& pool),  \
    (src, slots, n, E, dst, pool))                                                                 \
  X(void, MoeCombine,                                                                              \
    (const float* yslot, const float* weights, int64_t T, int64_t K, int64_t E, float* mix,        \
     ThreadPool& pool),                                                                            \
    (yslot, weights, T, K, E, mix, pool))                                                          \
  X(void, AddSigmoidGated,                                                                         \
    (float* mix, const float* y, const float* gate, int64_t T, int64_t E, ThreadPool& pool),       \
    (mix, y, gate, T, E, pool))                                                                    \
  X(void, RmsNorm,                                                                                 \
    (const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps,                 \
     ThreadPool& pool),                                                                            \
    (x, w, y, rows, n, eps, pool))                                                                 \
  X(void, RmsNormRows,                                                                             \
    (const float* x, int64_t x_stride, const float* w, float* y, int64_t rows, int64_t n,          \
     float eps, ThreadPool& pool),                                                                 \
    (x, x_stride, w, y, rows, n, eps, pool))                                                       \
  X(void, AddRmsNorm,                                                                              \
    (float* x, const float* mix, const float* w, float* y, int64_t rows, int64_t n, float eps,     \
     ThreadPool& pool),                                                                            \
    (x, mix, w, y, rows, n, eps, pool))                                                            \
  X(void, GatedRmsNorm,                                                                            \
    (const float* x, const float* w, const float* z, float* y, int64_t rows, int64_t n, float eps, \
     ThreadPool& pool),                                                                            \
    (x, w, z, y, rows, n, eps, pool))                                                              \
  X(void, Rope,                                                                                    \
    (float* x, int64_t T, int64_t heads, int64_t Dh, int64_t pos0, const RopeParams& p,            \
     ThreadPool& pool),                                                                            \
    (x, T, heads, Dh, pos0, p, pool))                                                              \
  X(void, DotQ4K_Q8K, QWENRT_DOT_PARAMS, QWENRT_DOT_ARGS)                                          \
  X(void, DotQ5K_Q8K, QWENRT_DOT_PARAMS, QWENRT_DOT_ARGS)                                          \
  X(void, DotQ6K_Q8K, QWENRT_DOT_PARAMS, QWENRT_DOT_ARGS)                                          \
  X(void, DotQ8_0_Q8_0, QWENRT_DOT_PARAMS, QWENRT_DOT_ARGS)                                        \
  X(void, DotF32_F32, QWENRT_DOT_PARAMS, QWENRT_DOT_ARGS)                                          \
  X(void, DotF16_F32, QWENRT_DOT_PARAMS, QWENRT_DOT_ARGS)                                          \
  X(void, DotBF16_F32, QWENRT_DOT_PARAMS, QWENRT_DOT_ARGS)                                         \
  X(void, DotQ4_0_Q8_0, QWENRT_DOT_PARAMS, QWENRT_DOT_ARGS)                                        \
  X(void, DotQ4_1_Q8_0, QWENRT_DOT_PARAMS, QWENRT_DOT_ARGS)                                        \
  X(void, DotQ5_0_Q8_0, QWENRT_DOT_PARAMS, QWENRT_DOT_ARGS)                                        \
  X(void, DotQ5_1_Q8_0, QWENRT_DOT_PARAMS, QWENRT_DOT_ARGS)                                        \
  X(void, DotIQ4NL_Q8_0, QWENRT_DOT_PARAMS, QWENRT_DOT_ARGS)                                       \
  X(void, DotMXFP4_Q8_0, QWENRT_DOT_PARAMS, QWENRT_DOT_ARGS)                                       \
  X(void, DotQ2K_Q8K, QWENRT_DOT_PARAMS, QWENRT_DOT_ARGS)                                          \
  X(void, DotQ3K_Q8K, QWENRT_DOT_PARAMS, QWENRT_DOT_ARGS)                                          \
  X(void, DotIQ4XS_Q8K, QWENRT_DOT_PARAMS, QWENRT_DOT_ARGS)                                        \
  X(void, QuantizeRowQ8K, (const float* x, void* dst_blocks, int64_t n), (x, dst_blocks, n))       \
  X(void, KvEncodeRows, (KvType type, const float* x, int64_t n, int64_t row, uint8_t* dst),       \
    (type, x, n, row, dst))                                                                        \
  X(void, KvDecode, (KvType type, const uint8_t* row, int64_t i0, int64_t n, float* dst),          \
    (type, row, i0, n, dst))                                                                       \
  X(void, DotPackedQ4K_Q8K, QWENRT_PACKED_DOT_PARAMS, QWENRT_PACKED_DOT_ARGS)                      \
  X(void, DotPackedQ6K_Q8K, QWENRT_PACKED_DOT_PARAMS, QWENRT_PACKED_DOT_ARGS)                      \
  X(void, DotPackedQ5K_Q8K, QWENRT_PACKED_DOT_PARAMS, QWENRT_PACKED_DOT_ARGS)                      \
  X(void, DotPackedQ4_0_Q8_0, QWENRT_PACKED_DOT_PARAMS, QWENRT_PACKED_DOT_ARGS)                    \
  X(void, DotPackedIQ4NL_Q8_0, QWENRT_PACKED_DOT_PARAMS, QWENRT_PACKED_DOT_ARGS)                   \
  X(void, DotPackedMXFP4_Q8_0, QWENRT_PACKED_DOT_PARAMS, QWENRT_PACKED_DOT_ARGS)                   \
  X(void, DotPackedQ8_0_Q8_0, QWENRT_PACKED_DOT_PARAMS, QWENRT_PACKED_DOT_ARGS)                    \
  X(void, DotPackedQ4_1_Q8_0, QWENRT_PACKED_DOT_PARAMS, QWENRT_PACKED_DOT_ARGS)                    \
  X(void, DotPackedQ5_0_Q8_0, QWENRT_PACKED_DOT_PARAMS, QWENRT_PACKED_DOT_ARGS)                    \
  X(void, DotPackedQ5_1_Q8_0, QWENRT_PACKED_DOT_PARAMS, QWENRT_PACKED_DOT_ARGS)                    \
  X(void, DotPackedIQ4XS_Q8K, QWENRT_PACKED_DOT_PARAMS, QWENRT_PACKED_DOT_ARGS)                    \
  X(void, DotPackedQ3K_Q8K, QWENRT_PACKED_DOT_PARAMS, QWENRT_PACKED_DOT_ARGS)                      \
  X(void, DotPackedQ2K_Q8K, QWENRT_PACKED_DOT_PARAMS, QWENRT_PACKED_DOT_ARGS)                      \
  X(bool, PackedKernelsFast, (), ())                                                               \
  X(bool, PackedKernelFast, (gguf::Type type), (type))                                             \
  X(::qwenrt::cpu_dispatch::PackedFn, PackedKernelOf, (gguf::Type type), (type))                   \
  X(::qwenrt::cpu_dispatch::DotFn, IQuantDotKernel, (gguf::Type type), (type))                     \
  X(const char*, PackedKernelIsa, (), ())                                                          \
  X(int, MaxDotTokens, (), ())                                                                     \
  X(const char*, DotKernelIsa, (), ())

// The multi-token dot kernels' signature (cpu::DotKernel).
#define QWENRT_DOT_PARAMS                                                          \
  (const void* w, const void* a, size_t a_stride, int ntok, int64_t n, float* out, \
   int64_t out_stride)
#define QWENRT_DOT_ARGS (w, a, a_stride, ntok, n, out, out_stride)
// The packed kernels' signature (cpu::PackedKernel, packed.h).
#define QWENRT_PACKED_DOT_PARAMS                                                         \
  (const uint8_t* w, const uint8_t* a, size_t a_stride, int ntok, int64_t n, float* out, \
   int64_t out_stride, int nrows, bool stream)
#define QWENRT_PACKED_DOT_ARGS (w, a, a_stride, ntok, n, out, out_stride, nrows, stream)

namespace qwenrt::cpu_dispatch {

// A multi-token dot kernel (cpu::DotKernel), as a table entry's return type.
using DotFn = void(*) QWENRT_DOT_PARAMS;
// A packed kernel (cpu::PackedKernel), likewise.
using PackedFn = void(*) QWENRT_PACKED_DOT_PARAMS;

// One level's entry points. Defined outside the level namespaces, so every level and the dispatcher
// see the same type.
struct KernelTable {
#define QWENRT_CPU_TABLE_ENTRY(Ret, Name, Params, Args) Ret(*Name) Params;
  QWENRT_CPU_KERNELS(QWENRT_CPU_TABLE_ENTRY)
#undef QWENRT_CPU_TABLE_ENTRY
};

struct Level {
  const char*
      name;  // "baseline", "avx2", "avx512", "dotprod", "native": the values of QWENRT_CPU_ISA
  const KernelTable* table;
  bool runnable;  // this CPU (and OS) can execute it
};

// The levels this build has, lowest first.
std::span<const Level> Levels();

// The level in use: chosen on the first call of any cpu:: kernel, as the highest runnable level at
// or below the one QWENRT_CPU_ISA names (the highest runnable one when it is unset or names no
// level of this build).
const Level& Active();

// The choice Active() makes, as a pure function for tests: `cap` is QWENRT_CPU_ISA's value or null.
const Level& Choose(std::span<const Level> levels, const char* cap);

// Switches every later cpu:: call to the named level; false (and nothing changes) if this build has
// no such level or this CPU cannot run it. For tests and benchmarks that compare levels in one
// process: not while another thread runs cpu:: kernels.
bool UseLevel(std::string_view name);

}  // namespace qwenrt::cpu_dispatch

// What cpu/kernel_table.cpp defines in every level namespace.
namespace QWENRT_CPU_NAMESPACE {
const cpu_dispatch::KernelTable& LevelKernels();
}  // namespace QWENRT_CPU_NAMESPACE
