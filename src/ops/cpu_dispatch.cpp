// The level registry, the choice of the level, and the plain qwenrt::cpu:: entry points as calls
// through the chosen level's KernelTable (ops/cpu_dispatch.h). QWENRT_ISA_<LEVEL> says which levels
// this build compiled (cmake/QwenrtCpuLevels.cmake).
#include "ops/cpu_dispatch.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "ops/cpu_features.h"

// Each level's table, in that level's namespace (the inline namespace of its own translation
// units).
#define QWENRT_DECLARE_LEVEL(ns)                   \
  namespace qwenrt::ns::cpu {                      \
  const cpu_dispatch::KernelTable& LevelKernels(); \
  }
#if QWENRT_ISA_NATIVE
QWENRT_DECLARE_LEVEL(isa_native)
#endif
#if QWENRT_ISA_BASELINE
QWENRT_DECLARE_LEVEL(isa_baseline)
#endif
#if QWENRT_ISA_AVX2
QWENRT_DECLARE_LEVEL(isa_avx2)
#endif
#if QWENRT_ISA_AVX512
QWENRT_DECLARE_LEVEL(isa_avx512)
#endif
#if QWENRT_ISA_DOTPROD
QWENRT_DECLARE_LEVEL(isa_dotprod)
#endif
#undef QWENRT_DECLARE_LEVEL

namespace qwenrt::cpu_dispatch {
namespace {

std::span<const Level> BuildLevels() {
  [[maybe_unused]] const CpuFeatures& f = DetectCpuFeatures();
  static const Level levels[] = {
#if QWENRT_ISA_NATIVE
    // Compiled for the build machine: running it elsewhere is the QWENRT_NATIVE user's choice.
    {"native", &isa_native::cpu::LevelKernels(), true},
#endif
#if QWENRT_ISA_BASELINE
    {"baseline", &isa_baseline::cpu::LevelKernels(), true},
#endif
#if QWENRT_ISA_AVX2
    {"avx2", &isa_avx2::cpu::LevelKernels(), f.x86_64_v3},
#endif
#if QWENRT_ISA_AVX512
    {"avx512", &isa_avx512::cpu::LevelKernels(), f.avx512_vnni},
#endif
#if QWENRT_ISA_DOTPROD
    {"dotprod", &isa_dotprod::cpu::LevelKernels(), f.arm_dotprod},
#endif
  };
  return levels;
}

// The level in use; set once from QWENRT_CPU_ISA, changed only by UseLevel.
std::atomic<const Level*>& ActiveSlot() {
  static std::atomic<const Level*> slot{&Choose(Levels(), std::getenv("QWENRT_CPU_ISA"))};
  return slot;
}

}  // namespace

std::span<const Level> Levels() {
  static const std::span<const Level> levels = BuildLevels();
  return levels;
}

const Level& Choose(std::span<const Level> levels, const char* cap) {
  size_t last = levels.size() - 1;  // the cap: a level's index
  if (cap != nullptr) {
    for (size_t i = 0; i < levels.size(); ++i) {
      if (std::strcmp(levels[i].name, cap) == 0) last = i;
    }
  }
  for (size_t i = last + 1; i-- > 0;) {
    if (levels[i].runnable) return levels[i];
  }
  return levels[0];  // the lowest level of every build is runnable
}

const Level& Active() { return *ActiveSlot().load(std::memory_order_relaxed); }

bool UseLevel(std::string_view name) {
  for (const Level& level : Levels()) {
    if (level.name == name && level.runnable) {
      ActiveSlot().store(&level, std::memory_order_relaxed);
      return true;
    }
  }
  return false;
}

}  // namespace qwenrt::cpu_dispatch

namespace qwenrt::cpu {

#define QWENRT_CPU_FORWARD(Ret, Name, Params, Args) \
  Ret Name Params { return cpu_dispatch::Active().table->Name Args; }
QWENRT_CPU_KERNELS(QWENRT_CPU_FORWARD)
#undef QWENRT_CPU_FORWARD

}  // namespace qwenrt::cpu
