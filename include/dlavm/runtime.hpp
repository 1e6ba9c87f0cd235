// Runtime layer: the firmware-sized part (standard library only, builds with -fno-exceptions
// -fno-rtti, no heap): the VTA bit layout, the stream writer and the replay of lowered
// programs, the host steps' kernels, the model files and a model's session over the VTA
// driver API.
#pragma once

#include <dlavm/runtime/driver_api.hpp>
#include <dlavm/runtime/isa.hpp>
#include <dlavm/runtime/kernels.hpp>
#include <dlavm/runtime/model_file.hpp>
#include <dlavm/runtime/replay.hpp>
#include <dlavm/runtime/session.hpp>
#include <dlavm/runtime/writer.hpp>
