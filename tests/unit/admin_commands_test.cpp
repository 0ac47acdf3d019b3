// The admin command registry (admin/command_registry.h) read by both sides:
// nodeplanectl's command line builds a request against it, the admin API
// checks a request against it before any handler runs, and the usage is
// generated from it. No ledger is needed: every refusal here happens before
// a handler touches one.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "admin/admin_api.h"
#include "admin/command_line.h"
#include "admin/command_registry.h"
#include "admin/commands.h"

namespace nodeplane::admin {
namespace {

namespace json = boost::json;

json::object Parse(const std::string& text) { return json::parse(text).as_object(); }

class AdminApiTest : public ::testing::Test {
 protected:
  AdminApiTest() {
    AdminDeps deps;
    deps.metrics = [] { return std::string("nodeplane_up 1\n"); };
    api_ = std::make_unique<AdminApi>(std::move(deps));
  }
  json::object Ask(const std::string& request) {
    return Parse(api_->Handle(request, progress_, stop_.get_token()));
  }
  // What the admin API answers for the request nodeplanectl builds from `line`.
  json::object AskLine(const std::vector<std::string>& line) {
    auto parsed = ParseCommandLine(line);
    EXPECT_TRUE(parsed.ok()) << parsed.status().message();
    return parsed.ok() ? Ask(parsed->request) : json::object{};
  }
  std::vector<std::string> said_;
  AdminSocket::Progress progress_ = [this](const std::string& line) { said_.push_back(line); };
  std::stop_source stop_;
  std::unique_ptr<AdminApi> api_;
};

std::string Code(const json::object& answer) {
  return answer.at("ok").as_bool() ? "ok" : std::string(answer.at("code").as_string());
}
std::string Error(const json::object& answer) {
  const json::value* e = answer.if_contains("error");
  return e != nullptr ? std::string(e->as_string()) : "";
}

// --- The registry ---------------------------------------------------------

TEST(CommandRegistry, NamesAreUniqueAndEveryArgumentIsSpelledOnce) {
  std::set<std::string_view> names;
  for (const CommandSpec& c : Commands()) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    EXPECT_FALSE(c.summary.empty()) << c.name;
    std::set<std::string_view> keys, flags;
    for (const ArgSpec& a : c.args) {
      EXPECT_TRUE(keys.insert(a.key).second) << c.name << " " << a.key;
      if (a.flag.empty()) {
        EXPECT_FALSE(a.meta.empty()) << c.name << " " << a.key << ": a word needs its meta";
      } else {
        EXPECT_TRUE(flags.insert(a.flag).second) << c.name << " " << a.flag;
      }
    }
  }
  ASSERT_NE(FindCommand("tokens.create"), nullptr);
  EXPECT_EQ(FindCommand("tokens.create")->name, "tokens.create");
  EXPECT_EQ(FindCommand("tokens create"), nullptr);
}

// The command line tells a switch from a valued flag without knowing the
// command yet (command_line.cpp IsSwitch), so a flag must have one type in
// every command that takes it.
TEST(CommandRegistry, AFlagHasOneTypeInEveryCommand) {
  std::map<std::string_view, bool> is_switch;
  for (const CommandSpec& c : Commands()) {
    for (const ArgSpec& a : c.args) {
      if (a.flag.empty()) continue;
      const bool sw = a.type == ArgType::kSwitch;
      auto [it, fresh] = is_switch.emplace(a.flag, sw);
      EXPECT_TRUE(fresh || it->second == sw) << a.flag << " in " << c.name;
    }
  }
}

TEST(CommandRegistry, DefaultsAreValuesTheirArgumentAccepts) {
  for (const CommandSpec& c : Commands()) {
    for (const ArgSpec& a : c.args) {
      if (a.fallback.empty()) continue;
      if (a.type == ArgType::kInt || a.type == ArgType::kSeconds) {
        const int64_t v = std::stoll(std::string(a.fallback));
        EXPECT_TRUE(v >= a.min && v <= a.max) << c.name << " " << a.key;
      }
    }
    // A command with no arguments and its defaults: the request checks out.
    bool needs_something = false;
    for (const ArgSpec& a : c.args) needs_something = needs_something || a.required;
    if (needs_something) continue;
    auto args = Args::Parse(c, nullptr);
    EXPECT_TRUE(args.ok()) << c.name << ": " << args.status().message();
  }
}

// --- The admin API checks a request against its command ------------------

TEST_F(AdminApiTest, EveryCommandHasAHandlerAndTheRegistryListsEveryHandler) {
  // The constructor throws when the two sets differ; reaching here is the check.
  for (const CommandSpec& c : Commands()) {
    const json::object a = Ask(R"({"cmd":")" + std::string(c.name) + R"(","args":{"no_such_arg":1}})");
    EXPECT_EQ(Code(a), "invalid") << c.name;
    EXPECT_NE(Error(a).find("takes no argument \"no_such_arg\""), std::string::npos) << Error(a);
  }
}

TEST_F(AdminApiTest, AMalformedRequestIsRefusedWithWhatARequestIs) {
  for (const char* bad : {"not json", "[]", R"({"args":{}})", R"({"cmd":7})"}) {
    const json::object a = Ask(bad);
    EXPECT_EQ(Code(a), "invalid") << bad;
    EXPECT_NE(Error(a).find("one JSON object"), std::string::npos) << Error(a);
  }
  EXPECT_EQ(Error(Ask(R"({"cmd":"frobnicate"})")), "unknown command \"frobnicate\"");
  EXPECT_EQ(Error(Ask(R"({"cmd":"metrics","args":[1]})")), "\"args\" must be a JSON object");
}

TEST_F(AdminApiTest, AMisspeltArgumentIsRefusedNamingWhatTheCommandTakes) {
  const json::object a = Ask(R"({"cmd":"launch","args":{"tire":"small","request_id":1}})");
  EXPECT_EQ(Code(a), "invalid");
  EXPECT_EQ(Error(a), "launch takes no argument \"tire\" (it takes: tier, request_id, run_id, wait)");
}

TEST_F(AdminApiTest, ArgumentsAreTypedNotCoerced) {
  EXPECT_EQ(Error(Ask(R"({"cmd":"launch","args":{"tier":"t","request_id":"7"}})")), "request_id must be a whole number");
  EXPECT_EQ(Error(Ask(R"({"cmd":"launch","args":{"tier":"t","request_id":1.5}})")), "request_id must be a whole number");
  EXPECT_EQ(Error(Ask(R"({"cmd":"launch","args":{"tier":7,"request_id":1}})")), "tier must be a string");
  EXPECT_EQ(Error(Ask(R"({"cmd":"launch","args":{"tier":"t","request_id":1,"wait":"yes"}})")),
            "wait must be true or false");
  EXPECT_EQ(Error(Ask(R"({"cmd":"tokens.create","args":{"ttl_seconds":"1h"}})")),
            "ttl_seconds must be a whole number of seconds");
}

TEST_F(AdminApiTest, RequiredArgumentsBoundsAndChoicesAreHeld) {
  EXPECT_EQ(Error(Ask(R"({"cmd":"launch","args":{"request_id":1}})")), "launch needs --tier");
  EXPECT_EQ(Error(Ask(R"({"cmd":"launch","args":{"tier":"t"}})")), "launch needs --request-id");
  EXPECT_EQ(Error(Ask(R"({"cmd":"launch","args":{"tier":"t","request_id":0}})")), "request_id must be at least 1");
  EXPECT_EQ(Error(Ask(R"({"cmd":"jobs.list","args":{"limit":5000}})")), "limit is between 1 and 1000");
  EXPECT_EQ(Error(Ask(R"({"cmd":"tokens.create","args":{"uses":0}})")), "uses must be at least 1");
  EXPECT_EQ(Error(Ask(R"({"cmd":"enrollments.list","args":{"state":"pendng"}})")),
            "state is one of pending, approved, denied, all");
  EXPECT_EQ(Error(Ask(R"({"cmd":"nodes.revoke","args":{"node":"-bad name"}})")),
            "node must be 1 to 64 of [a-zA-Z0-9._-], starting with a letter or digit");
  EXPECT_EQ(Error(Ask(R"({"cmd":"ca.issue","args":{}})")), "ca issue needs NODE");
}

TEST_F(AdminApiTest, ALocalArgumentIsNeverSentAndNeverAccepted) {
  // ca issue --out names a directory on the operator's machine: the host has
  // no business with it.
  const json::object a = Ask(R"({"cmd":"ca.issue","args":{"node":"n1","out":"/tmp/x"}})");
  EXPECT_EQ(Code(a), "invalid");
  EXPECT_EQ(Error(a), "ca issue takes no argument \"out\" (it takes: node)");
}

TEST_F(AdminApiTest, ACheckedRequestReachesItsHandler) {
  const json::object metrics = Ask(R"({"cmd":"metrics"})");
  ASSERT_EQ(Code(metrics), "ok");
  EXPECT_EQ(metrics.at("result").as_object().at("text"), "nodeplane_up 1\n");
  // ca show on a host without [wire.tls]: the handler's own refusal.
  const json::object ca = Ask(R"({"cmd":"ca.show","args":{}})");
  EXPECT_EQ(Code(ca), "refused");
  EXPECT_NE(Error(ca).find("no certificate authority"), std::string::npos);
  // The handler's own check, after the registry's.
  EXPECT_EQ(Error(Ask(R"({"cmd":"tokens.revoke","args":{"id":"abc"}})")),
            "name the token by its id (at least 6 characters of it)");
}

// --- nodeplanectl's command line builds the request the API checks -------

TEST(CommandLine, BuildsTypedArgumentsWithDurationsInSeconds) {
  auto l = ParseCommandLine({"tokens", "create", "--uses", "3", "--ttl", "90m", "--note", "rack 4"});
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->command->name, "tokens.create");
  EXPECT_EQ(Parse(l->request),
            (json::object{{"cmd", "tokens.create"}, {"args", json::object{{"uses", 3}, {"ttl_seconds", 5400}, {"note", "rack 4"}}}}));
  EXPECT_FALSE(l->json);
}

