// Core layer: errors, element types and the counted reference of IR nodes.
#pragma once

#include <dlavm/core/dtype.hpp>
#include <dlavm/core/error.hpp>
#include <dlavm/core/ref.hpp>
#include <dlavm/core/version.hpp>
