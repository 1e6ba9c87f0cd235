// The VTA lowering passes, TIR to TIR: the target environment (vta::Env, the GEMM intrinsic),
// DMA and ALU injection, micro-op folding, virtual threads, and the pipeline that runs them
// (vta::lower, vta::lower_passes). docs/vta.md is the guide.
#pragma once

#include <dlavm/vta/lower/env.hpp>
#include <dlavm/vta/lower/fold_uop.hpp>
#include <dlavm/vta/lower/inject_alu.hpp>
#include <dlavm/vta/lower/inject_dma.hpp>
#include <dlavm/vta/lower/gemm_into_acc.hpp>
#include <dlavm/vta/lower/load_acc_init.hpp>
#include <dlavm/vta/lower/reset_at_first_step.hpp>
#include <dlavm/vta/lower/passes.hpp>
