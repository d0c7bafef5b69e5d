# metron-config-version.cmake: the version comes from the installed header. Compatible when
# the major version matches (for 0.x: the minor too) and the installed one is not older.

get_filename_component(_metron_header "${CMAKE_CURRENT_LIST_DIR}/../../../include/metron/metron.h" ABSOLUTE)
file(STRINGS "${_metron_header}" _metron_version_line
     REGEX "^#define METRON_VERSION_STRING \"[0-9.]+\"")
string(REGEX REPLACE ".*\"([0-9.]+)\".*" "\\1" PACKAGE_VERSION "${_metron_version_line}")

if(PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" _metron_have "${PACKAGE_VERSION}")
  set(_metron_have_major "${CMAKE_MATCH_1}")
  set(_metron_have_minor "${CMAKE_MATCH_2}")
  if(PACKAGE_FIND_VERSION_MAJOR STREQUAL _metron_have_major
     AND (NOT _metron_have_major STREQUAL "0" OR PACKAGE_FIND_VERSION_MINOR STREQUAL _metron_have_minor
          OR PACKAGE_FIND_VERSION STREQUAL ""))
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  elseif(PACKAGE_FIND_VERSION STREQUAL "")
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  else()
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  endif()
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()

# A 64-bit library only.
if(NOT CMAKE_SIZEOF_VOID_P STREQUAL "" AND NOT CMAKE_SIZEOF_VOID_P STREQUAL "8")
  set(PACKAGE_VERSION "${PACKAGE_VERSION} (64-bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
unset(_metron_header)
unset(_metron_version_line)
