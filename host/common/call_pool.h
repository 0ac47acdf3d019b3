// A small pool of threads for blocking work.
//
// Plugin calls block (a database write, an HTTPS request), so the host never
// makes them on an I/O thread: each plugin instance's adapter hands its calls
// to a pool of its own, and the wire hands its ledger work to another. A slow
// plugin then stalls only its own callers, never the listener. Run() blocks
// the caller until the job has run; Post() does not wait.
//
// Thread-safe. Destruction drains queued calls, then joins.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace nodeplane {

class CallPool {
 public:
  explicit CallPool(unsigned threads);
  ~CallPool();
  CallPool(const CallPool&) = delete;
  CallPool& operator=(const CallPool&) = delete;

  void Post(std::function<void()> job) { Submit(std::move(job)); }

  template <typename F>
  std::invoke_result_t<F> Run(F&& fn) {
    std::packaged_task<std::invoke_result_t<F>()> task(std::forward<F>(fn));
    auto result = task.get_future();
    Submit([&task] { task(); });
    return result.get();
  }

 private:
  void Submit(std::function<void()> job);
  void Work();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace nodeplane
