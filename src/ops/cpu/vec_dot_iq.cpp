// Type -> kernel table of the grid i-quant dots (vec_dot_iq.h), for the matmul driver.
#include "ops/vec_dot_iq.h"

#include "ops/cpu_namespace.h"

namespace QWENRT_CPU_NAMESPACE {

DotKernel IQuantDotKernel(gguf::Type type) {
  switch (type) {
    case gguf::Type::IQ2_XXS:
      return DotIQ2XXS_Q8K;
    case gguf::Type::IQ2_XS:
      return DotIQ2XS_Q8K;
    case gguf::Type::IQ2_S:
      return DotIQ2S_Q8K;
    case gguf::Type::IQ3_XXS:
      return DotIQ3XXS_Q8K;
    case gguf::Type::IQ3_S:
      return DotIQ3S_Q8K;
    case gguf::Type::IQ1_S:
      return DotIQ1S_Q8K;
    case gguf::Type::IQ1_M:
      return DotIQ1M_Q8K;
    default:
      return nullptr;
  }
}

}  // namespace QWENRT_CPU_NAMESPACE
