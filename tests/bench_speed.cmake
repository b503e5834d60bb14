# qwenrt-bench pp / tg / speed on the tiny fixture: the table and the JSON come out (and, when the
# llama.cpp's tools are next to the checkout, the side-by-side columns); bad arguments exit non-zero.
if(QWENRT_BUILD_BENCH)
  find_package(benchmark QUIET)  # bench/ builds qwenrt-bench only with it
endif()
if(QWENRT_BUILD_BENCH AND benchmark_FOUND)
  set(_d ${CMAKE_CURRENT_SOURCE_DIR}/data)
  add_test(NAME bench_speed_table COMMAND qwenrt-bench speed -m ${_d}/tiny-s1-q4km.gguf -p 16 -n 8 -t 2 -r 1)
  set_tests_properties(bench_speed_table PROPERTIES PASS_REGULAR_EXPRESSION "\\| pp16 \\|.*\n.*\\| tg8 \\|")
  add_test(NAME bench_speed_json COMMAND qwenrt-bench tg -m ${_d}/tiny-s1-q4km.gguf -n 4 -r 2 --json)
  set_tests_properties(bench_speed_json PROPERTIES PASS_REGULAR_EXPRESSION "\"test\": \"tg4\".*\"samples\"")
  add_test(NAME bench_speed_bad_args COMMAND qwenrt-bench pp -m ${_d}/tiny-s1-q4km.gguf -p x)
  add_test(NAME bench_speed_no_model COMMAND qwenrt-bench pp -m ${_d}/no-such.gguf)
  set_tests_properties(bench_speed_bad_args bench_speed_no_model PROPERTIES WILL_FAIL TRUE)
endif()
