# The CPU kernels (src/ops/cpu/*.cpp) compiled once per instruction-set level, so that one build runs on
# any machine of its architecture and uses the best kernels of the machine it runs on (the choice is made
# once at run time by src/ops/cpu_dispatch.cpp; docs/engine.md "CPU kernels and ISA levels").
#
# Each level is an object library qwenrt_cpu_<level> compiled with that level's -m flags and with
# QWENRT_CPU_LEVEL=isa_<level>, which makes src/ops/cpu_namespace.h's QWENRT_CPU_NAMESPACE the inline
# namespace qwenrt::isa_<level>::cpu: every cpu:: function of that copy is qwenrt::isa_<level>::cpu::X
# and the copies do not collide. The levels above the baseline compile through
# cmake/qwenrt_level_compile.sh, which gives the weak functions from outside that namespace (the
# standard library's inline functions and templates) level-private names, so that no level's
# instructions can reach another level through the linker's choice among weak copies. The kernel
# sources are written in the plain compile-time style (#if defined(__AVX2__) ...); adding a file to
# src/ops/cpu/ adds it to every level.
#
#   x86-64:  baseline (x86-64, SSE2), avx2 (x86-64-v3: AVX2 FMA F16C BMI2), avx512 (x86-64-v4 + VNNI:
#            AVX-512 F BW CD DQ VL VNNI)
#   aarch64: baseline (armv8-a: NEON), dotprod (armv8.2-a+dotprod: SDOT/UDOT)
#   other:   baseline
#   QWENRT_NATIVE=ON: one level, native (-march=native, which the whole library gets then).
#
# Sets QWENRT_CPU_LEVELS (lowest first) and QWENRT_CPU_LEVEL_OBJECTS (generator expressions of their
# objects, in that order), and defines QWENRT_ISA_<LEVEL>=1 on
# src/ops/cpu_dispatch.cpp.
include(CheckCXXSourceCompiles)

# True in ${var} when the compiler accepts the flags (a list).
function(qwenrt_check_isa_flags var)
  string(REPLACE ";" " " CMAKE_REQUIRED_FLAGS "${ARGN}")
  check_cxx_source_compiles("int main() { return 0; }" ${var})
endfunction()

set(QWENRT_CPU_LEVELS "")
if(QWENRT_NATIVE)
  set(QWENRT_CPU_LEVELS native)
  set(QWENRT_CPU_FLAGS_native "")  # -march=native comes from qwenrt_obj
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(QWENRT_CPU_FLAGS_baseline "")
  set(QWENRT_CPU_FLAGS_avx2 -march=x86-64-v3 -mtune=generic)
  # BF16 is not part of the level: no kernel uses it yet, and requiring it would send the AVX-512 VNNI
  # machines without it (Ice Lake, Cascade Lake) to the AVX2 kernels. Add a level when one does.
  set(QWENRT_CPU_FLAGS_avx512 -march=x86-64-v4 -mavx512vnni -mtune=generic)
  list(APPEND QWENRT_CPU_LEVELS baseline)
  foreach(level avx2 avx512)
    qwenrt_check_isa_flags(QWENRT_CXX_HAS_ISA_${level} ${QWENRT_CPU_FLAGS_${level}})
    if(QWENRT_CXX_HAS_ISA_${level})
      list(APPEND QWENRT_CPU_LEVELS ${level})
    endif()
  endforeach()
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(QWENRT_CPU_FLAGS_baseline -march=armv8-a)
  set(QWENRT_CPU_FLAGS_dotprod -march=armv8.2-a+dotprod)
  list(APPEND QWENRT_CPU_LEVELS baseline)
  qwenrt_check_isa_flags(QWENRT_CXX_HAS_ISA_dotprod ${QWENRT_CPU_FLAGS_dotprod})
  if(QWENRT_CXX_HAS_ISA_dotprod)
    list(APPEND QWENRT_CPU_LEVELS dotprod)
  endif()
else()
  set(QWENRT_CPU_LEVELS baseline)
  set(QWENRT_CPU_FLAGS_baseline "")
endif()
message(STATUS "qwenrt: CPU kernel ISA levels: ${QWENRT_CPU_LEVELS}")

file(GLOB QWENRT_CPU_KERNEL_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/ops/cpu/*.cpp)
set(QWENRT_CPU_LEVEL_OBJECTS "")
foreach(level ${QWENRT_CPU_LEVELS})
  set(t qwenrt_cpu_${level})
  add_library(${t} OBJECT ${QWENRT_CPU_KERNEL_SOURCES})
  # qwenrt_obj's usage requirements: include dirs, definitions, -march=native.
  target_link_libraries(${t} PRIVATE qwenrt_obj)
  target_compile_definitions(${t} PRIVATE QWENRT_CPU_LEVEL=isa_${level})
  target_compile_options(${t} PRIVATE ${QWENRT_CPU_FLAGS_${level}} ${QWENRT_SANITIZE_COMPILE_FLAGS})
  if(NOT level STREQUAL "baseline" AND NOT level STREQUAL "native")
    if(NOT CMAKE_NM OR NOT CMAKE_READELF OR NOT CMAKE_OBJCOPY)
      message(FATAL_ERROR "qwenrt: the CPU ISA levels need nm, readelf and objcopy (binutils); or configure with -DQWENRT_NATIVE=ON")
    endif()
    # The build's own launcher (ccache), if any, runs the compiler under this one.
    set(launcher sh ${PROJECT_SOURCE_DIR}/cmake/qwenrt_level_compile.sh ${level} ${CMAKE_NM} ${CMAKE_READELF}
      ${CMAKE_OBJCOPY} ${CMAKE_CXX_COMPILER_LAUNCHER})
    set_target_properties(${t} PROPERTIES CXX_COMPILER_LAUNCHER "${launcher}")
  endif()
  set_target_properties(${t} PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  qwenrt_set_warnings(${t})
  string(TOUPPER ${level} LEVEL)
  set_property(SOURCE ${PROJECT_SOURCE_DIR}/src/ops/cpu_dispatch.cpp APPEND PROPERTY
    COMPILE_DEFINITIONS QWENRT_ISA_${LEVEL}=1)
  list(APPEND QWENRT_CPU_LEVEL_OBJECTS $<TARGET_OBJECTS:${t}>)
endforeach()

# cpu::Rope repeats ref::Rope's scalar arithmetic and is tested bit-identical to it (ops_backend_test).
# Where FMA exists (x86-64-v3 and up, every aarch64) the compiler would contract x0 * c - x1 * s into
# fused multiply-adds in some copies and not others; no contraction in either file keeps them equal on
# every level.
set_source_files_properties(${PROJECT_SOURCE_DIR}/src/ops/cpu/rope.cpp ${PROJECT_SOURCE_DIR}/src/ops/ref/rope.cpp
  PROPERTIES COMPILE_OPTIONS -ffp-contract=off)
