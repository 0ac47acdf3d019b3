#include "session.h"

namespace nodeplane::ledger {

Session::KeptStatement* Session::Checkout(const std::string& sql) {
  if (reset_ == nullptr) return nullptr;
  // The ledger's statements are fixed texts (about a hundred); a text that
  // varied with its values would otherwise grow this without end.
  constexpr size_t kMaxKept = 512;
  if (kept_.size() >= kMaxKept && kept_.find(sql) == kept_.end()) return nullptr;
  KeptStatement& k = kept_[sql];
  if (k.in_use) return nullptr;  // Q4
  if (!k.st) {
    auto st = std::make_unique<soci::statement>(*this);
    st->alloc();
    st->prepare(sql, soci::details::st_repeatable_query);
    k.st = std::move(st);
  }
  k.in_use = true;
  return &k;
}

void Session::Return(KeptStatement& k) noexcept {
  try {
    reset_(*k.st);
    k.st->bind_clean_up();
  } catch (...) {
    k.st.reset();
  }
  k.in_use = false;
}

}  // namespace nodeplane::ledger
