// schedule layer: stages and their primitives, symbolic intervals for bound inference.
#pragma once

#include <dlavm/schedule/int_set.hpp>
#include <dlavm/schedule/schedule.hpp>
#include <dlavm/schedule/tensor_intrin.hpp>
