// ledger-conformance: runs the ledger contract against any nodeplane.ledger
// plugin.
//
//   ledger-conformance --plugin /path/to/ledger.so [--config JSON] [gtest flags]
//
// --config is the instance's config as JSON; "{state}" in it becomes a fresh
// state directory per test and "{test}" a name unique to the test. The
// default is {"path": "{state}/ledger.db"}, which suits ledger-sqlite.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "ledger_fixture.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto& opts = nodeplane::conformance::GlobalOptions();
  opts.config = R"({"path": "{state}/ledger.db"})";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--plugin") == 0 && i + 1 < argc) {
      opts.plugin = std::filesystem::absolute(argv[++i]).string();
    } else if (std::strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
      opts.config = argv[++i];
    } else {
      std::fprintf(stderr, "ledger-conformance: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (opts.plugin.empty() && !::testing::GTEST_FLAG(list_tests)) {
    std::fprintf(stderr, "usage: ledger-conformance --plugin LEDGER.so [--config JSON] [gtest flags]\n");
    return 2;
  }
  return RUN_ALL_TESTS();
}
