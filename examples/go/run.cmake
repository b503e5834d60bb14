# Builds the Go example with `go build` in its source directory (output in the build tree) and runs
# it. Inputs: GO, SRC, OUT, MODEL (the environment carries the cgo flags).
execute_process(COMMAND ${GO} build -o ${OUT} . WORKING_DIRECTORY ${SRC} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "go build failed")
endif()
execute_process(COMMAND ${OUT} ${MODEL} 48 RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the Go example failed (${rc})")
endif()