TEST(CommandLine, GlobalFlagsGoAnywhereAndAreNotSent) {
  auto l = ParseCommandLine({"--json", "leases", "--socket", "/run/np.sock", "show", "L1", "--config", "/etc/x.toml"});
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_TRUE(l->json);
  EXPECT_EQ(l->socket, "/run/np.sock");
  EXPECT_EQ(l->config, "/etc/x.toml");
  EXPECT_EQ(Parse(l->request), (json::object{{"cmd", "leases.show"}, {"args", json::object{{"lease", "L1"}}}}));
}

TEST(CommandLine, ALocalArgumentStaysOnTheOperatorsMachine) {
  auto l = ParseCommandLine({"ca", "issue", "n1", "--out", "/tmp/bundle"});
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->local.at("out"), "/tmp/bundle");
  EXPECT_EQ(Parse(l->request), (json::object{{"cmd", "ca.issue"}, {"args", json::object{{"node", "n1"}}}}));
  EXPECT_EQ(ParseCommandLine({"ca", "issue", "n1"}).status().message(), "--out is required");
}

TEST(CommandLine, RefusalsSayWhatIsWrongInTheOperatorsTerms) {
  EXPECT_EQ(ParseCommandLine({}).status().message(), "no command given");
  EXPECT_EQ(ParseCommandLine({"frobnicate"}).status().message(), "unknown command \"frobnicate\"");
  EXPECT_EQ(ParseCommandLine({"tokens", "mint"}).status().message(), "unknown command \"tokens mint\"");
  // A group word alone is not a command.
  EXPECT_EQ(ParseCommandLine({"tokens"}).status().message(), "unknown command \"tokens\"");
  EXPECT_EQ(ParseCommandLine({"launch", "--tire", "t", "--request-id", "1"}).status().message(),
            "launch takes no --tire (it takes --tier, --request-id, --run-id, --wait)");
  EXPECT_EQ(ParseCommandLine({"launch", "--request-id", "1"}).status().message(), "--tier is required");
  EXPECT_EQ(ParseCommandLine({"launch", "--tier", "t", "--request-id", "one"}).status().message(),
            "--request-id must be a number");
  EXPECT_EQ(ParseCommandLine({"launch", "--tier"}).status().message(), "--tier needs a value");
  EXPECT_EQ(ParseCommandLine({"leases", "show", "L1", "L2"}).status().message(), "leases show does not take \"L2\"");
  EXPECT_NE(ParseCommandLine({"drain", "--timeout", "soon"}).status().message().find("--timeout: "), std::string::npos);
}

