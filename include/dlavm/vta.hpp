// VTA layer: configuration, checked ISA encoding and disassembly, command builder, functional
// simulator, cycle model, devices and binary I/O. docs/vta.md is the guide.
#pragma once

#include <dlavm/runtime.hpp>
#include <dlavm/vta/builder.hpp>
#include <dlavm/vta/config.hpp>
#include <dlavm/vta/counters.hpp>
#include <dlavm/vta/cycle_model.hpp>
#include <dlavm/vta/dep_tracker.hpp>
#include <dlavm/vta/device.hpp>
#include <dlavm/vta/dispatch.hpp>
#include <dlavm/vta/env.hpp>
#include <dlavm/vta/fold_uop.hpp>
#include <dlavm/vta/hazards.hpp>
#include <dlavm/vta/inject_alu.hpp>
#include <dlavm/vta/inject_dma.hpp>
#include <dlavm/vta/io.hpp>
#include <dlavm/vta/isa.hpp>
#include <dlavm/vta/layout.hpp>
#include <dlavm/vta/nest.hpp>
#include <dlavm/vta/passes.hpp>
#include <dlavm/vta/program.hpp>
#include <dlavm/vta/simulator.hpp>
