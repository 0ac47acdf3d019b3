// What the ledger has answered to "is this certificate revoked?", kept so
// that a poll, a lease route or a command's hand-over (S11) need not read the
// ledger again to prove a certificate it proved a moment ago.
//
// M1. A revocation is never undone, so a "revoked" answer stays true.
// M2. A "not revoked" answer stays true until a revocation is written. Every
//     revocation written through the adapter that owns this memo calls
//     Forget() once the write returned (committed, failed or unknown), and
//     an answer read while a revocation was being written is not kept: it
//     is remembered only if no Forget() ran since the question was asked
//     (the generation taken by Lookup).
// M3. Only the active control plane writes revocations (the admin socket's
//     certs.revoke and nodes.revoke, through its own adapter); a replica that
//     takes over starts with nothing remembered, so M2 covers every writer.
//
// Thread-safe: the wire's workers and I/O threads ask at once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/mutex.h"

namespace nodeplane::loader {

class RevocationMemo {
 public:
  // The remembered answer for the certificate, if any; `generation` is set
  // for a later Remember of an answer read from the ledger.
  std::optional<bool> Lookup(const std::string& node, const std::string& serial, int64_t issued_at_ns,
                             uint64_t* generation) {
    MutexLock lock(mu_);
    *generation = generation_;
    auto it = answers_.find(Key(node, serial, issued_at_ns));
    if (it == answers_.end()) return std::nullopt;
    return it->second;
  }

  // Keeps an answer read from the ledger after Lookup gave `generation` (M2).
  void Remember(const std::string& node, const std::string& serial, int64_t issued_at_ns, bool revoked,
                uint64_t generation) {
    MutexLock lock(mu_);
    if (generation != generation_) return;
    // Bounded: a fleet of certificates several times the largest fleet
    // measured; past it everything is asked again, which is only slower.
    if (answers_.size() >= kMaxAnswers) answers_.clear();
    answers_[Key(node, serial, issued_at_ns)] = revoked;
  }

  // A revocation was written (or may have been): nothing "not revoked" is
  // known any more.
  void Forget() {
    MutexLock lock(mu_);
    ++generation_;
    answers_.clear();
  }

 private:
  static constexpr size_t kMaxAnswers = 1 << 18;
  static std::string Key(const std::string& node, const std::string& serial, int64_t issued_at_ns) {
    return node + '\n' + serial + '\n' + std::to_string(issued_at_ns);
  }

  Mutex mu_;
  uint64_t generation_ NP_GUARDED_BY(mu_) = 0;
  std::unordered_map<std::string, bool> answers_ NP_GUARDED_BY(mu_);
};

}  // namespace nodeplane::loader