// Every command, its line filled in with values of each argument's type, is
// accepted by the admin API's check: the two sides read one table.
TEST_F(AdminApiTest, EveryCommandLineBuildsARequestTheApiAccepts) {
  for (const CommandSpec& c : Commands()) {
    std::vector<std::string> line;
    for (size_t i = 0, n = c.name.find('.'); i <= c.name.size(); n = c.name.find('.', i)) {
      line.emplace_back(c.name.substr(i, n == std::string_view::npos ? std::string_view::npos : n - i));
      if (n == std::string_view::npos) break;
      i = n + 1;
    }
    for (const ArgSpec& a : c.args) {
      std::string value = "n1";
      if (a.type == ArgType::kInt) value = std::to_string(std::max<int64_t>(a.min, 1));
      if (a.type == ArgType::kSeconds) value = "30s";
      if (!a.choices.empty()) value = std::string(a.choices.substr(0, a.choices.find('|')));
      if (a.flag.empty()) {
        line.push_back(value);
      } else if (a.type == ArgType::kSwitch) {
        line.emplace_back(a.flag);
      } else {
        line.emplace_back(a.flag);
        line.push_back(value);
      }
    }
    auto parsed = ParseCommandLine(line);
    ASSERT_TRUE(parsed.ok()) << c.name << ": " << parsed.status().message();
    ASSERT_EQ(parsed->command, &c);
    const json::value request = json::parse(parsed->request);
    auto args = Args::Parse(c, request.as_object().if_contains("args"));
    EXPECT_TRUE(args.ok()) << c.name << ": " << args.status().message();
  }
}

TEST(CommandLine, UsageListsEveryCommandAndACommandsOwnSyntax) {
  const std::string all = UsageText();
  for (const CommandSpec& c : Commands()) EXPECT_NE(all.find(std::string(c.summary)), std::string::npos) << c.name;
  EXPECT_EQ(UsageText({"enrollments", "approve", "--help"}),
            "usage: nodeplanectl [--config FILE | --socket PATH] [--json] enrollments approve NODE --fingerprint FP\n\n"
            "  sign NODE's pending request if FP is exactly its fingerprint\n");
  EXPECT_NE(UsageText({"tokens", "create"}).find("tokens create [--uses N] [--ttl DURATION] [--note TEXT]"),
            std::string::npos);
}

TEST(CommandLine, HelpIsAskedByAWordOrAFlagButNeverByAFlagsValue) {
  EXPECT_TRUE(AsksForHelp({"--help"}));
  EXPECT_TRUE(AsksForHelp({"launch", "-h"}));
  EXPECT_TRUE(AsksForHelp({"help"}));
  EXPECT_FALSE(AsksForHelp({"tokens", "create", "--note", "help"}));
}

}  // namespace
}  // namespace nodeplane::admin
