// The jit-github plugin's job source ("nodeplane.jobs" 1), loaded through
// the host's loader and adapter as nodeplaned loads it, against the
// stateful fake of GitHub's Actions service (tests/github/fake_actions.mjs),
// for the tests of the conversation (jobs_github_test.cpp) and of GitHub's
// own behaviours (jobs_github_behaviour_test.cpp).
//
// Poll timing keeps GitHub's ratio: the client's bound is scaled down to
// kPollBound, and the fake holds an idle poll kHeld, as github.com's ~88 s
// hold stands to the host's 120 s deadline (fake_actions.mjs cites both).
#pragma once

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "github_doubles.h"
#include "loader/host_services.h"
#include "loader/jobs_adapter.h"
#include "loader/plugin_library.h"
#include "wire/http_client.h"

namespace nodeplane::testing {

inline constexpr std::chrono::milliseconds kPollBound{2000};
inline constexpr std::chrono::milliseconds kHeld{kPollBound * 88 / 120};

inline std::string TempDir(const char* name) {
  std::string tmpl = ::testing::TempDir() + "/" + name + "-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp");
  return tmpl;
}

class JobsGithubFixture : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = TempDir("np-jobs"); }
  void TearDown() override {
    sources_.clear();
    fake_.reset();
    if (log_file_ != nullptr) std::fclose(log_file_);
    log_file_ = nullptr;
    std::filesystem::remove_all(dir_);
  }

  // `extra_spec` adds keys to the fake's SPEC (",\"custom_labels\":false");
  // an idle poll is held kHeld unless it says otherwise.
  void StartFake(const std::string& extra_spec = "") {
    fake_ = std::make_unique<GithubFake>(GITHUB_DOUBLES_DIR, dir_);
    const std::string hold = extra_spec.find("poll_hold_ms") == std::string::npos
                                 ? ",\"poll_hold_ms\":" + std::to_string(kHeld.count())
                                 : "";
    ASSERT_EQ(fake_->Start(3, hold + extra_spec), "");
    log_file_ = std::fopen((dir_ + "/host.log").c_str(), "w");
    log_ = std::make_unique<Logger>(LogLevel::kDebug, LogFormat::kLogfmt, log_file_);
    host_ = std::make_unique<loader::HostServices>(*log_, dir_);
  }

  // A job source for App A on acme, as a [plugins.NAME.config] table.
  ports::JobSource& Source() {
    auto lib = loader::PluginLibrary::Open(std::string(PLUGIN_DIR) + "/jit-github.so", "", host_->c());
    EXPECT_TRUE(lib.ok()) << lib.status().ToString();
    const std::string config = "{\"api_url\":\"http://127.0.0.1:" + std::to_string(fake_->port()) +
                               R"(/api/v3","organization":"acme","app_id":11,"private_key_file":"app-a.pem","timeout_seconds":5})";
    auto made = loader::JobsAdapter::Create(*lib, "github-jobs", config, host_->c(), false);
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    sources_.push_back(std::move(*made));
    return *sources_.back();
  }

  boost::json::value Control(const std::string& method, const std::string& path, const std::string& body = "") {
    return fake_->Control(method, path, body);
  }
  // Switches one of the fake's behaviours (fake_actions.mjs) now.
  void Behave(const std::string& json_object) { Control("POST", "/_fake/actions/behaviour", json_object); }
  int Requests(const std::string& pattern) { return static_cast<int>(fake_->Requests(pattern).size()); }
  std::string LogText() {
    std::fflush(log_file_);
    return ReadAll(dir_ + "/host.log");
  }
  // The fake runner: presents a JIT config to the fake service.
  int Runner(const std::string& action, const std::string& jit, const std::string& extra = "") {
    wire::HttpClient c(wire::ClientOptions{"127.0.0.1", fake_->port(), std::nullopt, {}});
    auto r = c.Do("POST", "/actions-runner/" + action, R"({"jit":")" + jit + "\"" + extra + "}");
    return r.ok() ? r->status : -1;
  }

  ports::ScaleSet Ensure(ports::JobSource& src, const std::string& name = "np-large") {
    auto set = src.EnsureScaleSet(name, "builders", {name, "self-hosted", "linux", "large"});
    EXPECT_TRUE(set.ok()) << set.status().ToString();
    return set.ok() ? *set : ports::ScaleSet{};
  }

  // The scale set np-large and a session on it, held by "host-a".
  std::pair<int64_t, uint64_t> Opened(ports::JobSource& src) {
    const int64_t id = Ensure(src).id;
    auto session = src.OpenSession(id, "host-a", nullptr);
    EXPECT_TRUE(session.ok()) << session.status().ToString();
    return {id, session.ok() ? *session : 0};
  }

  // GitHub drops every session; the next poll on `session` reports it gone.
  void ExpectSessionsDropped(ports::JobSource& src, uint64_t session) {
    Control("POST", "/_fake/actions/expire_sessions");
    auto polled = src.NextMessage(session, 0, 10, kPollBound);
    ASSERT_FALSE(polled.ok());
    EXPECT_EQ(polled.status().code(), Code::kNotFound) << polled.status().ToString();
  }

  std::optional<ports::QueueMessage> Next(ports::JobSource& src, uint64_t session, int64_t last = 0) {
    auto m = src.NextMessage(session, last, 10, kPollBound);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? *m : std::nullopt;
  }

  std::string dir_;
  std::unique_ptr<GithubFake> fake_;
  std::FILE* log_file_ = nullptr;
  std::unique_ptr<Logger> log_;
  std::unique_ptr<loader::HostServices> host_;
  std::vector<std::unique_ptr<loader::JobsAdapter>> sources_;
};

}  // namespace nodeplane::testing
