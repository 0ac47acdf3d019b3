// What the open leases hold, kept between escrows (sql_ledger.h L10).
//
// Escrow charges every host with what its open leases hold and counts each
// tier's open leases; read from the rows, that is a pass over every open
// lease of the fleet per escrow, the larger the busier the fleet. The tally
// is that reading kept in memory, with the value of the ledger's charge
// counter (fleet.charges, bumped by trigger whenever what open leases hold
// changes, schema.cpp V9) it reflects:
//   T1. It is used only while the counter still has that value: any write
//       it was not told of, by this process or another, moves the counter
//       and the next escrow reads the rows again.
//   T2. A write that changes a charge and keeps the tally (escrow's insert,
//       a release) applies its own change and takes the counter's new value
//       in the same transaction, knowing how many bumps its own statement
//       made (one per lease opened or ended): escrow adds them to the value
//       it read; a release keeps the tally only if the counter stands one
//       past it. A write that does not keep it simply leaves it stale.
//   T3. It is dropped whenever the transaction that changed it may not
//       commit (a write that threw, a batch rolled back): the counter rolls
//       back with the rows, and a later write could bring it to the value
//       the tally holds with other rows behind it.
//
// Not thread-safe: the ledger keeps it beside the writer session, under the
// writer's mutex.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>

namespace nodeplane::ledger {

// What one open lease holds, as escrow counts it.
struct LeaseCharge {
  std::string tier;
  std::string host;  // the node it is charged to ("" when unplaced)
  int64_t vcpu = 0;
  int64_t memory = 0;
  int64_t macos_slots = 0;
};

class ChargeTally {
 public:
  struct HostHeld {
    int64_t vcpu = 0;
    int64_t memory = 0;
    int64_t macos_slots = 0;
    int64_t leases = 0;
  };

  // Whether it reflects the rows at counter value `charges` (T1).
  bool CurrentAt(int64_t charges) const { return valid_ && charges_ == charges; }
  // Forgets everything: the next use reads the rows again (T3).
  void Drop();
  // Starts again from nothing, to be filled from the rows at `charges`.
  void Restart(int64_t charges);
  // The counter moved by changes this tally was given (T2).
  void Stamp(int64_t charges) { charges_ = charges; }

  // `c` held by `leases` open leases together (its sizes their sums).
  void Add(const LeaseCharge& c, int64_t leases = 1);
  void Remove(const LeaseCharge& c);

  int64_t vcpu() const { return vcpu_; }
  int64_t memory() const { return memory_; }
  // Charged node → what its open leases hold; nodes holding nothing absent.
  const std::unordered_map<std::string, HostHeld>& hosts() const { return hosts_; }
  // Open leases of `tier`, and of `tier` per charged node.
  int64_t Open(const std::string& tier) const;
  const std::unordered_map<std::string, int64_t>* OpenByHost(const std::string& tier) const;

 private:
  void Apply(const LeaseCharge& c, int64_t sign, int64_t leases);

  bool valid_ = false;
  int64_t charges_ = 0;
  int64_t vcpu_ = 0, memory_ = 0;
  std::unordered_map<std::string, HostHeld> hosts_;
  struct TierOpen {
    int64_t leases = 0;
    std::unordered_map<std::string, int64_t> by_host;
  };
  std::map<std::string, TierOpen> tiers_;
};

}  // namespace nodeplane::ledger
