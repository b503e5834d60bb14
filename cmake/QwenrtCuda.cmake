# QWENRT_CUDA=AUTO enables the CUDA backend when nvcc is found (also in /usr/local/cuda), ON requires
# it, OFF disables it. The CUDA sources are src/ops/cuda/*.cu; they are compiled into the core object library
# and QWENRT_HAVE_CUDA is defined so that src/ can register the backend.
include(CheckLanguage)
set(QWENRT_HAVE_CUDA OFF)
if(NOT QWENRT_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Default to sm_90 (H100/H200) + compute_90 PTX before enable_language would pick the compiler's
    # own default (sm_75 for nvcc 13, leaving an H200 to JIT old PTX). Override with
    # -DCMAKE_CUDA_ARCHITECTURES=native or a list.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
      set(CMAKE_CUDA_ARCHITECTURES 90 CACHE STRING "CUDA architectures")
    endif()
    enable_language(CUDA)
    # CUDA sources are C++17: CMake 3.25 has no nvcc flag for CUDA_STANDARD 20 (and would otherwise
    # inherit CXX_STANDARD 20 and fail at generate time), and fmt 9 (status.h) does not compile
    # under nvcc in C++20 mode. Headers included from src/ops/cuda/*.cu must therefore stay C++17.
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(QWENRT_HAVE_CUDA ON)
  elseif(QWENRT_CUDA STREQUAL "ON")
    message(FATAL_ERROR "QWENRT_CUDA=ON but no CUDA compiler was found")
  endif()
endif()
message(STATUS "qwenrt: CUDA backend ${QWENRT_HAVE_CUDA}")

function(qwenrt_add_cuda target)
  if(NOT QWENRT_HAVE_CUDA)
    return()
  endif()
  file(GLOB cu_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/ops/cuda/*.cu)
  if(NOT cu_sources)
    return()
  endif()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "52")
    # H100/H200 (sm_90) natively, plus PTX for newer parts.
    set_property(TARGET ${target} PROPERTY CUDA_ARCHITECTURES 90)
  endif()
  target_sources(${target} PRIVATE ${cu_sources})
  # Like the C++ sources: nothing but the qwenrt_* C ABI may leave libqwenrt.so (capi_symbols test).
  set_target_properties(${target} PROPERTIES CUDA_VISIBILITY_PRESET hidden)
  target_compile_definitions(${target} PUBLIC QWENRT_HAVE_CUDA=1)
  # The static runtime: a built library or test then runs on any machine with an NVIDIA driver new
  # enough, without the toolkit's shared libraries (scripts/gpu-bundle.sh carries binaries there).
  target_link_libraries(${target} PUBLIC CUDA::cudart_static)
endfunction()
