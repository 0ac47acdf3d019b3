// The leadership loop of a replica ([ha], leadership_loop.h H1-H3), over a
// scripted election: each test waits on what the loop reports (a callback),
// bounded, never on a guessed sleep.
#include "nodeplaned/leadership_loop.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

namespace nodeplane {
namespace {

using namespace std::chrono_literals;

// Answers every campaign with what the test set last.
class ScriptedElection : public ports::LeaderElection {
 public:
  void Answer(Result<ports::Leadership> next) {
    std::lock_guard lock(mu_);
    next_ = std::move(next);
  }
  Result<ports::Leadership> Campaign(const std::string&, const std::string&, int64_t) override {
    std::lock_guard lock(mu_);
    ++campaigns_;
    return next_;
  }
  Status Resign() override {
    std::lock_guard lock(mu_);
    ++resigned_;
    return Status::Ok();
  }
  int resigned() {
    std::lock_guard lock(mu_);
    return resigned_;
  }

 private:
  std::mutex mu_;
  Result<ports::Leadership> next_ = ports::Leadership{};
  int campaigns_ = 0, resigned_ = 0;
};

// What the loop reported, waited on.
struct Reports {
  std::mutex mu;
  std::condition_variable cv;
  int elected = 0, standby = 0;
  std::string demoted;
  bool WaitFor(auto pred) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, 10s, pred);
  }
};

LeadershipOptions Options(Reports& r) {
  LeadershipOptions o;
  o.replica = "a";
  o.address = "127.0.0.1:7717";
  o.term = 400ms;
  o.on_elected = [&r](const ports::Leadership&) {
    std::lock_guard lock(r.mu);
    ++r.elected;
    r.cv.notify_all();
  };
  o.on_standby = [&r](const ports::Leadership&) {
    std::lock_guard lock(r.mu);
    ++r.standby;
    r.cv.notify_all();
  };
  o.on_demoted = [&r](const std::string& why) {
    std::lock_guard lock(r.mu);
    r.demoted = why;
    r.cv.notify_all();
  };
  return o;
}

ports::Leadership Leading() { return {true, 1, 400'000'000, "a", "127.0.0.1:7717"}; }

// A loop that has won its first campaign.
std::unique_ptr<LeadershipLoop> Elected(ScriptedElection& e, Reports& r, Logger& log) {
  e.Answer(Leading());
  auto loop = std::make_unique<LeadershipLoop>(e, Options(r), log);
  EXPECT_TRUE(r.WaitFor([&] { return r.elected == 1; }));
  return loop;
}

TEST(LeadershipLoop, AWonCampaignElectsOnceAndRenewalsKeepTheLeadership) {
  Logger log(LogLevel::kError);
  ScriptedElection e;
  Reports r;
  auto loop = Elected(e, r, log);
  // Renewed every quarter term, so four terms pass without a demotion.
  {
    std::unique_lock lock(r.mu);
    EXPECT_FALSE(r.cv.wait_for(lock, 1600ms, [&] { return !r.demoted.empty(); })) << r.demoted;
    EXPECT_EQ(r.elected, 1);
  }
  EXPECT_TRUE(loop->leading());
  loop->StopCampaigning();
  loop->Resign();
  EXPECT_EQ(e.resigned(), 1);
}

// H2: a leader whose renewals fail (the database is unreachable) stops
// acting before its term ends, by its own clock.
TEST(LeadershipLoop, H2_ALeaderThatCannotRenewIsDemotedWithinItsTerm) {
  Logger log(LogLevel::kError);
  ScriptedElection e;
  Reports r;
  auto loop = Elected(e, r, log);
  const auto cut = std::chrono::steady_clock::now();
  e.Answer(Status::Unavailable("the database is unreachable"));
  ASSERT_TRUE(r.WaitFor([&] { return !r.demoted.empty(); }));
  EXPECT_LT(std::chrono::steady_clock::now() - cut, 400ms) << "demoted after its term could have ended";
  EXPECT_NE(r.demoted.find("could not be renewed"), std::string::npos) << r.demoted;
  EXPECT_FALSE(loop->leading());
  loop->StopCampaigning();
  loop->Resign();
  EXPECT_EQ(e.resigned(), 0) << "a demoted leader resigned a term that may be another's";
}

// A leader that learns another replica took over is demoted at once; a
// standby never is, and reports who leads.
TEST(LeadershipLoop, H3_ALeaderThatLostIsDemotedAndAStandbyIsNot) {
  Logger log(LogLevel::kError);
  ScriptedElection e;
  Reports r;
  e.Answer(ports::Leadership{false, 1, 300'000'000, "b", "127.0.0.1:7718"});
  {
    LeadershipLoop standby(e, Options(r), log);
    ASSERT_TRUE(r.WaitFor([&] { return r.standby >= 3; }));
    EXPECT_TRUE(r.demoted.empty());
    EXPECT_EQ(r.elected, 0);
  }
  auto loop = Elected(e, r, log);
  e.Answer(ports::Leadership{false, 2, 300'000'000, "b", "127.0.0.1:7718"});
  ASSERT_TRUE(r.WaitFor([&] { return !r.demoted.empty(); }));
  EXPECT_NE(r.demoted.find("\"b\" took over at generation 2"), std::string::npos) << r.demoted;
}

}  // namespace
}  // namespace nodeplane
