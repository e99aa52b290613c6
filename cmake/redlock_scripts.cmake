# The Lua scripts (core/engine/scripts/*.lua) as C strings with their SHA1
# digests (EVALSHA), from one source: scripts.c from scripts.c.in.
#
# Included by core/CMakeLists.txt (redlock_scripts_c), and run on its own by
# tests/sim/mutate.sh for a mutant of a script:
#   cmake -DSCRIPTS_DIR=... -DTEMPLATE=.../scripts.c.in -DOUT=.../scripts.c -P redlock_scripts.cmake
set(REDLOCK_SCRIPTS acquire release extend inspect force fence guard extend_many rw sem fair)

function(redlock_scripts_c scripts_dir template out)
  foreach(script IN LISTS REDLOCK_SCRIPTS)
    file(READ ${scripts_dir}/${script}.lua _body)
    string(SHA1 _sha "${_body}")
    string(REPLACE "\\" "\\\\" _body "${_body}")
    string(REPLACE "\"" "\\\"" _body "${_body}")
    string(REGEX REPLACE "\n$" "" _body "${_body}")
    string(REPLACE "\n" "\\n\"\n    \"" _body "${_body}")
    string(TOUPPER ${script} _name)
    set(${_name}_BODY "    \"${_body}\\n\"")
    set(${_name}_SHA1 ${_sha})
  endforeach()
  configure_file(${template} ${out} @ONLY)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  redlock_scripts_c(${SCRIPTS_DIR} ${TEMPLATE} ${OUT})
endif()
