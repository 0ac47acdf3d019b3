// The memo of revocation verdicts (loader/revocation_memo.h): what keeps a
// remembered "not revoked" from outliving a revocation.
#include "loader/revocation_memo.h"

#include <gtest/gtest.h>

namespace nodeplane::loader {
namespace {

TEST(RevocationMemoTest, AnAnswerIsRememberedForThatCertificateOnly) {
  RevocationMemo memo;
  uint64_t asked = 0;
  EXPECT_FALSE(memo.Lookup("n1", "0a", 100, &asked).has_value());
  memo.Remember("n1", "0a", 100, false, asked);
  EXPECT_EQ(memo.Lookup("n1", "0a", 100, &asked), std::optional<bool>(false));
  EXPECT_FALSE(memo.Lookup("n1", "0a", 101, &asked).has_value());  // another issue time
  EXPECT_FALSE(memo.Lookup("n2", "0a", 100, &asked).has_value());  // another node
  EXPECT_FALSE(memo.Lookup("n1", "0b", 100, &asked).has_value());  // another serial
}

// M2: a revocation forgets every "not revoked".
TEST(RevocationMemoTest, ARevocationForgetsEveryAnswer) {
  RevocationMemo memo;
  uint64_t asked = 0;
  memo.Lookup("n1", "0a", 100, &asked);
  memo.Remember("n1", "0a", 100, false, asked);
  memo.Forget();
  EXPECT_FALSE(memo.Lookup("n1", "0a", 100, &asked).has_value());
}

// M2: an answer read from the ledger while a revocation was being written may
// predate it, so it is not kept.
TEST(RevocationMemoTest, AnAnswerAskedBeforeARevocationIsNotKept) {
  RevocationMemo memo;
  uint64_t asked = 0;
  memo.Lookup("n1", "0a", 100, &asked);  // the question is asked ...
  memo.Forget();                          // ... a revocation is written ...
  memo.Remember("n1", "0a", 100, false, asked);  // ... and the older answer arrives
  EXPECT_FALSE(memo.Lookup("n1", "0a", 100, &asked).has_value());
  memo.Remember("n1", "0a", 100, true, asked);  // asked again, after it
  EXPECT_EQ(memo.Lookup("n1", "0a", 100, &asked), std::optional<bool>(true));
}

}  // namespace
}  // namespace nodeplane::loader
