# capi_symbols: libqwenrt.so exports only qwenrt_* symbols, exports every QWENRT_API function of
# qwenrt.h, and carries the SONAME libqwenrt.so.<QWENRT_ABI_VERSION>. Needs nm and readelf (binutils).
find_program(QWENRT_NM_EXE nm)
find_program(QWENRT_READELF_EXE readelf)
if(QWENRT_NM_EXE AND QWENRT_READELF_EXE)
  add_test(NAME capi_symbols COMMAND ${CMAKE_COMMAND}
    -DLIB=$<TARGET_FILE:qwenrt> -DNM=${QWENRT_NM_EXE} -DREADELF=${QWENRT_READELF_EXE}
    -DHEADER=${PROJECT_SOURCE_DIR}/include/qwenrt/qwenrt.h
    -P ${CMAKE_CURRENT_SOURCE_DIR}/capi/check_symbols.cmake)
endif()
