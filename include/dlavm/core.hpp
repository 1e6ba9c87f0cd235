// Core layer: errors and element types.
#pragma once

#include <dlavm/core/dtype.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/core/version.hpp>
