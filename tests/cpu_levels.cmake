# The CPU op tests once more for every ISA level below the best one (cmake/QwenrtCpuLevels.cmake): the
# plain registration runs the level this machine picks; these cap it with QWENRT_CPU_ISA, so the
# lower levels' kernels are checked against the reference on odd sizes too (on a CPU without a level,
# the cap picks the next lower one it has). cpu_dispatch_test switches levels in one process instead.
# Not model_golden_test: its bars compare the best level's fidelity with llama.cpp's on 40 rows (top-1
# to one row), which another level's rounding may miss by a row; cpu_dispatch_test compares the levels.
set(qwenrt_level_tests matmul_test packed_matmul_test gated_delta_test conv_test forward_ops_test ops_backend_test quant_test
  attention_test)
set(lower_levels ${QWENRT_CPU_LEVELS})
list(POP_BACK lower_levels)
foreach(level ${lower_levels})
  foreach(t ${qwenrt_level_tests})
    if(TARGET ${t})
      add_test(NAME ${t}_isa_${level} COMMAND ${t} --use-colour no)
      set_tests_properties(${t}_isa_${level} PROPERTIES TIMEOUT 900 ENVIRONMENT QWENRT_CPU_ISA=${level})
    endif()
  endforeach()
endforeach()

# No level's instructions can reach another level through the linker's choice among weak symbols
# (scripts/check_cpu_levels.py says why).
find_package(Python3 COMPONENTS Interpreter QUIET)
set(level_dirs "")
foreach(level ${QWENRT_CPU_LEVELS})
  if(NOT level STREQUAL "baseline" AND NOT level STREQUAL "native")
    list(APPEND level_dirs ${level}=${PROJECT_BINARY_DIR}/CMakeFiles/qwenrt_cpu_${level}.dir)
  endif()
endforeach()
if(Python3_Interpreter_FOUND AND CMAKE_NM AND CMAKE_READELF AND level_dirs)
  add_test(NAME cpu_levels_weak_symbols COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/check_cpu_levels.py
    ${CMAKE_NM} ${CMAKE_READELF} ${level_dirs})
endif()
