// What the processor this process runs on can execute, as far as the choice of the CPU kernels' ISA
// level needs it (cpu_dispatch.h). x86-64: cpuid, and XGETBV for whether the operating system saves
// the AVX (YMM) and AVX-512 (ZMM, opmask) register state: a CPU may have AVX-512 that the OS has
// not enabled, and executing it then faults. aarch64: getauxval(AT_HWCAP). Elsewhere: nothing.
#pragma once

namespace qwenrt {

struct CpuFeatures {
  // x86-64-v3: AVX AVX2 FMA F16C BMI1 BMI2 LZCNT MOVBE, with YMM state enabled by the OS.
  bool x86_64_v3 = false;
  // x86-64-v4 (AVX-512 F BW CD DQ VL) plus AVX512-VNNI, with ZMM and opmask state enabled by the
  // OS.
  bool avx512_vnni = false;
  bool avx512_bf16 = false;  // reported only: no level requires it yet
  // aarch64 SDOT / UDOT (HWCAP_ASIMDDP). NEON itself is part of the aarch64 baseline.
  bool arm_dotprod = false;
};

// Detected on the first call; thread-safe.
const CpuFeatures& DetectCpuFeatures();

}  // namespace qwenrt
