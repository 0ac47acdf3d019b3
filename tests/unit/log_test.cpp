#include "common/log.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace nodeplane {
namespace {

TEST(Logger, LogfmtQuotesWhatIsNotAPlainToken) {
  Logger log(LogLevel::kInfo, LogFormat::kLogfmt);
  EXPECT_EQ(log.Format(LogLevel::kWarn, "T", "wire.refused",
                       {{"node", "n1"}, {"reason", "bad \"cert\"\nline"}, {"n", 3}, {"ok", true}}),
            "ts=T level=warn event=wire.refused node=n1 reason=\"bad \\\"cert\\\"\\nline\" n=3 ok=true\n");
  EXPECT_EQ(log.Format(LogLevel::kInfo, "T", "e", {{"empty", ""}}), "ts=T level=info event=e empty=\"\"\n");
}

TEST(Logger, JsonIsOneObjectPerLine) {
  Logger log(LogLevel::kInfo, LogFormat::kJson);
  EXPECT_EQ(log.Format(LogLevel::kError, "T", "x", {{"k", "a\"b\tc"}}),
            "{\"ts\":\"T\",\"level\":\"error\",\"event\":\"x\",\"k\":\"a\\\"b\\tc\"}\n");
}

TEST(Logger, DropsLinesBelowItsLevel) {
  std::FILE* f = std::tmpfile();
  Logger log(LogLevel::kWarn, LogFormat::kLogfmt, f);
  log.Info("hidden");
  log.Warn("shown");
  std::rewind(f);
  char buf[256] = {};
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::string out(buf, n);
  EXPECT_EQ(out.find("hidden"), std::string::npos);
  EXPECT_NE(out.find("event=shown"), std::string::npos);
  std::fclose(f);
}

TEST(Logger, LinesFromManyThreadsStayWhole) {
  std::FILE* f = std::tmpfile();
  Logger log(LogLevel::kInfo, LogFormat::kLogfmt, f);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&log, t] {
      for (int i = 0; i < 200; ++i) log.Info("tick", {{"thread", t}, {"i", i}});
    });
  }
  for (auto& th : threads) th.join();
  std::rewind(f);
  int lines = 0;
  char buf[512];
  while (std::fgets(buf, sizeof buf, f) != nullptr) {
    std::string line(buf);
    EXPECT_EQ(line.rfind("ts=", 0), 0u) << line;
    EXPECT_EQ(line.back(), '\n');
    ++lines;
  }
  EXPECT_EQ(lines, 800);
  std::fclose(f);
}

TEST(ParseLogLevel, KnowsFourLevels) {
  EXPECT_EQ(ParseLogLevel("debug"), LogLevel::kDebug);
  EXPECT_EQ(ParseLogLevel("error"), LogLevel::kError);
  EXPECT_FALSE(ParseLogLevel("verbose").has_value());
}

}  // namespace
}  // namespace nodeplane
