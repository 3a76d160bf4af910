#include "daemon/http/server/connection_limits.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "daemon/http/server/security_headers.h"

namespace farm::http {
namespace {

TEST(ConnectionLimitsTest, OneAddressCannotTakeEveryConnection) {
  ConnectionLimits limits(5, 2);
  auto a1 = limits.Admit("10.0.0.1");
  auto a2 = limits.Admit("10.0.0.1");
  auto a3 = limits.Admit("10.0.0.1");
  EXPECT_TRUE(a1.admitted() && a2.admitted());
  EXPECT_FALSE(a3.admitted());
  EXPECT_EQ(a3.admission(), Admission::kAddressFull);
  EXPECT_EQ(limits.of("10.0.0.1"), 2);
  // Other clients still get in, up to the total.
  std::vector<ConnectionLimits::Slot> others;
  for (const char* key : {"10.0.0.2", "10.0.0.2", "10.0.0.3"}) others.push_back(limits.Admit(key));
  for (const auto& s : others) EXPECT_TRUE(s.admitted());
  auto full = limits.Admit("10.0.0.4");
  EXPECT_FALSE(full.admitted());
  EXPECT_EQ(full.admission(), Admission::kServerFull);
  EXPECT_EQ(limits.total(), 5);
  // A closed connection frees its slot for its address and for the total.
  a1 = ConnectionLimits::Slot();
  EXPECT_EQ(limits.of("10.0.0.1"), 1);
  EXPECT_TRUE(limits.Admit("10.0.0.4").admitted());
  EXPECT_EQ(limits.total(), 4);  // the slot above was dropped at once
}

TEST(ConnectionLimitsTest, MovedSlotsCountOnce) {
  ConnectionLimits limits(3, 3);
  {
    auto a = limits.Admit("k");
    ConnectionLimits::Slot b(std::move(a));
    ConnectionLimits::Slot c;
    c = std::move(b);
    EXPECT_EQ(limits.total(), 1);
  }
  EXPECT_EQ(limits.total(), 0);
  EXPECT_EQ(limits.of("k"), 0);
}

TEST(ConnectionLimitsTest, ConcurrentAdmissionsNeverPassTheLimits) {
  ConnectionLimits limits(64, 16);
  std::vector<std::thread> threads;
  std::atomic<int> over{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        auto s = limits.Admit("addr-" + std::to_string(t % 2));
        if (limits.of("addr-" + std::to_string(t % 2)) > 16 || limits.total() > 64) over++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(over.load(), 0);
  EXPECT_EQ(limits.total(), 0);
}

TEST(ConnectionLimitsTest, ClientKeysGroupAnIpv6HostsSlash64) {
  const uint8_t v4[4] = {192, 0, 2, 7};
  EXPECT_EQ(ClientKey(v4, 4), "192.0.2.7");
  const uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 7};
  EXPECT_EQ(ClientKey(mapped, 16), "192.0.2.7");
  uint8_t a[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8};
  uint8_t b[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2, 9, 9, 9, 9, 9, 9, 9, 9};
  EXPECT_EQ(ClientKey(a, 16), "2001:db8:1:2::/64");
  EXPECT_EQ(ClientKey(a, 16), ClientKey(b, 16));
  b[7] = 3;
  EXPECT_NE(ClientKey(a, 16), ClientKey(b, 16));
  EXPECT_EQ(ClientKey(a, 5), "?");
}

TEST(SecurityHeadersTest, ForbidFramingSniffingAndForeignOrInlineCode) {
  std::map<std::string, std::string> h(SecurityHeaders().begin(), SecurityHeaders().end());
  EXPECT_EQ(h["X-Frame-Options"], "DENY");
  EXPECT_EQ(h["X-Content-Type-Options"], "nosniff");
  EXPECT_EQ(h["Referrer-Policy"], "no-referrer");
  const std::string& csp = h["Content-Security-Policy"];
  for (const char* part : {"default-src 'none'", "script-src 'self'", "style-src 'self'",
                           "frame-ancestors 'none'", "base-uri 'none'"}) {
    EXPECT_NE(csp.find(part), std::string::npos) << part;
  }
  EXPECT_EQ(csp.find("unsafe"), std::string::npos);
}

}  // namespace
}  // namespace farm::http
