# Packaging: `cmake --install` puts the public headers, libqwenrt.so (SONAME libqwenrt.so.<ABI>) and
# libqwenrt.a, a CMake package (find_package(qwenrt) -> qwenrt::qwenrt, qwenrt::qwenrt_static) and
# qwenrt.pc under the prefix. Also limits the shared library's exports to the C ABI (qwenrt_*).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Only qwenrt_* leaves libqwenrt.so: -fvisibility=hidden alone still exports the standard library's
# template instantiations (weak symbols of std:: types).
set(QWENRT_VERSION_SCRIPT ${PROJECT_SOURCE_DIR}/cmake/install/qwenrt.map)
target_link_options(qwenrt PRIVATE "LINKER:--version-script=${QWENRT_VERSION_SCRIPT}")
set_property(TARGET qwenrt APPEND PROPERTY LINK_DEPENDS ${QWENRT_VERSION_SCRIPT})

set(QWENRT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/qwenrt)
set(QWENRT_PKGCONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(TARGETS qwenrt qwenrt_static
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/qwenrt DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")

# Relative paths from the package files back to the prefix keep the installed tree relocatable
# (`cmake --install --prefix` may choose a prefix other than CMAKE_INSTALL_PREFIX).
file(RELATIVE_PATH QWENRT_CMAKE_TO_PREFIX /prefix/${QWENRT_CMAKE_DIR} /prefix)
file(RELATIVE_PATH QWENRT_PC_TO_PREFIX /prefix/${QWENRT_PKGCONFIG_DIR} /prefix)
string(REGEX REPLACE "/$" "" QWENRT_CMAKE_TO_PREFIX "${QWENRT_CMAKE_TO_PREFIX}")
string(REGEX REPLACE "/$" "" QWENRT_PC_TO_PREFIX "${QWENRT_PC_TO_PREFIX}")
set(QWENRT_SHARED_FILE
  ${CMAKE_SHARED_LIBRARY_PREFIX}qwenrt${CMAKE_SHARED_LIBRARY_SUFFIX}.${PROJECT_VERSION})
set(QWENRT_SONAME ${CMAKE_SHARED_LIBRARY_PREFIX}qwenrt${CMAKE_SHARED_LIBRARY_SUFFIX}.${QWENRT_SOVERSION})
set(QWENRT_STATIC_FILE ${CMAKE_STATIC_LIBRARY_PREFIX}qwenrt${CMAKE_STATIC_LIBRARY_SUFFIX})
set(QWENRT_PC_LIBS_PRIVATE "-lfmt -lutf8proc -pthread -lstdc++ -lm")
set(QWENRT_PC_CUDA_NOTE "")
if(QWENRT_HAVE_CUDA)
  set(QWENRT_HAVE_CUDA_BOOL TRUE)
  set(QWENRT_PC_CUDA_NOTE ", CUDAToolkit")
  string(APPEND QWENRT_PC_LIBS_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -ldl -lrt")
else()
  set(QWENRT_HAVE_CUDA_BOOL FALSE)
endif()

configure_file(${PROJECT_SOURCE_DIR}/cmake/install/qwenrtConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/qwenrtConfig.cmake @ONLY)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/qwenrtConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
configure_file(${PROJECT_SOURCE_DIR}/cmake/install/qwenrt.pc.in
  ${PROJECT_BINARY_DIR}/package/qwenrt.pc @ONLY)

install(FILES ${PROJECT_BINARY_DIR}/package/qwenrtConfig.cmake
  ${PROJECT_BINARY_DIR}/package/qwenrtConfigVersion.cmake DESTINATION ${QWENRT_CMAKE_DIR})
install(FILES ${PROJECT_BINARY_DIR}/package/qwenrt.pc DESTINATION ${QWENRT_PKGCONFIG_DIR})
