# metron-config.cmake: find_package(metron) support. Relocatable: everything is found relative
# to this file (<prefix>/lib/cmake/metron/), so an install prefix can be moved or copied.
#
# Targets:
#   metron::metron         libmetron.so (the C API; also the `metron run` preload runtime)
#   metron::metron-static  libmetron.a with the system libraries it needs
# Variables: metron_VERSION, metron_INCLUDE_DIR, metron_LIBRARY, metron_STATIC_LIBRARY.

get_filename_component(_metron_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(metron_INCLUDE_DIR "${_metron_prefix}/include")
set(metron_LIBRARY "${_metron_prefix}/lib/libmetron.so")
set(metron_STATIC_LIBRARY "${_metron_prefix}/lib/libmetron.a")

# The version lives in one place: the header.
file(STRINGS "${metron_INCLUDE_DIR}/metron/metron.h" _metron_version_line
     REGEX "^#define METRON_VERSION_STRING \"[0-9.]+\"")
string(REGEX REPLACE ".*\"([0-9.]+)\".*" "\\1" metron_VERSION "${_metron_version_line}")

include(CMakeFindDependencyMacro)
find_dependency(Threads)

foreach(_metron_file IN ITEMS "${metron_INCLUDE_DIR}/metron/metron.h" "${metron_LIBRARY}")
  if(NOT EXISTS "${_metron_file}")
    set(metron_FOUND FALSE)
    set(metron_NOT_FOUND_MESSAGE "metron: ${_metron_file} is missing; reinstall with scripts/install.sh")
    return()
  endif()
endforeach()

if(NOT TARGET metron::metron)
  add_library(metron::metron SHARED IMPORTED)
  set_target_properties(metron::metron PROPERTIES
    IMPORTED_LOCATION "${metron_LIBRARY}"
    IMPORTED_SONAME "libmetron.so"
    INTERFACE_INCLUDE_DIRECTORIES "${metron_INCLUDE_DIR}")
endif()

if(NOT TARGET metron::metron-static AND EXISTS "${metron_STATIC_LIBRARY}")
  add_library(metron::metron-static STATIC IMPORTED)
  # What `rustc --print native-static-libs` lists for libmetron.a.
  set_target_properties(metron::metron-static PROPERTIES
    IMPORTED_LOCATION "${metron_STATIC_LIBRARY}"
    IMPORTED_LINK_INTERFACE_LANGUAGES "C"
    INTERFACE_INCLUDE_DIRECTORIES "${metron_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "stdc++;gcc_s;util;rt;Threads::Threads;m;${CMAKE_DL_LIBS}")
endif()

set(metron_FOUND TRUE)
unset(_metron_prefix)
unset(_metron_file)
unset(_metron_version_line)
