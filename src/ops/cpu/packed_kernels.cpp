// Which packed kernel serves a type, and whether it beats the file-layout kernel on this ISA level
// (packed.h). The loader packs only the matrices whose type answers yes.
#include "ops/cpu_namespace.h"
#include "ops/packed.h"

namespace QWENRT_CPU_NAMESPACE {
namespace {

// simd_below_avx512: Q4_K / Q6_K have SIMD packed kernels at the avx2 level too
// (PackedKernelsFast()); the others only with AVX-512 VNNI (their portable loops are for the
// tests).
struct Entry {
  gguf::Type type;
  PackedKernel kernel;
  bool simd_below_avx512;
};
constexpr Entry kKernels[] = {
    {gguf::Type::Q4_K, DotPackedQ4K_Q8K, true},
    {gguf::Type::Q6_K, DotPackedQ6K_Q8K, true},
    {gguf::Type::Q5_K, DotPackedQ5K_Q8K, false},
    {gguf::Type::Q3_K, DotPackedQ3K_Q8K, false},
    {gguf::Type::Q2_K, DotPackedQ2K_Q8K, false},
    {gguf::Type::IQ4_XS, DotPackedIQ4XS_Q8K, false},
    {gguf::Type::Q4_0, DotPackedQ4_0_Q8_0, false},
    {gguf::Type::IQ4_NL, DotPackedIQ4NL_Q8_0, false},
    {gguf::Type::MXFP4, DotPackedMXFP4_Q8_0, false},
    {gguf::Type::Q4_1, DotPackedQ4_1_Q8_0, false},
    {gguf::Type::Q5_0, DotPackedQ5_0_Q8_0, false},
    {gguf::Type::Q5_1, DotPackedQ5_1_Q8_0, false},
    {gguf::Type::Q8_0, DotPackedQ8_0_Q8_0, false},
};

const Entry* Find(gguf::Type type) {
  for (const Entry& e : kKernels) {
    if (e.type == type) return &e;
  }
  return nullptr;
}

}  // namespace

bool PackedKernelFast(gguf::Type type) {
  const Entry* e = Find(type);
  if (e == nullptr) return false;
  return e->simd_below_avx512 ? PackedKernelsFast() : QWENRT_PACKED_X86 != 0;
}

PackedKernel PackedKernelOf(gguf::Type type) {
  const Entry* e = Find(type);
  return e != nullptr ? e->kernel : nullptr;
}

}  // namespace QWENRT_CPU_NAMESPACE
