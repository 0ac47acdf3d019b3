// Leadership among replicas ([ha]): one thread campaigns for the ledger's
// leadership every quarter term, a watchdog ends this replica's leadership
// the moment it can no longer prove it leads.
//
// H1. A replica acts (serves the node wire's routes, reaps, writes to the
//     ledger) only while it leads: from a won campaign to its deadline.
// H2. The deadline is counted on this host's monotonic clock from BEFORE
//     the campaign call that won or renewed the term, less a margin of a
//     fifth of the term: the store began that term no earlier, by its own
//     clock, so this replica stops before another one can take over however
//     long the call took and whatever the wall clocks say.
// H3. Losing the leadership is final for the process: the Plane, the wire
//     and the job intake cannot forget what they hold in place, so
//     on_demoted ends the process and its supervisor starts it again as a
//     standby (docs/operations.md, "High availability").
// H4. The ledger fences as well: should the process outlive its deadline (a
//     pause, a slow exit), every write it makes after a takeover is refused
//     with NP_FENCED and changes nothing (ledger conformance C96).
//
// Threading: the callbacks run on the loop's thread (on_elected,
// on_standby) or on either thread (on_demoted, at most once); none may
// block for long: on_elected only starts the activation elsewhere.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "common/log.h"
#include "common/units.h"
#include "ports/ledger.h"

namespace nodeplane {

struct LeadershipOptions {
  std::string replica;  // this replica's name
  std::string address;  // where nodes reach its node wire
  Nanos term{};
  std::function<void(const ports::Leadership&)> on_elected;  // once: this replica now leads
  std::function<void(const ports::Leadership&)> on_standby;  // after each campaign that did not win: who leads
  std::function<void(const std::string& why)> on_demoted;    // once: it led and no longer does (H3)
};

class LeadershipLoop {
 public:
  // `election` and `log` are borrowed and must outlive the loop.
  LeadershipLoop(ports::LeaderElection& election, LeadershipOptions options, Logger& log);
  ~LeadershipLoop();  // StopCampaigning; it does not resign
  LeadershipLoop(const LeadershipLoop&) = delete;
  LeadershipLoop& operator=(const LeadershipLoop&) = delete;

  // Stops campaigning (and the watchdog); joins both threads. Idempotent.
  void StopCampaigning();
  // A leader that stopped campaigning hands over at once, so a standby need
  // not wait out the term; call it once nothing acts any more. Nothing when
  // this replica does not lead.
  void Resign();

  bool leading() const { return leading_.load(); }
  int64_t generation() const { return generation_.load(); }

 private:
  void Campaign(std::stop_token stop);
  void Watch(std::stop_token stop);
  void Demote(const std::string& why);

  ports::LeaderElection& election_;
  LeadershipOptions o_;
  Logger& log_;
  const Nanos margin_;
  std::atomic<bool> leading_{false}, demoted_{false};
  std::atomic<int64_t> generation_{0};
  std::atomic<int64_t> deadline_ns_{0};  // steady clock, H2
  std::jthread campaign_, watchdog_;
};

}  // namespace nodeplane
