#include "serve/listen_address.h"

#include <gtest/gtest.h>

namespace sb::serve {
namespace {

TEST(ListenAddressTest, BarePortIsLoopback) {
  auto a = ParseListenAddress("6060");
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 6060);
  EXPECT_TRUE(a->loopback);
  EXPECT_EQ(a->ToString(), "127.0.0.1:6060");
}

TEST(ListenAddressTest, OtherInterfacesOnlyWhenWritten) {
  auto all = ParseListenAddress("0.0.0.0:6060");
  ASSERT_TRUE(all.ok());
  EXPECT_FALSE(all->loopback);
  auto v6 = ParseListenAddress("[::1]:7000");
  ASSERT_TRUE(v6.ok()) << v6.error();
  EXPECT_EQ(v6->host, "::1");
  EXPECT_TRUE(v6->loopback);
  EXPECT_EQ(v6->ToString(), "[::1]:7000");
  auto lo = ParseListenAddress("127.0.0.2:1");
  ASSERT_TRUE(lo.ok());
  EXPECT_TRUE(lo->loopback);
  auto name = ParseListenAddress("localhost:0");
  ASSERT_TRUE(name.ok());
  EXPECT_TRUE(name->loopback);
  EXPECT_EQ(name->port, 0);
}

TEST(ListenAddressTest, RefusesAmbiguousAndMalformed) {
  for (const char* bad : {":6060", "", "abc", "65536", "-1", "1.2.3.4:", "::1:80", "[::1:80", "[zz]:80",
                          "host name:80", "6060 ", "0x10"}) {
    SCOPED_TRACE(bad);
    auto a = ParseListenAddress(bad);
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.error().find('\n'), std::string::npos);
    EXPECT_NE(a.error().find("--listen"), std::string::npos);
  }
}

}  // namespace
}  // namespace sb::serve
