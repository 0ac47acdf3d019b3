// LoopbackOnly's table (billet-wire.md §1.2) and listen-address parsing.
#include "config/address.h"

#include <gtest/gtest.h>

namespace nodeplane::config {
namespace {

// S04: plain HTTP only on a loopback address; config validation uses this same function.
TEST(LoopbackOnly, S04_Table) {
  struct Case {
    const char* addr;
    bool want;
  };
  const Case cases[] = {
      {"127.0.0.1:7717", true},
      {"127.0.0.1:0", true},
      {"127.1.2.3:80", true},
      {"127.255.255.255:80", true},
      {"localhost:7717", true},
      {"[::1]:7717", true},
      {"[::ffff:127.0.0.1]:7717", true},
      {"[::ffff:127.9.9.9]:1", true},
      {":7717", false},
      {"0.0.0.0:7717", false},
      {"[::]:7717", false},
      {"10.0.0.5:7717", false},
      {"192.168.1.1:80", false},
      {"128.0.0.1:80", false},
      {"[::2]:80", false},
      {"[::ffff:10.0.0.1]:80", false},
      {"[fe80::1%lo]:80", false},
      {"localhost.evil.com:80", false},
      {"LOCALHOST:80", false},
      {"example.com:443", false},
      {"127.0.0.1", false},
      {"", false},
      {"garbage", false},
      {"1.2.3.4.5:1", false},
      {"127.0.0.01:80", false},
      {"127.0.0.256:80", false},
      {"::1:80", false},
      {"[::1:80", false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(LoopbackOnly(c.addr), c.want) << c.addr;
  }
}

TEST(SplitHostPort, MatchesGoSemantics) {
  auto hp = SplitHostPort("[::1]:80");
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->host, "::1");
  EXPECT_EQ(hp->port, "80");
  hp = SplitHostPort(":7717");
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->host, "");
  EXPECT_FALSE(SplitHostPort("a:b:c").ok());
  EXPECT_FALSE(SplitHostPort("nohost").ok());
}

TEST(ParseListenAddress, NeedsANumericPortInRange) {
  auto a = ParseListenAddress("127.0.0.1:65535");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->port, 65535);
  EXPECT_FALSE(ParseListenAddress("127.0.0.1:65536").ok());
  EXPECT_FALSE(ParseListenAddress("127.0.0.1:").ok());
  EXPECT_FALSE(ParseListenAddress("127.0.0.1:-1").ok());
}

TEST(IsWildcardHost, NamesEveryInterface) {
  EXPECT_TRUE(IsWildcardHost(""));
  EXPECT_TRUE(IsWildcardHost("0.0.0.0"));
  EXPECT_TRUE(IsWildcardHost("::"));
  EXPECT_FALSE(IsWildcardHost("127.0.0.1"));
}

}  // namespace
}  // namespace nodeplane::config
