// A request's fields as they come from the network: each hostile value refused with the
// field named, the package name normalised, identical requests one key.
#include "daemon/requests/spec.h"

#include <gtest/gtest.h>

#include "daemon/requests/state.h"

namespace farm::requests {
namespace {

Spec Good() {
  return Spec{.package = "Attn_Example",
              .python = "3.11",
              .torch = "2.9.0+cu130",
              .cuda = "13.0",
              .compute_capability = "9.0",
              .platform = "linux_x86_64"};
}

TEST(SpecTest, ChecksAndNormalises) {
  Spec s = Good();
  ASSERT_TRUE(CheckSpec(&s).ok());
  EXPECT_EQ(s.package, "attn-example");
  EXPECT_EQ(s.torch, "2.9.0");
}

TEST(SpecTest, RefusesHostileValuesNamingTheField) {
  struct Case {
    std::string Spec::*field;
    std::string value;
    std::string named;
  };
  const Case cases[] = {
      {&Spec::package, "../etc/passwd", "package"},
      {&Spec::package, std::string(65, 'a'), "package"},
      {&Spec::package, "", "package"},
      {&Spec::package, "a\nb", "package"},
      {&Spec::version, "1.0; rm -rf /", "version"},
      {&Spec::version, std::string("1.0\0x", 5), "version"},
      {&Spec::python, "3", "python"},
      {&Spec::python, "3.11\r", "python"},
      {&Spec::torch, "<script>", "torch"},
      {&Spec::cuda, "12.8/../", "cuda"},
      {&Spec::compute_capability, "99.9", "compute_capability"},
      {&Spec::compute_capability, "9", "compute_capability"},
      {&Spec::compute_capability, "09.0", "compute_capability"},
      {&Spec::platform, "linux x86_64", "platform"},
      {&Spec::platform, "", "platform"},
  };
  for (const Case& c : cases) {
    Spec s = Good();
    s.*c.field = c.value;
    Status st = CheckSpec(&s);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.named << " " << c.value;
    EXPECT_NE(st.message().find("request field " + c.named), std::string::npos) << st.message();
  }
  Spec torch_without_cuda = Good();
  torch_without_cuda.cuda.clear();
  EXPECT_FALSE(CheckSpec(&torch_without_cuda).ok());
}

TEST(SpecTest, IdenticalRequestsShareOneKey) {
  Spec a = Good(), b = Good();
  b.package = "attn.example";
  ASSERT_TRUE(CheckSpec(&a).ok());
  ASSERT_TRUE(CheckSpec(&b).ok());
  EXPECT_EQ(SpecKey(a), SpecKey(b));
  b.python = "3.12";
  EXPECT_NE(SpecKey(a), SpecKey(b));
  // Length-prefixed: moving a character between fields changes the key.
  Spec c = a, d = a;
  c.version = "1";
  c.python = "0.1";
  d.version = "10";
  d.python = ".1";
  EXPECT_NE(SpecKey(c), SpecKey(d));
}

TEST(StateTest, OneNameTable) {
  for (State s : kAllStates) {
    EXPECT_EQ(ParseState(StateName(s)), s);
    EXPECT_EQ(StateOf(static_cast<int>(s)), s);
  }
  EXPECT_EQ(ParseState("building "), std::nullopt);
  EXPECT_EQ(StateOf(0), std::nullopt);
  EXPECT_TRUE(IsFinal(State::kBuilt));
  EXPECT_FALSE(IsFinal(State::kRequested));
}

}  // namespace
}  // namespace farm::requests
