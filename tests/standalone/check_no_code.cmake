# Fails when OBJECT defines any dlavm function or global object. A unit that includes every
# header and uses nothing must compile none: inline definitions are only emitted where they are
# used, unless something forces them out, such as a definition missing its `inline` (a
# duplicate symbol in a program of two such units) or a virtual function declared without
# `inline` (the class's key function), which emits the vtable and everything it reaches in
# every unit.
#   cmake -DNM=nm -DOBJECT=umbrella_unused.o -P check_no_code.cmake
execute_process(COMMAND ${NM} -C --defined-only ${OBJECT} OUTPUT_VARIABLE symbols
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${NM} failed on ${OBJECT}")
endif()
# Functions (T t W w), vtables or other weak objects (V v) and global data (B D R: a variable
# defined without `inline`) of dlavm's namespaces.
string(REGEX MATCHALL "[^\n]* [TtWwVvBDR] [^\n]*dlavm::[^\n]*" emitted "${symbols}")
list(LENGTH emitted count)
if(count GREATER 0)
  list(JOIN emitted "\n" listing)
  message(FATAL_ERROR "${OBJECT} uses nothing but defines ${count} dlavm functions or objects:\n${listing}")
endif()
message(STATUS "no dlavm code in ${OBJECT}")
