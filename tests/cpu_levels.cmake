# The CPU op tests once more for every ISA level below the best one (cmake/QwenrtCpuLevels.cmake): the
# plain registration runs the level this machine picks; these cap it with QWENRT_CPU_ISA, so the
# lower levels' kernels are checked against the reference on odd sizes too (on a CPU without a level,
# the cap picks the next lower one it has). cpu_dispatch_test switches levels in one process instead.
set(qwenrt_level_tests matmul_test gated_delta_test conv_test forward_ops_test ops_backend_test quant_test
    model_golden_test)
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
