# The whole llm_layer run (example_llm_layer_full), and the figure it prints for the float32
# layer's 2,048-token prefill beside each integer softmax's: the VTA cycles its own prefill of
# 2,048 tokens from an empty cache printed, which the comparisons take instead of a run of
# their own (examples/llm_layer.cpp).
#   cmake -DEXE=<llm_layer> -P check_llm_layer.cmake
execute_process(COMMAND ${EXE} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "FAIL: llm_layer exited with ${rc}")
endif()
if(NOT out MATCHES "prefill +token 2048, last_token +0: +([0-9]+) VTA cycles")
  message(FATAL_ERROR "FAIL: no prefill of 2048 tokens from an empty cache in the output")
endif()
set(prefill ${CMAKE_MATCH_1})
string(REGEX MATCHALL "softmax\\), [0-9]+ with the float32 one" lines "${out}")
list(LENGTH lines n)
if(NOT n EQUAL 3)
  message(FATAL_ERROR "FAIL: ${n} comparisons print the float32 layer's cycles, not 3 (Integer, "
                      "IntegerSplit, IntegerDeferred)")
endif()
foreach(line IN LISTS lines)
  string(REGEX MATCH "([0-9]+) with" _ "${line}")
  if(NOT CMAKE_MATCH_1 EQUAL prefill)
    message(FATAL_ERROR "FAIL: a comparison prints ${CMAKE_MATCH_1} VTA cycles for the float32 "
                        "layer's prefill of 2048 tokens, its own prefill ${prefill}")
  endif()
endforeach()
message("PASS: the three comparisons print the float32 prefill's ${prefill} VTA cycles")
