# paxocl_embed_kernels(TARGET <lib> SOURCES a.cl b.cl ...)
# Generates a C++ file holding every OpenCL C source as a string, registered by file stem
# (kernels_cl/elementwise.cl -> "elementwise"), and adds it to <lib>. Editing a .cl file re-runs
# the generator, so the binary always carries the sources it was built from.
function(paxocl_embed_kernels)
  cmake_parse_arguments(ARG "" "TARGET" "SOURCES" ${ARGN})
  set(out ${CMAKE_CURRENT_BINARY_DIR}/embedded_kernel_sources.cpp)
  set(abs_sources)
  foreach(src IN LISTS ARG_SOURCES)
    get_filename_component(abs ${src} ABSOLUTE)
    list(APPEND abs_sources ${abs})
  endforeach()
  string(REPLACE ";" "|" joined "${abs_sources}")
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${out} "-DSOURCES=${joined}"
            -P ${PROJECT_SOURCE_DIR}/cmake/GenerateEmbeddedKernels.cmake
    DEPENDS ${abs_sources} ${PROJECT_SOURCE_DIR}/cmake/GenerateEmbeddedKernels.cmake
    COMMENT "Embedding OpenCL kernel sources"
    VERBATIM)
  target_sources(${ARG_TARGET} PRIVATE ${out})
endfunction()
