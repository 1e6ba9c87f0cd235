// tir layer: the loop IR, its visitor/mutator, the printer, lowering from schedules and the
// reference interpreter.
#pragma once

#include <dlavm/tir/functor.hpp>
#include <dlavm/tir/interpreter.hpp>
#include <dlavm/tir/lower.hpp>
#include <dlavm/tir/printer.hpp>
#include <dlavm/tir/replay.hpp>
#include <dlavm/tir/rewrite.hpp>
#include <dlavm/tir/specialize.hpp>
#include <dlavm/tir/stmt.hpp>
#include <dlavm/tir/storage_rewrite.hpp>
#include <dlavm/tir/unroll.hpp>
#include <dlavm/tir/vthread.hpp>
