# Reads the symbols a firmware object needs from elsewhere: never the C++ heap, C allocation,
# exceptions or RTTI. With DEBUG given: a printf-family function (printf, snprintf, their _chk
# forms, puts) exactly when DEBUG is ON (tests/standalone/firmware_symbols.cpp: a header
# emitted with `debug` logs, any other must link none of them); without it, any.
#   cmake -DNM=nm -DOBJECT=firmware.o [-DDEBUG=OFF] -P check_firmware_symbols.cmake
execute_process(COMMAND ${NM} --undefined-only ${OBJECT} OUTPUT_VARIABLE symbols
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "FAIL: ${NM} failed on ${OBJECT}")
endif()
string(REGEX MATCHALL "[^\n]*( _Znw| _Zna| malloc| calloc| realloc| __cxa_allocate_exception| __cxa_throw| _ZTI)[^\n]*"
       heap "${symbols}")
if(heap)
  list(JOIN heap "\n" listing)
  message(FATAL_ERROR "FAIL: ${OBJECT} refers to the heap, exceptions or RTTI:\n${listing}")
endif()
string(REGEX MATCHALL "[^\n]*( [_a-z]*printf[_a-z]*| puts| putchar)\n" printing "${symbols}\n")
list(JOIN printing "" listing)
if(NOT DEFINED DEBUG)
elseif(DEBUG AND NOT printing)
  message(FATAL_ERROR "FAIL: ${OBJECT}, of a header emitted with debug, links no printf-family "
                      "function: its log lines are not formatted")
elseif(NOT DEBUG AND printing)
  message(FATAL_ERROR "FAIL: ${OBJECT}, of headers emitted without debug, links:\n${listing}")
endif()
string(REGEX MATCHALL "[^\n]* U [^\n]*" undefined "${symbols}")
list(JOIN undefined "\n" listing)
message("PASS: ${OBJECT} needs only:\n${listing}")
