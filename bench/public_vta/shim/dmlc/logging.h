// What the public VTA simulator's sources (apache/tvm-vta src/sim, src/vmem) use of dmlc's
// logging: CHECK macros and LOG(FATAL), which report and abort. Only for building that
// simulator beside dlavm's for bench/public_vta; never part of the library.
#pragma once

#include <cstdlib>
#include <iostream>
#include <sstream>

namespace dlavm_public_vta {

// Collects a failure's message; aborts when the statement ends.
class Fatal {
 public:
  Fatal(const char* file, int line, const char* what) {
    os_ << file << ":" << line << ": " << what;
  }
  Fatal(const Fatal&) = delete;
  Fatal& operator=(const Fatal&) = delete;
  [[noreturn]] ~Fatal() {
    std::cerr << os_.str() << "\n";
    std::abort();
  }
  std::ostream& stream() { return os_; }

 private:
  std::ostringstream os_;
};

// Swallows a passing check's message.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace dlavm_public_vta

#define DLAVM_PUBLIC_VTA_FAIL(what) ::dlavm_public_vta::Fatal(__FILE__, __LINE__, what).stream()
#define CHECK(cond) \
  (cond) ? (void)0  \
         : ::dlavm_public_vta::Voidify() & DLAVM_PUBLIC_VTA_FAIL("Check failed: " #cond " ")
#define CHECK_OP(a, op, b) CHECK((a)op(b))
#define CHECK_EQ(a, b) CHECK_OP(a, ==, b)
#define CHECK_NE(a, b) CHECK_OP(a, !=, b)
#define CHECK_LT(a, b) CHECK_OP(a, <, b)
#define CHECK_LE(a, b) CHECK_OP(a, <=, b)
#define CHECK_GT(a, b) CHECK_OP(a, >, b)
#define CHECK_GE(a, b) CHECK_OP(a, >=, b)
#define LOG(severity) DLAVM_PUBLIC_VTA_LOG_##severity
#define DLAVM_PUBLIC_VTA_LOG_FATAL DLAVM_PUBLIC_VTA_FAIL("")
#define DLAVM_PUBLIC_VTA_LOG_INFO std::cerr
#define DLAVM_PUBLIC_VTA_LOG_WARNING std::cerr
