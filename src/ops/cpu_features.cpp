#include "ops/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

namespace qwenrt {
namespace {

#if defined(__x86_64__) || defined(__i386__)

struct CpuidRegs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

CpuidRegs Cpuid(unsigned leaf, unsigned subleaf) {
  CpuidRegs r;
  if (!__get_cpuid_count(leaf, subleaf, &r.a, &r.b, &r.c, &r.d)) return CpuidRegs{};
  return r;
}

// XCR0: which register states the OS saves (only valid when CPUID.1:ECX.OSXSAVE is set). Inline asm
// rather than _xgetbv, which needs -mxsave on this translation unit.
unsigned long long Xcr0() {
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}

bool Bit(unsigned reg, int bit) { return (reg >> bit) & 1u; }

CpuFeatures Detect() {
  CpuFeatures f;
  const unsigned max_leaf = Cpuid(0, 0).a;
  if (max_leaf < 7) return f;
  const CpuidRegs l1 = Cpuid(1, 0), l7 = Cpuid(7, 0), l7s1 = Cpuid(7, 1), e1 = Cpuid(0x80000001, 0);
  if (!Bit(l1.c, 27)) return f;  // OSXSAVE: without it XGETBV faults and no AVX state is enabled
  const unsigned long long xcr0 = Xcr0();
  const bool os_ymm = (xcr0 & 0x6) == 0x6;    // SSE + AVX state
  const bool os_zmm = (xcr0 & 0xE6) == 0xE6;  // + opmask, ZMM_Hi256, Hi16_ZMM
  const bool fma = Bit(l1.c, 12), movbe = Bit(l1.c, 22), avx = Bit(l1.c, 28), f16c = Bit(l1.c, 29);
  const bool bmi1 = Bit(l7.b, 3), avx2 = Bit(l7.b, 5), bmi2 = Bit(l7.b, 8), lzcnt = Bit(e1.c, 5);
  f.x86_64_v3 = os_ymm && avx && avx2 && fma && f16c && bmi1 && bmi2 && lzcnt && movbe;
  const bool avx512f = Bit(l7.b, 16), avx512dq = Bit(l7.b, 17), avx512cd = Bit(l7.b, 28),
             avx512bw = Bit(l7.b, 30), avx512vl = Bit(l7.b, 31), vnni = Bit(l7.c, 11);
  f.avx512_vnni =
      f.x86_64_v3 && os_zmm && avx512f && avx512dq && avx512cd && avx512bw && avx512vl && vnni;
  f.avx512_bf16 = f.avx512_vnni && Bit(l7s1.a, 5);
  return f;
}

#elif defined(__aarch64__) && defined(__linux__)

CpuFeatures Detect() {
  CpuFeatures f;
  constexpr unsigned long kHwcapAsimdDp = 1ul << 20;  // HWCAP_ASIMDDP (asm/hwcap.h)
  f.arm_dotprod = (getauxval(AT_HWCAP) & kHwcapAsimdDp) != 0;
  return f;
}

#else

CpuFeatures Detect() { return CpuFeatures{}; }

#endif

}  // namespace

const CpuFeatures& DetectCpuFeatures() {
  static const CpuFeatures features = Detect();
  return features;
}

}  // namespace qwenrt
