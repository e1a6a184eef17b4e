# Compiles a file that includes HEADER with FLAGS (a layer's include folders)
# and checks the outcome: EXPECT is OK (it compiles) or DENIED (the header is
# not found: the layer may not use it). Run by the layering.* tests.
file(MAKE_DIRECTORY ${WORK})
string(MAKE_C_IDENTIFIER "${HEADER}-${EXPECT}-${FLAGS}" id)
string(MD5 id "${id}")
set(probe ${WORK}/${id}.cpp)
file(WRITE ${probe} "#include \"${HEADER}\"\n")
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only ${FLAGS} ${probe}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(EXPECT STREQUAL "OK")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${HEADER} should be visible to this layer but does not compile:\n${err}")
  endif()
elseif(rc EQUAL 0)
  message(FATAL_ERROR "${HEADER} compiles in a layer that may not use it: the build does not "
                      "enforce the layering of docs/ARCHITECTURE.md")
elseif(NOT err MATCHES "${HEADER}: No such file")
  message(FATAL_ERROR "${HEADER} failed for another reason than being out of reach:\n${err}")
endif()
