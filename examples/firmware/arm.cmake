# Cross-compiles the firmware example for 32-bit ARM (arm-linux-gnueabihf, Pynq's Cortex-A9)
# and runs it under qemu-arm on the models the native build generated.
#   cmake -DSOURCE_DIR=... -DMODEL_DIR=... -DWORK_DIR=... -DFMT_INCLUDE=... -P arm.cmake
# Prints "SKIPPED: ..." when the cross compiler or qemu-arm is missing.
find_program(ARM_CXX arm-linux-gnueabihf-g++)
find_program(QEMU_ARM qemu-arm)
if(NOT ARM_CXX OR NOT QEMU_ARM)
  message("SKIPPED: arm-linux-gnueabihf-g++ or qemu-arm not found (tools/setup.sh installs "
          "g++-arm-linux-gnueabihf and qemu-user)")
  return()
endif()
file(MAKE_DIRECTORY ${WORK_DIR}/fmt_include)
# the target has no libfmt: its headers alone, header-only, without the host's other headers
file(CREATE_LINK ${FMT_INCLUDE}/fmt ${WORK_DIR}/fmt_include/fmt SYMBOLIC)
set(ex ${SOURCE_DIR}/examples/firmware)
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "FAIL: ${ARGN} returned ${rc}")
  endif()
endfunction()
# the firmware: C++17, no exceptions, no RTTI, optimized for size as firmware is, the runtime
# and generated headers
run(${ARM_CXX} -std=c++17 -Os -fno-exceptions -fno-rtti -Wall -Wextra -Werror
    -I${SOURCE_DIR}/include -I${MODEL_DIR} -c ${ex}/firmware.cpp -o ${WORK_DIR}/firmware.o)
# the board: the driver API over the simulator, built without Highway
run(${ARM_CXX} -std=c++20 -O2 -DFMT_HEADER_ONLY -DDLAVM_SIM_NO_SIMD -I${SOURCE_DIR}/include
    -isystem ${WORK_DIR}/fmt_include -c ${ex}/sim_driver.cpp -o ${WORK_DIR}/sim_driver.o)
run(${ARM_CXX} ${WORK_DIR}/firmware.o ${WORK_DIR}/sim_driver.o -o ${WORK_DIR}/firmware)
# the LLM layer's first 8 recorded runs (a prefill, decode steps, a second prefill and decode
# again): its 136 runs to a full cache of 2048 positions take over a minute under qemu with the
# simulator's scalar kernels, and the native test runs them all
run(${QEMU_ARM} -L /usr/arm-linux-gnueabihf ${WORK_DIR}/firmware ${MODEL_DIR} --llm-runs 8)
