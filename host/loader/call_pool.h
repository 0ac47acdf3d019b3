// The small thread pool each plugin instance runs on.
//
// v1 plugin calls block (a database write, an HTTPS request), so the host
// never makes them on an I/O thread: an adapter hands each call to its
// instance's pool. A slow plugin then stalls only its own callers, never the
// wire. Run() blocks the caller until the call has run on a pool thread.
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

namespace nodeplane::loader {

class CallPool {
 public:
  explicit CallPool(unsigned threads);
  ~CallPool();
  CallPool(const CallPool&) = delete;
  CallPool& operator=(const CallPool&) = delete;

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

}  // namespace nodeplane::loader
