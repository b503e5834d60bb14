# qwenrt-bench pp / tg / speed on the tiny fixture: the table and the JSON come out (and, when the
# llama.cpp's tools are next to the checkout, the side-by-side columns); bad arguments exit non-zero.
# Included by tests/CMakeLists.txt to register the tests; run with -P (BENCH, ARGS, EXIT, ERR) to
# check one run's exit status and stderr.
if(CMAKE_SCRIPT_MODE_FILE)
  execute_process(COMMAND ${BENCH} ${ARGS} RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc STREQUAL "${EXIT}")
    message(FATAL_ERROR "qwenrt-bench ${ARGS}: exit ${rc}, expected ${EXIT}: ${err}")
  endif()
  if(NOT err MATCHES "${ERR}")
    message(FATAL_ERROR "qwenrt-bench ${ARGS}: stderr does not match '${ERR}': ${err}")
  endif()
  return()
endif()

if(QWENRT_BUILD_BENCH)
  find_package(benchmark QUIET)  # bench/ builds qwenrt-bench only with it
endif()
if(QWENRT_BUILD_BENCH AND benchmark_FOUND)
  set(_d ${CMAKE_CURRENT_SOURCE_DIR}/data)
  add_test(NAME bench_speed_table COMMAND qwenrt-bench speed -m ${_d}/tiny-s1-q4km.gguf -p 16 -n 8 -t 2 -r 1)
  set_tests_properties(bench_speed_table PROPERTIES PASS_REGULAR_EXPRESSION "\\| pp16 \\|.*\n.*\\| tg8 \\|")
  add_test(NAME bench_speed_json COMMAND qwenrt-bench tg -m ${_d}/tiny-s1-q4km.gguf -n 4 -r 2 --json)
  set_tests_properties(bench_speed_json PROPERTIES PASS_REGULAR_EXPRESSION "\"test\": \"tg4\".*\"samples\"")
  # -d: every test again after 24 tokens of context, named as llama-bench names it; the JSON says
  # the depth. 24 is not a multiple of the KV page (256 rows): the run must neither grow the KV
  # (RunOnce checks capacity) nor lose the context between repetitions (ToContext checks size).
  add_test(NAME bench_speed_depth COMMAND qwenrt-bench speed -m ${_d}/tiny-s1-q4km.gguf -p 16 -n 8 -d 0,24 -t 2 -r 2)
  set_tests_properties(bench_speed_depth PROPERTIES PASS_REGULAR_EXPRESSION
                       "\\| pp16 \\|.*\n.*\\| tg8 \\|.*\n.*\\| pp16 @ d24 \\|.*\n.*\\| tg8 @ d24 \\|")
  add_test(NAME bench_speed_depth_json COMMAND qwenrt-bench tg -m ${_d}/tiny-s1-q4km.gguf -n 4 -d 300 -r 1 --json)
  set_tests_properties(bench_speed_depth_json PROPERTIES PASS_REGULAR_EXPRESSION
                       "\"test\": \"tg4 @ d300\".*\"n_depth\": 300")
  foreach(_bad x 8,-1 ,)  # not a number, negative, empty item
    string(MAKE_C_IDENTIFIER "bench_speed_bad_depth_${_bad}" _name)
    add_test(NAME ${_name} COMMAND ${CMAKE_COMMAND} -DBENCH=$<TARGET_FILE:qwenrt-bench>
             "-DARGS=tg;-m;${_d}/tiny-s1-q4km.gguf;-n;4;-d;${_bad}" -DEXIT=2 "-DERR=bad list '.*' for -d"
             -P ${CMAKE_CURRENT_LIST_FILE})
  endforeach()
  add_test(NAME bench_speed_bad_args COMMAND qwenrt-bench pp -m ${_d}/tiny-s1-q4km.gguf -p x)
  add_test(NAME bench_speed_no_model COMMAND qwenrt-bench pp -m ${_d}/no-such.gguf)
  set_tests_properties(bench_speed_bad_args bench_speed_no_model PROPERTIES WILL_FAIL TRUE)
endif()
