// ForNtok: the multi-token dot kernels' runtime token count as a compile-time one. The kernels are
// templates on NT (how many tokens' accumulators live in registers); an entry point of vec_dot.h
// takes ntok at run time and calls the instance for it:
//   ForNtok(ntok, [&]<int NT>() { DotQ6K<NT>(...); });
// Internal to src/ops/cpu/ (the instances go up to this ISA level's kMaxDotTokens).
#pragma once

#include <utility>

#include "ops/cpu_namespace.h"
#include "ops/vec_dot.h"

namespace QWENRT_CPU_NAMESPACE {

// Calls f.template operator()<ntok>() for 1 <= ntok <= Max; nothing otherwise.
template <int Max = kMaxDotTokens, typename F>
inline void ForNtok(int ntok, F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) {
    (void)((ntok == I + 1 && (f.template operator()<I + 1>(), true)) || ...);
  }
  (std::make_integer_sequence<int, Max>{});
}

}  // namespace QWENRT_CPU_NAMESPACE
