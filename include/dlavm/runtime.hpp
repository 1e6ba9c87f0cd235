// Runtime layer: the firmware-sized part (standard library only, builds with -fno-exceptions
// -fno-rtti): the VTA bit layout and raw pack/unpack, encoded streams, the VTA driver API.
#pragma once

#include <dlavm/runtime/driver_api.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/runtime/stream.hpp>
