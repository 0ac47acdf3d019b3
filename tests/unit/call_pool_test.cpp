// CallPool (common/call_pool.h): jobs on the pool's threads, timed; a pool of
// no threads runs them on the caller (the ledger adapter's NP_CALLS_ANY_THREAD
// path); destruction drains what was queued.
#include "common/call_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>

namespace nodeplane {
namespace {

TEST(CallPool, RunsAJobOnAPoolThreadAndTimesIt) {
  CallPool pool(2);
  const auto before = pool.latency().Take();
  const std::thread::id ran_on = pool.Run([] { return std::this_thread::get_id(); });
  EXPECT_NE(ran_on, std::this_thread::get_id());
  EXPECT_EQ(pool.latency().Take().count, before.count + 1);
}

TEST(CallPool, APoolOfNoThreadsRunsEveryJobOnTheCaller) {
  CallPool pool(0);
  const auto before = pool.latency().Take();
  EXPECT_EQ(pool.Run([] { return std::this_thread::get_id(); }), std::this_thread::get_id());
  EXPECT_EQ(pool.latency().Take().count, before.count + 1);  // timed like a pooled call
  std::thread::id posted_on;
  pool.Post([&] { posted_on = std::this_thread::get_id(); });
  EXPECT_EQ(posted_on, std::this_thread::get_id());  // ran before Post returned
}

TEST(CallPool, AJobThatThrowsIsTimedAndItsExceptionReachesItsCaller) {
  for (unsigned threads : {0u, 1u}) {
    CallPool pool(threads);
    const auto before = pool.latency().Take();
    EXPECT_THROW(pool.Run([]() -> int { throw std::runtime_error("refused"); }), std::runtime_error) << threads;
    EXPECT_EQ(pool.latency().Take().count, before.count + 1) << threads;
  }
}

TEST(CallPool, DestructionRunsWhatWasQueued) {
  std::atomic<int> ran{0};
  {
    CallPool pool(1);
    for (int i = 0; i < 100; ++i) pool.Post([&] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 100);
}

}  // namespace
}  // namespace nodeplane
