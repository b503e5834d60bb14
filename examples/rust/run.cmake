# Builds the Rust example with cargo from a copy in the build tree (so Cargo.lock and target/ never
# land in the source tree) and runs it. Inputs: CARGO, SRC, WORK, LIBDIR, MODEL.
file(COPY ${SRC}/Cargo.toml ${SRC}/build.rs ${SRC}/src DESTINATION ${WORK})
set(ENV{QWENRT_LIB_DIR} ${LIBDIR})
set(ENV{LD_LIBRARY_PATH} ${LIBDIR})
set(ENV{CARGO_TARGET_DIR} ${WORK}/target)
execute_process(COMMAND ${CARGO} build --quiet --offline --release WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cargo build failed")
endif()
execute_process(COMMAND ${WORK}/target/release/two_turn_chat ${MODEL} 48 RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the Rust example failed (${rc})")
endif()
