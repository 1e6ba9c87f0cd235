# Fails when OBJECT defines any dlavm function. A unit that includes every header and uses
# nothing must compile none: inline definitions are only emitted where they are used, unless
# something forces them out, such as a virtual function declared without `inline` (the class's
# key function), which emits the vtable and everything it reaches in every unit.
#   cmake -DNM=nm -DOBJECT=umbrella_unused.o -P check_no_code.cmake
execute_process(COMMAND ${NM} -C --defined-only ${OBJECT} OUTPUT_VARIABLE symbols
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${NM} failed on ${OBJECT}")
endif()
# Functions (T t W w) and vtables or other weak objects (V v) of dlavm's namespaces.
string(REGEX MATCHALL "[^\n]* [TtWwVv] [^\n]*dlavm::[^\n]*" emitted "${symbols}")
list(LENGTH emitted count)
if(count GREATER 0)
  list(JOIN emitted "\n" listing)
  message(FATAL_ERROR "${OBJECT} uses nothing but defines ${count} dlavm functions:\n${listing}")
endif()
message(STATUS "no dlavm code in ${OBJECT}")
