// The stream checker: refuses an instruction stream that uses what the configured VTA design
// does not execute as TVM's simulator does (config.variant, vta/hw/variant.hpp), before it
// reaches a device. SimDevice and DriverDevice run it on every stream; lowering emits only
// what the variant has, so a refusal here means a stream built for another design.
//
//   vta::check_stream(vta::preset("pynq"), stream);   // FeatureError naming the instruction
//
// What it refuses, per feature the variant lacks: LOAD ACC_8BIT; ALU opcode 4 on a design
// without it; a SHR immediate the design reads differently (outside [-2^(w-1), 2^(w-1)) where
// it keeps the low w = LOG_ACC_WIDTH bits as signed, negative where it keeps them unsigned); a
// LOAD UOP of more than one row or padded; pads on WGT or ACC loads; an INP load at the
// erratum's size. A STORE of stale output SRAM (Xilinx HLS) depends on the micro-ops' data
// and is refused by the simulator acting as that design (vta/hw/simulator.hpp).
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/vta/hw/config.hpp>
#include <dlavm/vta/hw/isa.hpp>
#include <dlavm/vta/hw/stream.hpp>

#include <span>
#include <string>

namespace dlavm::vta {

// The first instruction `config.variant` lacks a feature for, as a message ("" for none).
std::string stream_feature_problem(const Config& config, std::span<const InsnFields> insns);

// Raises FeatureError with stream_feature_problem's message.
void check_stream(const Config& config, std::span<const InsnFields> insns);
void check_stream(const Config& config, const Stream& stream);

}  // namespace dlavm::vta

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/vta/hw/check_stream-inl.hpp>
#endif
