// Software prefetch of weights a kernel reads next. Where the rows are short (a file-layout row of
// 1024 Q4_K elements is 9 cache lines) the hardware prefetcher does not keep enough loads in
// flight, and the kernel waits on memory between rows (measured: Q4_K_M decode without packing
// 22.2 -> 33.3 t/s). Long rows stream well without: F16 rows of 1024 (32 lines) decoded 5 %
// slower with it, so the float tile does not use it. Internal to src/ops/cpu/.
#pragma once

#include <cstddef>

#include "ops/cpu_namespace.h"

namespace QWENRT_CPU_NAMESPACE {

// Prefetches the cache line of p into L1. An asm statement: a loop of _mm_prefetch /
// __builtin_prefetch with run-time bounds is free of side effects to GCC, which deleted it (no
// prefetch left in the object, and no warning).
inline void PrefetchLine(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  __asm__ volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#elif defined(__aarch64__)
  __asm__ volatile("prfm pldl1keep, %0" : : "Q"(*static_cast<const char*>(p)));
#else
  (void)p;
#endif
}

// Prefetches the cache lines of [p, p + bytes).
inline void PrefetchLines(const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (size_t i = 0; i < bytes; i += 64) PrefetchLine(c + i);
}

}  // namespace QWENRT_CPU_NAMESPACE
