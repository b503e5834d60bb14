// Which packed kernel serves a type, and whether it beats the file-layout kernel on this ISA level
// (packed.h). The loader packs only the matrices whose type answers yes.
#include "ops/cpu_namespace.h"
#include "ops/packed.h"

namespace QWENRT_CPU_NAMESPACE {

bool PackedKernelFast(gguf::Type type) {
  switch (type) {
    case gguf::Type::Q4_K:
    case gguf::Type::Q6_K:
      return PackedKernelsFast();
    case gguf::Type::Q4_0:
    case gguf::Type::Q4_1:
    case gguf::Type::Q5_0:
    case gguf::Type::Q5_1:
    case gguf::Type::IQ4_NL:
    case gguf::Type::Q8_0:
    case gguf::Type::IQ4_XS:
    case gguf::Type::Q3_K:
      return QWENRT_PACKED_X86 != 0;
    default:
      return false;
  }
}

PackedKernel PackedKernelOf(gguf::Type type) {
  switch (type) {
    case gguf::Type::Q4_K: return DotPackedQ4K_Q8K;
    case gguf::Type::Q6_K: return DotPackedQ6K_Q8K;
    case gguf::Type::Q4_0: return DotPackedQ4_0_Q8_0;
    case gguf::Type::Q4_1: return DotPackedQ4_1_Q8_0;
    case gguf::Type::Q5_0: return DotPackedQ5_0_Q8_0;
    case gguf::Type::Q5_1: return DotPackedQ5_1_Q8_0;
    case gguf::Type::IQ4_NL: return DotPackedIQ4NL_Q8_0;
    case gguf::Type::Q8_0: return DotPackedQ8_0_Q8_0;
    case gguf::Type::IQ4_XS: return DotPackedIQ4XS_Q8K;
    case gguf::Type::Q3_K: return DotPackedQ3K_Q8K;
    default: return nullptr;
  }
}

}  // namespace QWENRT_CPU_NAMESPACE
