# Run by the capi_install test (cmake -P). Inputs: BUILD_DIR, WORK, CONSUMER, PKG_CONFIG, CC, CXX,
# GENERATOR, MODEL.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "$ ${ARGN}\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
set(prefix ${WORK}/prefix)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f include/qwenrt/qwenrt.h lib/libqwenrt.a lib/cmake/qwenrt/qwenrtConfig.cmake
          lib/cmake/qwenrt/qwenrtConfigVersion.cmake lib/pkgconfig/qwenrt.pc)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
file(GLOB sonames ${prefix}/lib/libqwenrt.so.*)
if(NOT sonames)
  message(FATAL_ERROR "libqwenrt.so.* not installed")
endif()

# The consumer is built from a copy outside the source tree, against the installed files only.
file(COPY ${CONSUMER}/ DESTINATION ${WORK}/src)
run(${CMAKE_COMMAND} -S ${WORK}/src -B ${WORK}/build -G ${GENERATOR} -DCMAKE_C_COMPILER=${CC}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK}/build)
run(${WORK}/build/consumer ${MODEL})
run(${WORK}/build/consumer_static ${MODEL})

# pkg-config, shared.
set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
run(${PKG_CONFIG} --cflags --libs qwenrt)
string(STRIP "${last_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run(${CC} -std=c99 -Wall -Wextra -Werror -pedantic ${WORK}/src/consumer.c -o ${WORK}/consumer_pc ${flags}
    -Wl,-rpath,${prefix}/lib)
run(${WORK}/consumer_pc ${MODEL})
run(readelf -d ${WORK}/consumer_pc)
if(NOT last_output MATCHES "libqwenrt\\.so\\.[0-9]+")
  message(FATAL_ERROR "consumer_pc does not depend on the versioned SONAME")
endif()
# pkg-config --static: link libqwenrt.a and its private dependencies.
run(${PKG_CONFIG} --static --cflags --libs-only-other --libs-only-L qwenrt)
string(STRIP "${last_output}" sflags)
separate_arguments(sflags UNIX_COMMAND "${sflags}")
run(${PKG_CONFIG} --static --libs-only-l qwenrt)
string(STRIP "${last_output}" slibs)
string(REPLACE "-lqwenrt" "${prefix}/lib/libqwenrt.a" slibs "${slibs}")
separate_arguments(slibs UNIX_COMMAND "${slibs}")
run(${CC} -std=c99 ${WORK}/src/consumer.c -o ${WORK}/consumer_pc_static ${sflags} ${slibs})
run(${WORK}/consumer_pc_static ${MODEL})
# The header-only GGUF reader works from the installed include directory alone.
run(${CXX} -std=c++20 ${WORK}/src/gguf_consumer.cpp -I${prefix}/include -o ${WORK}/gguf_consumer)
run(${WORK}/gguf_consumer ${MODEL})
message(STATUS "capi_install: OK")
