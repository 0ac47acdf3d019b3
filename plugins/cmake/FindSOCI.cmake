# Finds SOCI 4 (Debian's libsoci-dev ships no CMake config).
# Defines SOCI::core, SOCI::sqlite3 and SOCI::postgresql when found.
find_path(SOCI_INCLUDE_DIR soci/soci.h)
find_library(SOCI_CORE_LIBRARY soci_core)
find_library(SOCI_SQLITE3_LIBRARY soci_sqlite3)
find_library(SOCI_POSTGRESQL_LIBRARY soci_postgresql)

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(SOCI REQUIRED_VARS SOCI_INCLUDE_DIR SOCI_CORE_LIBRARY)

if(SOCI_FOUND AND NOT TARGET SOCI::core)
  add_library(SOCI::core SHARED IMPORTED GLOBAL)
  set_target_properties(SOCI::core PROPERTIES IMPORTED_LOCATION "${SOCI_CORE_LIBRARY}"
                                              INTERFACE_INCLUDE_DIRECTORIES "${SOCI_INCLUDE_DIR}")
  foreach(backend sqlite3 postgresql)
    string(TOUPPER ${backend} upper)
    if(SOCI_${upper}_LIBRARY)
      add_library(SOCI::${backend} SHARED IMPORTED GLOBAL)
      set_target_properties(SOCI::${backend} PROPERTIES IMPORTED_LOCATION "${SOCI_${upper}_LIBRARY}"
                                                        INTERFACE_LINK_LIBRARIES SOCI::core)
    endif()
  endforeach()
endif()
mark_as_advanced(SOCI_INCLUDE_DIR SOCI_CORE_LIBRARY SOCI_SQLITE3_LIBRARY SOCI_POSTGRESQL_LIBRARY)
