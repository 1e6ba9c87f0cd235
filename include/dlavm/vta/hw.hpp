// The VTA hardware model: configuration (vta_config.json), checked ISA encoding and
// disassembly, the command builder, dependency tokens from data hazards, the functional
// simulator, the cycle model, the race detector, devices, binary I/O and dump replay. Uses core and
// runtime only; docs/vta.md is the guide. Reading vta_config.json, manifests and dumps is in
// <dlavm/vta/hw/read.hpp>, left out here: it is the one part that parses JSON.
#pragma once

#include <dlavm/runtime.hpp>
#include <dlavm/vta/hw/builder.hpp>
#include <dlavm/vta/hw/check_stream.hpp>
#include <dlavm/vta/hw/config.hpp>
#include <dlavm/vta/hw/counters.hpp>
#include <dlavm/vta/hw/cycle_model.hpp>
#include <dlavm/vta/hw/dep_tracker.hpp>
#include <dlavm/vta/hw/device.hpp>
#include <dlavm/vta/hw/driver_device.hpp>
#include <dlavm/vta/hw/dump.hpp>
#include <dlavm/vta/hw/hazards.hpp>
#include <dlavm/vta/hw/io.hpp>
#include <dlavm/vta/hw/isa.hpp>
#include <dlavm/vta/hw/sim_device.hpp>
#include <dlavm/vta/hw/simulator.hpp>
