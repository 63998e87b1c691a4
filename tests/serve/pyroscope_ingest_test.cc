#include "serve/pyroscope_ingest.h"

#include <gtest/gtest.h>

namespace sb::serve {
namespace {

TEST(PyroscopeIngestTest, NameWithLabels) {
  EXPECT_EQ(IngestName("demo", {}), "demo.cpu{}");
  EXPECT_EQ(IngestName("my app", {{"env", "staging"}, {"region", "us-west-1"}}),
            "my_app.cpu{env=staging,region=us-west-1}");
  EXPECT_EQ(IngestName("a{b}", {{"9bad-key", "v,{x}=y"}}), "a_b_.cpu{_9bad_key=v__x__y}");
  EXPECT_EQ(AppNameOfExe("/usr/local/bin/server"), "server");
  EXPECT_EQ(AppNameOfExe(""), "switchback");
}

TEST(PyroscopeIngestTest, Endpoint) {
  EXPECT_EQ(*IngestEndpoint("http://pyro:4040"), "http://pyro:4040/ingest");
  EXPECT_EQ(*IngestEndpoint("https://pyro.example/prefix/"), "https://pyro.example/prefix/ingest");
  EXPECT_EQ(*IngestEndpoint("http://pyro:4040/ingest"), "http://pyro:4040/ingest");
  for (const char* bad : {"pyro:4040", "ftp://x", "http://", "http:///x", "http://x/?a=b", "http://x y"}) {
    EXPECT_FALSE(IngestEndpoint(bad).ok()) << bad;
  }
}

TEST(PyroscopeIngestTest, UrlEscapesTheName) {
  IngestRequest r;
  r.endpoint = "http://127.0.0.1:4040/ingest";
  r.name = "demo.cpu{env=prod,host=a}";
  r.from = 100;
  r.until = 160;
  EXPECT_EQ(IngestUrl(r),
            "http://127.0.0.1:4040/ingest?name=demo.cpu%7Benv%3Dprod%2Chost%3Da%7D&from=100&until=160&format=pprof"
            "&spyName=switchback");
}

TEST(PyroscopeIngestTest, NoServerIsRetried) {
  IngestRequest r;
  r.endpoint = "http://127.0.0.1:1/ingest";  // nothing listens on port 1
  r.name = "x.cpu{}";
  r.body = "x";
  r.timeout_seconds = 2;
  std::atomic<bool> cancel{false};
  auto o = PostIngest(r, &cancel);
  EXPECT_FALSE(o.delivered);
  EXPECT_TRUE(o.retry);
  EXPECT_EQ(o.http_status, 0);
  EXPECT_FALSE(o.error.empty());
}

}  // namespace
}  // namespace sb::serve
