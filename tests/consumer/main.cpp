// A minimal user program: includes the umbrella header and uses the public API.
#include <dlavm/dlavm.hpp>

#include <cstdio>

int main() {
  const auto t = dlavm::DType::parse("int32x16");
  if (t.bytes() != 64) return 1;
  try {
    dlavm::raise<dlavm::ShapeError>("tensor '{}' has rank {}", "A", 3);
  } catch (const dlavm::Error& e) {
    std::puts(e.what());
    return 0;
  }
  return 1;
}
