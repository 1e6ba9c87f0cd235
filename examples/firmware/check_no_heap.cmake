# Fails when OBJECT (the firmware's code: the generated headers and the runtime it calls)
# refers to the C++ heap, C allocation, exceptions or RTTI. Only stdio, string functions and
# the VTA driver API may remain undefined.
#   cmake -DNM=nm -DOBJECT=firmware.o -P check_no_heap.cmake
execute_process(COMMAND ${NM} --undefined-only ${OBJECT} OUTPUT_VARIABLE symbols
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "FAIL: ${NM} failed on ${OBJECT}")
endif()
# operator new/new[] (_Znw, _Zna), malloc and friends, throwing, typeinfo
string(REGEX MATCHALL "[^\n]*( _Znw| _Zna| malloc| calloc| realloc| __cxa_allocate_exception| __cxa_throw| _ZTI)[^\n]*"
       found "${symbols}")
if(found)
  list(JOIN found "\n" listing)
  message(FATAL_ERROR "FAIL: ${OBJECT} refers to the heap, exceptions or RTTI:\n${listing}")
endif()
string(REGEX MATCHALL "[^\n]* U [^\n]*" undefined "${symbols}")
list(JOIN undefined "\n" listing)
message("PASS: no heap, exceptions or RTTI in ${OBJECT}; it needs only:\n${listing}")
