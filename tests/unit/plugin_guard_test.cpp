// The project's plugins' one exception-to-error guard and entry helper
// (plugins/common/plugin_error.h G1-G4, plugin_entry.h), and the ledger
// family's wrapper of it (plugins/ledger-sql/ledger_error.h): what each kind
// of failure looks like to the host, byte for byte in its np_error.
#include <gtest/gtest.h>

#include <cstddef>
#include <stdexcept>
#include <string>

#include "plugin_entry.h"
#include "plugin_error.h"
#ifdef NODEPLANE_TEST_LEDGER_CALL
#include "ledger_error.h"
#endif

namespace nodeplane::plugins {
namespace {

constexpr int64_t kUntouched = -7;

struct HostError {
  char text[256] = {};
  np_error err{sizeof(np_error), 0, 0, sizeof text, text, kUntouched};
  std::string message() const { return text; }
};

TEST(GuardedCall, AnOutageIsRetryableAndCarriesTheThrowersHint) {  // G2
  HostError h;
  const np_code rc = GuardedCall("p", &h.err, [] { throw PluginError(NP_UNAVAILABLE, "p: the API answered 503", 3'000'000'000); });
  EXPECT_EQ(rc, NP_UNAVAILABLE);
  EXPECT_EQ(h.err.code, NP_UNAVAILABLE);
  EXPECT_EQ(h.err.retryable, 1u);
  EXPECT_EQ(h.err.retry_after_ns, 3'000'000'000);
  EXPECT_EQ(h.message(), "p: the API answered 503");
}

TEST(GuardedCall, AVerdictIsNeitherRetryableNorHinted) {  // G2
  for (np_code code : {NP_INVALID, NP_NOT_FOUND, NP_CONFLICT, NP_FENCED, NP_NO_CAPACITY}) {
    HostError h;
    EXPECT_EQ(GuardedCall("p", &h.err, [&] { throw PluginError(code, "no", 5); }), code);
    EXPECT_EQ(h.err.retryable, 0u) << code;
    EXPECT_EQ(h.err.retry_after_ns, 0) << code;
  }
}

TEST(GuardedCall, AnyOtherExceptionIsTheNamedPluginsDefect) {  // G3
  HostError a;
  EXPECT_EQ(GuardedCall("cache-policy-rules", &a.err, [] { throw std::out_of_range("vector::at"); }), NP_INTERNAL);
  EXPECT_EQ(a.err.retryable, 0u);
  EXPECT_EQ(a.message(), "cache-policy-rules: vector::at");
  HostError b;
  EXPECT_EQ(GuardedCall("revocation-crl", &b.err, [] { throw 42; }), NP_INTERNAL);
  EXPECT_EQ(b.message(), "revocation-crl: an unknown exception");
}

TEST(GuardedCall, ABodyThatReturnsIsOkAndLeavesTheErrorAlone) {
  HostError h;
  int ran = 0;
  EXPECT_EQ(GuardedCall("p", &h.err, [&] { ++ran; }), NP_OK);
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(h.err.code, 0);
  EXPECT_EQ(h.err.retry_after_ns, kUntouched);
}

TEST(GuardedCall, AnOlderHostsShorterErrorIsNeverWrittenPastItsEnd) {  // G4
  HostError h;
  h.err.struct_size = offsetof(np_error, retry_after_ns);  // a host from before retry_after_ns
  EXPECT_EQ(GuardedCall("p", &h.err, [] { throw PluginError(NP_UNAVAILABLE, "down", 9); }), NP_UNAVAILABLE);
  EXPECT_EQ(h.err.retryable, 1u);
  EXPECT_EQ(h.err.retry_after_ns, kUntouched);
  EXPECT_EQ(GuardedCall("p", nullptr, [] { throw PluginError(NP_UNAVAILABLE, "down", 9); }), NP_UNAVAILABLE);
}

const np_plugin_desc kDesc = {sizeof(np_plugin_desc), "ledger-example", "1", 0, nullptr};

TEST(ChooseAbi, AnswersWithThePluginWhenTheHostOffersItsVersion) {
  np_negotiation n{sizeof n, NP_ABI_VERSION, NP_ABI_VERSION + 3, nullptr, 0, nullptr};
  HostError h;
  EXPECT_EQ(ChooseAbi(&n, &h.err, kDesc), NP_OK);
  EXPECT_EQ(n.chosen_abi, NP_ABI_VERSION);
  EXPECT_EQ(n.plugin, &kDesc);
}

TEST(ChooseAbi, RefusesAHostThatDoesNotOfferItsVersionSayingWhichItKnows) {
  np_negotiation n{sizeof n, NP_ABI_VERSION + 1, NP_ABI_VERSION + 2, nullptr, 0, nullptr};
  HostError h;
  EXPECT_EQ(ChooseAbi(&n, &h.err, kDesc), NP_UNSUPPORTED);
  EXPECT_EQ(n.plugin, nullptr);
  EXPECT_EQ(h.message(), "ledger-example is built for plugin ABI 1; this host offers 2-3");
}

#ifdef NODEPLANE_TEST_LEDGER_CALL
TEST(LedgerCall, TheStoresOwnFailureIsAnOutageNamedByTheCaller) {  // ledger_error.h
  HostError h;
  const np_code rc = ledger::LedgerCall("ledger-postgres", &h.err, "ledger-postgres: cannot reach the database: ",
                                        [] { throw soci::soci_error("connection to server at \"db\" refused"); });
  EXPECT_EQ(rc, NP_UNAVAILABLE);
  EXPECT_EQ(h.err.retryable, 1u);
  EXPECT_EQ(h.message(), "ledger-postgres: cannot reach the database: connection to server at \"db\" refused");
}

TEST(LedgerCall, AVerdictPassesThroughUnchanged) {
  HostError h;
  EXPECT_EQ(ledger::LedgerCall("ledger-sql", &h.err, "x: ", [] { ledger::Fail(NP_FENCED, "epoch 3 is stale"); }),
            NP_FENCED);
  EXPECT_EQ(h.err.retryable, 0u);
  EXPECT_EQ(h.message(), "epoch 3 is stale");
}
#endif

}  // namespace
}  // namespace nodeplane::plugins
