// Headroom and placement (billet-ledger.md §4.2): pure arithmetic over rows
// the store read inside its write transaction (the fleet possibly from its
// copy of the same generation, sql_ledger.h L6).
//
// Invariants:
//   P1. A host's room is min over vCPU and memory of its free capacity and the
//       deployment's remaining room, divided by the tier's request; a macOS
//       tier is also bounded by the host's free macOS slots.
//   P2. Next() picks, among eligible hosts with room, the lowest provider
//       preference rank, then by policy (pack: least room, spread: most room),
//       then the lexically smallest name; so identical fleets place
//       identically.
//   P3. Next() spends what it places from the host and from the deployment,
//       so successive calls never hand out the same capacity twice.
//   P4. Other tiers' floors are held first, in label order, each on the
//       hosts its own tier could use; a floor that cannot be kept stops there
//       and blocks nothing else.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace nodeplane::ledger {

struct TierSpec {
  std::string label;
  int64_t vcpu = 0;
  int64_t memory = 0;
  std::vector<std::string> providers;
  std::string guest_os = "linux";
  std::string node;
  std::string site;
  uint32_t max_concurrent = 0;
  uint32_t reserved = 0;
};

// A host of the placeable fleet with the capacity it offers to leases.
struct HostRoom {
  std::string name;
  std::string provider;
  std::string site;
  std::vector<std::string> guest_os_allowed;  // empty: every OS
  int64_t vcpu = 0;
  int64_t memory = 0;
  int64_t macos_slots = 0;
};

// The placeable fleet as escrow reads it: its hosts sorted by name in byte
// order (the Placer's final tie-break), and where each name is among them,
// so charging what open leases hold on thousands of hosts is a lookup each,
// not a search (docs/performance.md, ninth pass). Built once per read of the
// fleet and shared by every escrow of that generation (sql_ledger.h L6).
class Fleet {
 public:
  Fleet() = default;
  explicit Fleet(std::vector<HostRoom> sorted_by_name);

  const std::vector<HostRoom>& hosts() const { return hosts_; }
  // The position of `name` in hosts(); -1 when it is not in the fleet.
  int64_t IndexOf(const std::string& name) const;

 private:
  std::vector<HostRoom> hosts_;
  std::unordered_map<std::string, size_t> index_;
};

// One escrow's placement over a fleet it does not own: what it spends is
// kept beside the hosts, so the fleet can be shared by every escrow that
// read the same generation of it (sql_ledger.h L6).
class Placer {
 public:
  // `fleet` must outlive the Placer. deploy_* < 0 means no ceiling.
  Placer(const Fleet& fleet, int64_t deploy_vcpu, int64_t deploy_memory, bool spread);

  // Spends what open leases already hold on `host`; a host not in the
  // fleet is ignored (its leases hold nobody's room).
  void Charge(const std::string& host, int64_t vcpu, int64_t memory, int64_t macos_slots);
  bool Contains(const std::string& host) const;
  // Places one instance of `tier`, spending its room; the host chosen (valid
  // as long as the fleet), or null when no eligible host has room.
  const HostRoom* Next(const TierSpec& tier);
  // Whether `host` may ever run `tier` (pin, site, provider, guest OS).
  static bool Eligible(const HostRoom& host, const TierSpec& tier);
  // Holds `missing` instances of `tier` back (its floor); returns how many fit.
  uint32_t Hold(const TierSpec& tier, uint32_t missing);

 private:
  struct Spent {
    int64_t vcpu = 0;
    int64_t memory = 0;
    int64_t macos_slots = 0;
  };
  int64_t Room(size_t i, const TierSpec& tier) const;

  const Fleet& fleet_;
  std::vector<Spent> spent_;  // parallel to fleet_.hosts()
  int64_t deploy_vcpu_;
  int64_t deploy_memory_;
  bool spread_;
};

bool GuestOSAllowed(const std::vector<std::string>& allowed, const std::string& os);

}  // namespace nodeplane::ledger
