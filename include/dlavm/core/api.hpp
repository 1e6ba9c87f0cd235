// How dlavm's non-template code is compiled. Header-only (the default): every header brings its
// definitions and each function is `inline`. Compiled mode (DLAVM_COMPILED_LIB, which the CMake
// target dlavm::dlavm_compiled defines for itself and its users): headers only declare the
// heavy functions, and the library's src/*.cpp compile their definitions (the `-inl.hpp`
// files) once.
//
//   // pass.hpp                                   // pass-inl.hpp
//   tir::PrimFunc inject_dma(tir::PrimFunc f);    DLAVM_INLINE tir::PrimFunc inject_dma(...) {...}
//   #ifndef DLAVM_COMPILED_LIB
//   #include <dlavm/vta/lower/pass-inl.hpp>
//   #endif
#pragma once

#ifdef DLAVM_COMPILED_LIB
#define DLAVM_INLINE
#else
#define DLAVM_INLINE inline
#endif
