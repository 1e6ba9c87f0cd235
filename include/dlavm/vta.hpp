// VTA layer: the hardware model (vta/hw.hpp), the lowering passes (vta/lower.hpp), and on top
// of both vta::Program (build, instantiate, run) and the layout helpers. docs/vta.md is the
// guide.
#pragma once

#include <dlavm/vta/codegen.hpp>
#include <dlavm/vta/hw.hpp>
#include <dlavm/vta/layout.hpp>
#include <dlavm/vta/lower.hpp>
#include <dlavm/vta/program.hpp>
