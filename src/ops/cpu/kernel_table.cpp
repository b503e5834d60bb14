// This level's entry points, for the dispatcher (ops/cpu_dispatch.h). Compiled once per ISA level
// like every file here, so `cpu::X` below names this level's qwenrt::isa_<level>::cpu::X.
#include "ops/cpu_dispatch.h"
#include "ops/cpu_namespace.h"

namespace QWENRT_CPU_NAMESPACE {

int MaxDotTokens() { return kMaxDotTokens; }

const cpu_dispatch::KernelTable& LevelKernels() {
#define QWENRT_CPU_TABLE_INIT(Ret, Name, Params, Args) &Name,
  static constexpr cpu_dispatch::KernelTable kTable = {QWENRT_CPU_KERNELS(QWENRT_CPU_TABLE_INIT)};
#undef QWENRT_CPU_TABLE_INIT
  return kTable;
}

}  // namespace QWENRT_CPU_NAMESPACE
