// What the public VTA simulator's sim_driver.cc uses of TVM's runtime: TVM_REGISTER_GLOBAL for
// its profiler's Python hooks, which a C++ harness does not call, so the registration keeps
// nothing. Only for building that simulator beside dlavm's for bench/public_vta.
#pragma once

#include <dmlc/logging.h>
#include <string>

namespace tvm::runtime {

struct TVMArgs {
  int operator[](int) const { return 0; }
};
struct TVMRetValue {
  TVMRetValue& operator=(const std::string&) { return *this; }
};
struct Registration {
  template <class Fn>
  Registration& set_body(Fn&&) {
    return *this;
  }
};

}  // namespace tvm::runtime

#define DLAVM_PUBLIC_VTA_CAT2(a, b) a##b
#define DLAVM_PUBLIC_VTA_CAT(a, b) DLAVM_PUBLIC_VTA_CAT2(a, b)
#define TVM_REGISTER_GLOBAL(name)                                            \
  [[maybe_unused]] static ::tvm::runtime::Registration DLAVM_PUBLIC_VTA_CAT( \
      dlavm_public_vta_registration_, __COUNTER__) = ::tvm::runtime::Registration()
