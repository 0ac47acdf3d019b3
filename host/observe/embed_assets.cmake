# Writes OUTPUT, a C++ file defining one std::string_view per asset, from the
# dashboard's files. Run at build time whenever an asset changes.
#   cmake -DOUTPUT=... -DASSETS="NAME=FILE|NAME=FILE|..." -P embed_assets.cmake
set(text "// Generated from host/observe/dashboard/ by embed_assets.cmake; do not edit.\n")
string(APPEND text "#include \"observe/dashboard_assets.h\"\n\nnamespace nodeplane::observe {\n\n")
string(REPLACE "|" ";" pairs "${ASSETS}")
foreach(pair IN LISTS pairs)
  string(REPLACE "=" ";" parts "${pair}")
  list(GET parts 0 name)
  list(GET parts 1 file)
  file(READ "${file}" content)
  string(FIND "${content}" ")asset\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${file} contains the raw string's delimiter )asset\"")
  endif()
  string(APPEND text "extern const std::string_view ${name} = R\"asset(${content})asset\";\n\n")
endforeach()
string(APPEND text "}  // namespace nodeplane::observe\n")
file(WRITE "${OUTPUT}" "${text}")
