// Helpers shared by the libFuzzer targets: a failed property aborts the process with a
// message (libFuzzer then saves the input as a crash), and fuzz bytes become values.
#ifndef FARM_TESTS_FUZZ_FUZZ_UTIL_H_
#define FARM_TESTS_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace farm::fuzz {

// Prints "property failed: <what>" and the offending detail, then aborts.
[[noreturn]] void Fail(std::string_view what, std::string_view detail = {});

// Aborts with `what` unless `condition` holds.
inline void Require(bool condition, std::string_view what, std::string_view detail = {}) {
  if (!condition) Fail(what, detail);
}

// Reads from the front of a fuzz input: fixed-size integers (zero-padded when the input
// runs out) and the rest as text.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : rest_(reinterpret_cast<const char*>(data), size) {}
  uint8_t Byte();
  uint64_t U64();
  // Everything not yet consumed.
  std::string_view Rest() const { return rest_; }
  // Up to the next '\n' (consumed, not returned), or everything left.
  std::string_view Line();

 private:
  std::string_view rest_;
};

// A directory made once per process under $TMPDIR (fs::MakeTempDir), removed at exit.
const std::string& ScratchDir();

}  // namespace farm::fuzz

#endif  // FARM_TESTS_FUZZ_FUZZ_UTIL_H_
