# `qwenrt-cli tokenize` prints exactly llama.cpp's id files for the fixture vocabulary
# (tests/data/tokenizer/*.fixture-vocab.out; --no-nfc like llama.cpp, --special for the chat
# prompts). Included by tests/CMakeLists.txt to register the tests; run with -P to do one check.
if(CMAKE_SCRIPT_MODE_FILE)
  execute_process(COMMAND ${CLI} tokenize --model ${MODEL} --texts ${TEXTS} ${EXTRA_ARGS}
                  OUTPUT_FILE ${OUT} RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "qwenrt-cli tokenize failed (${rc}): ${err}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT} ${EXPECTED} RESULT_VARIABLE diff)
  if(NOT diff EQUAL 0)
    message(FATAL_ERROR "qwenrt-cli tokenize output ${OUT} differs from ${EXPECTED}")
  endif()
  return()
endif()

if(QWENRT_BUILD_EXAMPLES)
  set(_tok ${CMAKE_CURRENT_SOURCE_DIR}/data/tokenizer)
  foreach(_case texts chat)
    set(_extra "--no-nfc")
    if(_case STREQUAL "chat")
      set(_extra "--no-nfc;--special")
    endif()
    add_test(NAME cli_tokenize_${_case} COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:qwenrt-cli>
             -DMODEL=${CMAKE_CURRENT_SOURCE_DIR}/data/tiny-s1-q4km.gguf -DTEXTS=${_tok}/${_case}.inp
             "-DEXTRA_ARGS=${_extra}" -DEXPECTED=${_tok}/${_case}.fixture-vocab.out
             -DOUT=${CMAKE_CURRENT_BINARY_DIR}/tokenize-${_case}.out -P ${CMAKE_CURRENT_LIST_FILE})
  endforeach()
endif()
