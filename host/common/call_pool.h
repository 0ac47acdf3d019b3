// A small pool of threads for blocking work.
//
// Plugin calls block (a database write, an HTTPS request), so the host never
// makes them on an I/O thread: each plugin instance's adapter hands its calls
// to a pool of its own, and the wire hands its ledger work to another. A slow
// plugin then stalls only its own callers, never the listener. Run() blocks
// the caller until the job has run; Post() does not wait.
//
// Run() times each call (queueing included) into the pool's Histogram,
// which is how plugin and ledger call latency reaches the metrics.
//
// A pool of no threads runs every job on the caller's thread, timed the same:
// what a plugin instance that takes calls from any thread
// (NP_CALLS_ANY_THREAD) gets, so its callers are none the wiser.
//
// Thread-safe. Destruction drains queued calls, then joins.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "common/metrics.h"

namespace nodeplane {

class CallPool {
 public:
  explicit CallPool(unsigned threads);  // 0: jobs run on the caller's thread
  ~CallPool();
  CallPool(const CallPool&) = delete;
  CallPool& operator=(const CallPool&) = delete;

  void Post(std::function<void()> job) { Submit(std::move(job)); }

  template <typename F>
  std::invoke_result_t<F> Run(F&& fn) {
    Timed timed{latency_, std::chrono::steady_clock::now()};
    // On the caller's thread the job is simply called: a future publishes
    // its result through std::call_once, which costs a futex call each time
    // (glibc wakes waiters it does not count), on every plugin call.
    if (threads_.empty()) return std::forward<F>(fn)();
    std::packaged_task<std::invoke_result_t<F>()> task(std::forward<F>(fn));
    auto result = task.get_future();
    Submit([&task] { task(); });
    result.wait();
    return result.get();
  }

  const Histogram& latency() const { return latency_; }

 private:
  // Observes the time from its making to its end (a job that throws too).
  struct Timed {
    Histogram& latency;
    std::chrono::steady_clock::time_point start;
    ~Timed() { latency.Observe(std::chrono::steady_clock::now() - start); }
  };

  void Submit(std::function<void()> job);
  void Work();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
  Histogram latency_;
};

}  // namespace nodeplane
