# Preprocesses redlock.h, drops the lines the preprocessor leaves starting
# with '#', and has LuaJIT's ffi.cdef read the result (see ffi_test.lua).
# Variables: CC, HEADER, LUAJIT, SCRIPT, OUT, and LIBRARY (may be empty).

execute_process(COMMAND ${CC} -E -P ${HEADER}
                OUTPUT_VARIABLE text RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cannot preprocess ${HEADER}")
endif()
string(REGEX REPLACE "(^|\n)#[^\n]*" "\\1" text "${text}")
file(WRITE ${OUT} "${text}")

execute_process(COMMAND ${LUAJIT} ${SCRIPT} ${OUT} ${LIBRARY} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "luajit could not use ${OUT}")
endif()
