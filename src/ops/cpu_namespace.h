// QWENRT_CPU_NAMESPACE: the namespace the CPU kernels are declared and defined in.
//
// src/ops/cpu/*.cpp is compiled once per ISA level (cmake/QwenrtCpuLevels.cmake), with
// QWENRT_CPU_LEVEL defined as isa_<level>. In those translation units this names
// qwenrt::isa_<level>::cpu, an inline namespace of qwenrt: each level's copy of cpu::X is the
// distinct symbol qwenrt::isa_<level>::cpu::X, yet the kernels still call each other as cpu::X.
// Everywhere else it is the plain qwenrt::cpu, whose functions ops/cpu_dispatch.cpp defines as
// calls through the chosen level's table.
//
// Every `namespace ... cpu` a level's translation unit sees (the kernel files and the ops/ headers
// they include) must be opened with this macro: reopening `namespace qwenrt::cpu` would not extend
// the inline namespace's cpu on every compiler (GCC does, per CWG 2061; clang 14 declares a second
// qwenrt::cpu, and the level copies then collide at link time).
#pragma once

#ifdef QWENRT_CPU_LEVEL
#define QWENRT_CPU_NAMESPACE qwenrt::inline QWENRT_CPU_LEVEL::cpu
#else
#define QWENRT_CPU_NAMESPACE qwenrt::cpu
#endif
