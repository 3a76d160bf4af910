#include "tests/fuzz/fuzz_util.h"

#include <cstdio>
#include <cstdlib>

#include "common/fs.h"

namespace farm::fuzz {

void Fail(std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "property failed: %.*s\n%.*s\n", static_cast<int>(what.size()), what.data(),
               static_cast<int>(detail.size() > 2000 ? 2000 : detail.size()), detail.data());
  std::abort();
}

uint8_t Input::Byte() {
  if (rest_.empty()) return 0;
  uint8_t b = static_cast<uint8_t>(rest_.front());
  rest_.remove_prefix(1);
  return b;
}

uint64_t Input::U64() {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | Byte();
  return v;
}

std::string_view Input::Line() {
  size_t nl = rest_.find('\n');
  std::string_view line = rest_.substr(0, nl);
  rest_.remove_prefix(nl == std::string_view::npos ? rest_.size() : nl + 1);
  return line;
}

const std::string& ScratchDir() {
  static const struct Scratch {
    Scratch() {
      auto dir = fs::MakeTempDir("", "farm-fuzz-");  // under $TMPDIR
      if (!dir.ok()) Fail("scratch directory", dir.status().message());
      path = *dir;
    }
    ~Scratch() { (void)fs::RemoveAll(path); }
    std::string path;
  } scratch;
  return scratch.path;
}

}  // namespace farm::fuzz
