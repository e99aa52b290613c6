# The Lua scripts (core/engine/scripts/*.lua, every file there) as C strings
# with their SHA1 digests (EVALSHA), and as one function library (FUNCTION
# LOAD, FCALL), from one source: scripts.c from scripts.c.in.
#
# The library is named redlock_v<V> and each script is its function
# redlock_v<V>_<script>, where V is the start of the SHA1 of the library's
# text: any change of a script makes a library of another name, which a
# server holds beside the older one (the clients of each version call their
# own). A script's flags as a function are a line of its own,
# "-- function flags: allow-oom, no-writes" (the rest of the line is a
# comment; none: a function that may write, refused
# whole while the server is out of memory); each function is called with the
# script's KEYS and ARGV. The library also has redlock_v<V>_version, which
# returns the library's name: a client's probe.
#
# Included by core/CMakeLists.txt (redlock_scripts_c), and run on its own by
# tests/sim/mutate.sh for a mutant of a script:
#   cmake -DSCRIPTS_DIR=... -DTEMPLATE=.../scripts.c.in -DOUT=.../scripts.c -P redlock_scripts.cmake

# The scripts' names (each file's name without .lua), sorted, into var.
function(redlock_script_names scripts_dir var)
  get_filename_component(scripts_dir ${scripts_dir} ABSOLUTE)
  file(GLOB _files RELATIVE ${scripts_dir} ${scripts_dir}/*.lua)
  list(SORT _files)
  string(REPLACE ".lua" "" _names "${_files}")
  set(${var} ${_names} PARENT_SCOPE)
endfunction()

# text as the lines of a C string literal, indented, into var.
function(redlock_c_string text var)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REPLACE "\"" "\\\"" text "${text}")
  string(REGEX REPLACE "\n$" "" text "${text}")
  string(REPLACE "\n" "\\n\"\n    \"" text "${text}")
  set(${var} "    \"${text}\\n\"" PARENT_SCOPE)
endfunction()

function(redlock_scripts_c scripts_dir template out)
  get_filename_component(scripts_dir ${scripts_dir} ABSOLUTE)
  redlock_script_names(${scripts_dir} _scripts)
  set(_lib "#!lua name=redlock_v@V@\n-- redlock's scripts as functions (core/engine/scripts, generated).\n")
  foreach(script IN LISTS _scripts)
    file(READ ${scripts_dir}/${script}.lua _body)
    string(REGEX MATCH "\n-- function flags: ([a-z-]+(, [a-z-]+)*)" _flags "\n${_body}")
    set(_flags "${CMAKE_MATCH_1}")
    string(REGEX REPLACE "[ ]*,[ ]*" "', '" _flags "${_flags}")
    if(_flags)
      set(_flags "'${_flags}'")
    endif()
    string(REGEX REPLACE "\n$" "" _text "${_body}")
    string(APPEND _lib "redis.register_function{function_name = 'redlock_v@V@_${script}', "
           "flags = {${_flags}}, callback = function(KEYS, ARGV)\n${_text}\nend}\n")
  endforeach()
  string(APPEND _lib "redis.register_function{function_name = 'redlock_v@V@_version', "
         "flags = {'no-writes'}, callback = function() return 'redlock_v@V@' end}\n")
  string(SHA1 _v "${_lib}")
  string(SUBSTRING ${_v} 0 12 _v)
  string(REPLACE "@V@" "${_v}" _lib "${_lib}")

  set(RL_SCRIPT_DEFS "")
  set(RL_SCRIPT_LIST "")
  foreach(script IN LISTS _scripts)
    file(READ ${scripts_dir}/${script}.lua _body)
    string(SHA1 _sha "${_body}")
    redlock_c_string("${_body}" _c)
    string(APPEND RL_SCRIPT_DEFS "const rl_script rl_script_${script} = {\n${_c},\n"
           "    \"${_sha}\",\n    \"redlock_v${_v}_${script}\"\n};\n\n")
    string(APPEND RL_SCRIPT_LIST "    &rl_script_${script},\n")
  endforeach()
  list(LENGTH _scripts RL_SCRIPT_COUNT)
  redlock_c_string("${_lib}" RL_LIBRARY)
  set(RL_LIBRARY_NAME "redlock_v${_v}")
  configure_file(${template} ${out} @ONLY)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  redlock_scripts_c(${SCRIPTS_DIR} ${TEMPLATE} ${OUT})
endif()
