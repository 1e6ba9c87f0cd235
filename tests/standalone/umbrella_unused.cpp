// Every header (the single header: the umbrella and the file readers it leaves out), nothing
// used: in header-only mode this unit must compile no dlavm code
// (tests/standalone/check_no_code.cmake).
#include <dlavm/dlavm.hpp>

int dlavm_umbrella_unused() { return 0; }
