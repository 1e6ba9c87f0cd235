// dlavm: a tensor-expression compiler toolkit for deep-learning accelerators.
// One include gives the whole library; README.md and docs/index.md say where to start.
#pragma once

#include <dlavm/core.hpp>
#include <dlavm/deploy.hpp>
#include <dlavm/graph.hpp>
#include <dlavm/host.hpp>
#include <dlavm/ne.hpp>
#include <dlavm/quantize.hpp>
#include <dlavm/schedule.hpp>
#include <dlavm/te.hpp>
#include <dlavm/tir.hpp>
#include <dlavm/tune.hpp>
#include <dlavm/vta.hpp>
