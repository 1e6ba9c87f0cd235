// Translation unit that carries the precompiled umbrella header (see CMakeLists.txt).
#include <dlavm/dlavm.hpp>
