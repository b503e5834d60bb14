// Force-included (-include) first into every src/ops/cpu/*.cpp as compiled for one ISA level
// (cmake/QwenrtCpuLevels.cmake, which defines QWENRT_CPU_LEVEL as isa_<level>). Declaring qwenrt::cpu
// inside the inline namespace qwenrt::isa_<level> before any other declaration makes every later
// `namespace qwenrt::cpu { ... }` of the translation unit extend that one ([namespace.def]): the kernel
// files stay in the plain style, yet each level's copy of cpu::X is the distinct symbol
// qwenrt::isa_<level>::cpu::X. The rest of the library calls the plain qwenrt::cpu::X, which
// ops/cpu_dispatch.cpp defines as a call through the chosen level's table.
#pragma once

#ifndef QWENRT_CPU_LEVEL
#error "src/ops/cpu/*.cpp is compiled per ISA level only (cmake/QwenrtCpuLevels.cmake)"
#endif

namespace qwenrt {
inline namespace QWENRT_CPU_LEVEL {
namespace cpu {}
}  // namespace QWENRT_CPU_LEVEL
}  // namespace qwenrt
