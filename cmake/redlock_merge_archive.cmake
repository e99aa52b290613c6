# cmake -DAR=ar -DARCHIVE=a.a -DADD=b.a -DWORK=dir -P redlock_merge_archive.cmake
# Adds the objects of the archive ADD to the archive ARCHIVE (WORK: scratch).
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${AR} x ${ADD} WORKING_DIRECTORY ${WORK} COMMAND_ERROR_IS_FATAL ANY)
file(GLOB _objects ${WORK}/*.o)
if(NOT _objects)
  message(FATAL_ERROR "no objects in ${ADD}")
endif()
execute_process(COMMAND ${AR} rs ${ARCHIVE} ${_objects} COMMAND_ERROR_IS_FATAL ANY)
