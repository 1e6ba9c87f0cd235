// Deployment layer: a built graph::Module handed to firmware as a generated C++ header and
// model files (deploy::emit).
#pragma once

#include <dlavm/deploy/emit.hpp>
#include <dlavm/deploy/firmware_plan.hpp>
