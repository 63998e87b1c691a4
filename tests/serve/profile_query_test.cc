#include "serve/profile_query.h"

#include <gtest/gtest.h>

namespace sb::serve {
namespace {

Result<ProfileQuery> Parse(QueryParams p) { return ParseProfileQuery(p, QueryLimits{}); }

TEST(ProfileQueryTest, GoDefaults) {
  auto q = Parse({{"pid", "42"}});
  ASSERT_TRUE(q.ok()) << q.error();
  EXPECT_EQ(q->pid, 42u);
  EXPECT_EQ(q->seconds, 30);  // Go's default
  auto e = Parse({{"pid", "42"}, {"seconds", ""}});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->seconds, 30);
  auto s = Parse({{"exe", "demo$"}, {"seconds", "5"}, {"debug", "1"}});  // unknown ignored
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->exe_regex, "demo$");
  EXPECT_EQ(s->seconds, 5);
}

TEST(ProfileQueryTest, SecondsBounded) {
  auto q = Parse({{"pid", "1"}, {"seconds", "300"}});
  ASSERT_TRUE(q.ok());
  auto big = Parse({{"pid", "1"}, {"seconds", "301"}});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error(), "profile duration exceeds server's WriteTimeout");
  auto huge = Parse({{"pid", "1"}, {"seconds", "99999999999999999999999"}});
  ASSERT_FALSE(huge.ok());
}

TEST(ProfileQueryTest, MalformedIsAnError) {
  const QueryParams bad[] = {
      {},
      {{"pid", "1"}, {"exe", "x"}},
      {{"pid", "0"}},
      {{"pid", "-5"}},
      {{"pid", "4194305"}},
      {{"pid", "12a"}},
      {{"pid", " 12"}},
      {{"pid", "1"}, {"pid", "2"}},
      {{"pid", "1"}, {"seconds", "0"}},
      {{"pid", "1"}, {"seconds", "-3"}},
      {{"pid", "1"}, {"seconds", "1.5"}},
      {{"pid", "1"}, {"seconds", "+4"}},
      {{"exe", ""}},
      {{"exe", "("}},
      {{"exe", "(a)\\1"}},
      {{"exe", std::string(300, 'a')}},
      {{"exe", std::string("a\0b", 3)}},
  };
  for (const auto& p : bad) {
    auto q = Parse(p);
    EXPECT_FALSE(q.ok()) << (p.empty() ? "" : p.begin()->first + "=" + p.begin()->second);
    if (!q.ok()) {
      EXPECT_EQ(q.error().find('\n'), std::string::npos);
    }
  }
  EXPECT_EQ(Parse({{"pid", "1"}, {"seconds", "x"}}).error(),
            "invalid value for \"seconds\" - must be a positive integer");
}

TEST(ProfileQueryTest, ExeMatcherSearchesThePath) {
  auto m = ExeMatcher::Compile("bin/de(m|n)o$");
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_TRUE(m->Matches("/opt/bin/demo"));
  EXPECT_FALSE(m->Matches("/opt/bin/demo2"));
}

TEST(ProfileQueryTest, ExactAlternationIsLiteral) {
  std::string re = ExactAlternation({"/a/b.c", "/x/(y)+"});
  EXPECT_EQ(re, "^(/a/b\\.c|/x/\\(y\\)\\+)$");
  auto m = ExeMatcher::Compile(re);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_TRUE(m->Matches("/a/b.c"));
  EXPECT_TRUE(m->Matches("/x/(y)+"));
  EXPECT_FALSE(m->Matches("/a/bxc"));
  EXPECT_FALSE(m->Matches("/x/yy"));
}

}  // namespace
}  // namespace sb::serve
