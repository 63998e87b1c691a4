// The pusher against a receiver that follows Pyroscope's documented /ingest API: labels,
// tenant, token, body; outages (500s, hangs) spool and retry; every window arrives exactly
// once and in order, also across a restart; a full spool drops the oldest and counts it.
#include "serve/pusher.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "base/file_util.h"
#include "tests/common/shell_util.h"
#include "tests/serve/fake_source.h"
#include "tests/serve/ingest_receiver.h"

namespace sb::serve {
namespace {
namespace fs = std::filesystem;
using testing::IngestReceiver;

constexpr int64_t kT0 = 1700000000;  // unix seconds of the first window

class PusherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::MakeTempDir("/tmp", "sb-push");
    ASSERT_TRUE(WriteFileAtomic(dir_ + "/token", "s3cret\n").ok());
  }
  void TearDown() override { fs::remove_all(dir_); }
  PushOptions Options() {
    PushOptions o;
    o.url = receiver_.url();
    o.tenant = "team-a";
    o.token_file = dir_ + "/token";
    o.spool_dir = dir_ + "/spool";
    o.initial_backoff_seconds = 0.05;
    o.max_backoff_seconds = 0.4;
    o.timeout_seconds = 5;
    o.log = [this](const std::string& s) {
      std::lock_guard<std::mutex> l(mu_);
      logs_.push_back(s);
    };
    return o;
  }
  // Window I: a real gzip pprof written where the agent would write it, 60 s long.
  WindowToPush Window(int i) {
    WindowToPush w;
    w.profile_path = dir_ + "/window-" + std::to_string(i) + ".pb.gz";
    EXPECT_TRUE(WriteFileAtomic(w.profile_path, ReadFile(testing::GoProfilePath()).value()).ok());
    w.pid = 100 + i;
    w.exe = "/srv/bin/demo";
    w.labels = {{"service", "demo"}, {"host", "h1"}};
    w.start_unix_ns = (kT0 + 60 * i) * 1000000000ll;
    w.duration_ns = 60 * 1000000000ll;
    return w;
  }
  std::unique_ptr<Pusher> StartPusher(PushOptions o) {
    auto p = Pusher::Start(std::move(o));
    EXPECT_TRUE(p.ok()) << p.error();
    return p.ok() ? std::move(*p) : nullptr;
  }
  template <typename F>
  bool WaitFor(F cond, int seconds = 30) {
    for (int i = 0; i < seconds * 100; i++) {
      if (cond()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return cond();
  }
  // Each window once, in order.
  void ExpectExactlyOnceInOrder(const std::vector<int>& windows) {
    auto got = receiver_.accepted();
    ASSERT_EQ(got.size(), windows.size());
    for (size_t i = 0; i < got.size(); i++) {
      EXPECT_EQ(got[i].from, kT0 + 60 * windows[i]) << i;
      EXPECT_EQ(got[i].problem, "") << i;
    }
  }

  IngestReceiver receiver_;
  std::string dir_;
  std::mutex mu_;
  std::vector<std::string> logs_;
};

TEST_F(PusherTest, FollowsTheIngestApi) {
  auto p = StartPusher(Options());
  for (int i = 0; i < 3; i++) ASSERT_TRUE(p->Enqueue(Window(i)).ok());
  ASSERT_TRUE(p->WaitEmpty(std::chrono::seconds(30)));
  ExpectExactlyOnceInOrder({0, 1, 2});
  auto got = receiver_.accepted();
  EXPECT_EQ(got[0].name, "demo.cpu{host=h1,service=demo}");
  EXPECT_EQ(got[0].until, kT0 + 60);
  EXPECT_EQ(got[0].tenant, "team-a");
  EXPECT_EQ(got[0].authorization, "Bearer s3cret");
  EXPECT_EQ(got[0].content_type, "application/octet-stream");
  EXPECT_EQ(p->Stats().successes, 3u);
  EXPECT_EQ(p->Stats().backlog_windows, 0u);
  EXPECT_TRUE(fs::is_empty(dir_ + "/spool"));
  // The body is the window unchanged, and go tool pprof reads it.
  EXPECT_EQ(got[1].body, ReadFile(testing::GoProfilePath()).value());
  if (test::RunCommand("command -v go").status == 0) {
    ASSERT_TRUE(WriteFileAtomic(dir_ + "/got.pb.gz", got[1].body).ok());
    auto r = test::RunCommand("env HOME=" + test::Quote(dir_) + " go tool pprof -top " + test::Quote(dir_ + "/got.pb.gz"));
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("main.spin"), std::string::npos) << r.out;
  }
  PushOptions named = Options();
  named.app_name = "fleet";
  p->Stop();
  auto q = StartPusher(named);
  ASSERT_TRUE(q->Enqueue(Window(3)).ok());
  ASSERT_TRUE(q->WaitEmpty(std::chrono::seconds(30)));
  EXPECT_EQ(receiver_.accepted().back().name, "fleet.cpu{host=h1,service=demo}");
}

TEST_F(PusherTest, OutageSpoolsRetriesAndDeliversEachOnce) {
  receiver_.set_mode(IngestReceiver::kFail500);
  auto p = StartPusher(Options());
  for (int i = 0; i < 5; i++) ASSERT_TRUE(p->Enqueue(Window(i)).ok());
  ASSERT_TRUE(WaitFor([&] { return p->Stats().failures >= 4; }));
  EXPECT_EQ(p->Stats().backlog_windows, 5u);
  EXPECT_EQ(p->Stats().successes, 0u);
  EXPECT_TRUE(receiver_.accepted().empty());
  receiver_.set_mode(IngestReceiver::kOk);
  ASSERT_TRUE(p->WaitEmpty(std::chrono::seconds(30)));
  ExpectExactlyOnceInOrder({0, 1, 2, 3, 4});
  EXPECT_EQ(p->Stats().successes, 5u);
  bool logged = false;
  for (const auto& l : logs_) logged |= l.find("push: failed window") != std::string::npos && l.find("HTTP 500") != std::string::npos;
  EXPECT_TRUE(logged);
}

TEST_F(PusherTest, HangingBackendTimesOutAndRetries) {
  receiver_.set_mode(IngestReceiver::kHang);
  PushOptions o = Options();
  o.timeout_seconds = 1;
  auto p = StartPusher(o);
  ASSERT_TRUE(p->Enqueue(Window(0)).ok());
  ASSERT_TRUE(WaitFor([&] { return p->Stats().failures >= 1; }));
  receiver_.set_mode(IngestReceiver::kOk);
  ASSERT_TRUE(p->WaitEmpty(std::chrono::seconds(30)));
  ExpectExactlyOnceInOrder({0});
  bool logged = false;
  for (const auto& l : logs_) logged |= l.find("Timeout") != std::string::npos || l.find("timed out") != std::string::npos;
  EXPECT_TRUE(logged);
}

TEST_F(PusherTest, SpoolSurvivesRestartAndNothingIsSentTwice) {
  receiver_.set_mode(IngestReceiver::kFail500);
  {
    auto a = StartPusher(Options());
    for (int i = 0; i < 4; i++) ASSERT_TRUE(a->Enqueue(Window(i)).ok());
    ASSERT_TRUE(WaitFor([&] { return a->Stats().failures >= 1; }));
    a->Stop();
  }
  for (int i = 0; i < 4; i++) fs::remove(dir_ + "/window-" + std::to_string(i) + ".pb.gz");  // retention ran
  receiver_.set_mode(IngestReceiver::kOk);
  {
    auto b = StartPusher(Options());
    ASSERT_TRUE(b->Enqueue(Window(4)).ok());
    ASSERT_TRUE(b->WaitEmpty(std::chrono::seconds(30)));
  }
  ExpectExactlyOnceInOrder({0, 1, 2, 3, 4});
  int attempts = receiver_.attempts();
  {
    auto c = StartPusher(Options());  // a third run finds nothing to send
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    EXPECT_EQ(c->Stats().backlog_windows, 0u);
  }
  EXPECT_EQ(receiver_.attempts(), attempts);
  ExpectExactlyOnceInOrder({0, 1, 2, 3, 4});
}

// The agent stops right after enqueueing its last window: Stop waits for that attempt's answer
// instead of cutting it off after the backend stored it (which would send it again next start).
TEST_F(PusherTest, StopWaitsForTheAnswerInFlight) {
  receiver_.set_mode(IngestReceiver::kSlowOk);
  {
    auto a = StartPusher(Options());
    ASSERT_TRUE(a->Enqueue(Window(0)).ok());
    ASSERT_TRUE(WaitFor([&] { return receiver_.attempts() >= 1; }));
    a->Stop();
    EXPECT_EQ(a->Stats().successes, 1u);
    EXPECT_EQ(a->Stats().backlog_windows, 0u);
  }
  ExpectExactlyOnceInOrder({0});
  receiver_.set_mode(IngestReceiver::kOk);
  {
    auto b = StartPusher(Options());  // nothing left to send
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    EXPECT_EQ(b->Stats().backlog_windows, 0u);
  }
  EXPECT_EQ(receiver_.attempts(), 1);
  ExpectExactlyOnceInOrder({0});
}

TEST_F(PusherTest, FullSpoolDropsOldestAndCountsIt) {
  receiver_.set_mode(IngestReceiver::kFail500);
  PushOptions o = Options();
  uint64_t size = fs::file_size(testing::GoProfilePath());
  o.spool_max_bytes = std::max<uint64_t>(1024, 3 * size);  // three windows
  ASSERT_LT(o.spool_max_bytes, 4 * size);
  auto p = StartPusher(o);
  for (int i = 0; i < 8; i++) ASSERT_TRUE(p->Enqueue(Window(i)).ok());
  PushStats s = p->Stats();
  EXPECT_EQ(s.dropped, 5u);
  EXPECT_EQ(s.backlog_windows, 3u);
  EXPECT_LE(s.backlog_bytes, o.spool_max_bytes);
  receiver_.set_mode(IngestReceiver::kOk);
  ASSERT_TRUE(p->WaitEmpty(std::chrono::seconds(30)));
  auto got = receiver_.accepted();
  ASSERT_EQ(got.size(), 3u);
  // The newest two always survive; the third is an older one (the one in flight is spared).
  EXPECT_LT(got[0].from, kT0 + 60 * 6);
  EXPECT_EQ(got[1].from, kT0 + 60 * 6);
  EXPECT_EQ(got[2].from, kT0 + 60 * 7);
  int drop_lines = 0;
  for (const auto& l : logs_) drop_lines += l.find("push: spool full") != std::string::npos;
  EXPECT_EQ(drop_lines, 5);
}

TEST_F(PusherTest, RefusedWindowIsDroppedNotRetried) {
  receiver_.set_mode(IngestReceiver::kRefuse400);
  auto p = StartPusher(Options());
  ASSERT_TRUE(p->Enqueue(Window(0)).ok());
  ASSERT_TRUE(WaitFor([&] { return p->Stats().rejected == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(receiver_.attempts(), 1);
  EXPECT_EQ(p->Stats().backlog_windows, 0u);
}

TEST_F(PusherTest, BadOptionsAreRefusedUpFront) {
  PushOptions o = Options();
  o.url = "pyroscope:4040";
  EXPECT_FALSE(CheckPushOptions(o).ok());
  o = Options();
  o.token_file = dir_ + "/missing";
  auto st = CheckPushOptions(o);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("--token-file"), std::string::npos);
  o = Options();
  o.spool_dir = "/proc/self/no-spool-here";
  EXPECT_FALSE(Pusher::Start(o).ok());
}

}  // namespace
}  // namespace sb::serve
