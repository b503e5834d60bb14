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
  # --mtp on a tiny synthetic file with an MTP head (made by qwenrt-cli synth, a fixture):
  # --oracle-acceptance 1 runs the real head on every draft call and hands out the oracle's tokens,
  # all right: acceptance 1.000, and the report says the head's cost was paid. Without the option
  # the head's own drafts are checked (random weights: the count, not the rate, is what is known).
  if(QWENRT_BUILD_EXAMPLES)
    set(_mtp_file ${CMAKE_CURRENT_BINARY_DIR}/bench-tiny-mtp.gguf)
    add_test(NAME bench_speed_mtp_synth COMMAND qwenrt-cli synth --shape tiny --mtp --out ${_mtp_file})
    set_tests_properties(bench_speed_mtp_synth PROPERTIES FIXTURES_SETUP bench_tiny_mtp)
    add_test(NAME bench_speed_mtp_oracle COMMAND qwenrt-bench tg -m ${_mtp_file} -n 8 -t 2 -r 1 --mtp 2
             --oracle-acceptance 1)
    set_tests_properties(bench_speed_mtp_oracle PROPERTIES FIXTURES_REQUIRED bench_tiny_mtp PASS_REGULAR_EXPRESSION
                         "draft cost: real MTP head \\(oracle tokens.*\\| tg8 mtp2 A1\\.00 \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+x \\| 1\\.000 \\| [0-9.]+ \\| [0-9.]+ \\| yes \\|")
    # chat_repl --max-draft: a reply through the C ABI with the head drafting, /stats shows counts.
    add_test(NAME chat_repl_max_draft COMMAND sh -c
             "printf 'Hello there\\n/stats\\n/quit\\n' | \"$<TARGET_FILE:chat_repl>\" --model ${_mtp_file} --max-draft 2 --max-tokens 8 --no-think --threads 2")
    set_tests_properties(chat_repl_max_draft PROPERTIES FIXTURES_REQUIRED bench_tiny_mtp PASS_REGULAR_EXPRESSION
                         "speculation: max draft 2, [1-9][0-9]* drafted, [0-9]+ accepted")
    add_test(NAME bench_speed_mtp_adaptive COMMAND qwenrt-bench tg -m ${_mtp_file} -n 16 -t 2 -r 1 --mtp 3
             --adaptive)
    set_tests_properties(bench_speed_mtp_adaptive PROPERTIES FIXTURES_REQUIRED bench_tiny_mtp PASS_REGULAR_EXPRESSION
                         "\\| tg16 mtp3 head adaptive \\|.*\\| yes \\|")
    add_test(NAME bench_speed_mtp_head COMMAND qwenrt-bench tg -m ${_mtp_file} -n 8 -t 2 -r 1 --mtp 2)
    set_tests_properties(bench_speed_mtp_head PROPERTIES FIXTURES_REQUIRED bench_tiny_mtp PASS_REGULAR_EXPRESSION
                         "draft cost: real MTP head \\(the head's own tokens\\).*\\| tg8 mtp2 head \\|.*\\| yes \\|")
  endif()
  # No head: the zero-cost oracle, said plainly.
  add_test(NAME bench_speed_mtp_no_head COMMAND qwenrt-bench tg -m ${_d}/tiny-s1-q4km.gguf -n 8 -t 2 -r 1 --mtp 2
           --oracle-acceptance 1)
  set_tests_properties(bench_speed_mtp_no_head PROPERTIES PASS_REGULAR_EXPRESSION
                       "draft cost: none \\(no MTP head.*\\| tg8 mtp2 A1\\.00 \\|.*\\| 1\\.000 \\|")
  # The peer's MTP decoding through its llama-server over loopback, next to ours on the same
  # context (--chat renders one user message through the file's template). Only where the peer's
  # tools are (../shared/peer, an instrument the project never ships).
  set(_peer ${PROJECT_SOURCE_DIR}/../shared/peer)
  if(QWENRT_BUILD_EXAMPLES AND EXISTS ${_peer}/bin/llama-server)
    add_test(NAME bench_speed_mtp_peer COMMAND qwenrt-bench tg -m ${_mtp_file} -n 8 -t 2 -r 1 --mtp 2
             --chat "What is the capital of Kenya?" --peer ${_peer})
    set_tests_properties(bench_speed_mtp_peer PROPERTIES FIXTURES_REQUIRED bench_tiny_mtp TIMEOUT 300
                         PASS_REGULAR_EXPRESSION
                         "llama.cpp \\(llama-server.*\\| tg8 mtp2 head \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+x \\| [0-9.]+ \\| [0-9.]+x \\| (yes|no) \\|")
  endif()
  # The trained demo model's own head on a chat prompt: real acceptance (>= 0.9 with one draft per
  # pass; 1.000 measured), and the emitted tokens are plain greedy's.
  add_test(NAME bench_speed_mtp_demo COMMAND qwenrt-bench tg -m ${_d}/demo-f32.gguf -n 32 -t 2 -r 1 --mtp 1
           --chat "What is 37 plus 45?")
  set_tests_properties(bench_speed_mtp_demo PROPERTIES PASS_REGULAR_EXPRESSION
                       "\\| tg32 mtp1 head \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+x \\| (0\\.9|1\\.0)[0-9]* \\|.*\\| yes \\|")
  add_test(NAME bench_speed_chat_needs_mtp COMMAND qwenrt-bench tg -m ${_d}/tiny-s1-q4km.gguf --chat hi)
  add_test(NAME bench_speed_bad_args COMMAND qwenrt-bench pp -m ${_d}/tiny-s1-q4km.gguf -p x)
  add_test(NAME bench_speed_no_model COMMAND qwenrt-bench pp -m ${_d}/no-such.gguf)
  set_tests_properties(bench_speed_bad_args bench_speed_no_model bench_speed_chat_needs_mtp PROPERTIES
                     WILL_FAIL TRUE)
endif()
