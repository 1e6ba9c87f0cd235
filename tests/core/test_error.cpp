#include <dlavm/core.hpp>

#include <doctest/doctest.h>

#include <string>

TEST_CASE_TEMPLATE("error: every subclass is a dlavm::Error and keeps its message", E,
                   dlavm::ShapeError, dlavm::ScheduleError, dlavm::CapacityError,
                   dlavm::EncodingError, dlavm::DeviceError, dlavm::ParseError,
                   dlavm::ArithmeticError, dlavm::ValueError, dlavm::ConfigError, dlavm::TypeError,
                   dlavm::FeatureError) {
  try {
    dlavm::raise<E>("buffer '{}' needs {} bytes, {} free", "A_buf", 4096, 1024);
    FAIL("raise returned");
  } catch (const dlavm::Error& e) {
    CHECK(std::string(e.what()) == "buffer 'A_buf' needs 4096 bytes, 1024 free");
    CHECK(dynamic_cast<const E*>(&e) != nullptr);
  }
}

TEST_CASE("error: subclasses are distinct") {
  CHECK_THROWS_AS(dlavm::raise<dlavm::ShapeError>("x"), dlavm::ShapeError);
  bool caught_as_schedule = false;
  try {
    dlavm::raise<dlavm::ShapeError>("x");
  } catch (const dlavm::ScheduleError&) {
    caught_as_schedule = true;
  } catch (const dlavm::Error&) {
  }
  CHECK_FALSE(caught_as_schedule);
}

TEST_CASE("version matches the CMake project version") {
  CHECK(fmt::format("{}.{}.{}", dlavm::version_major, dlavm::version_minor, dlavm::version_patch) ==
        DLAVM_PROJECT_VERSION);
}
