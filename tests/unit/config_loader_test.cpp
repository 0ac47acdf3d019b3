// The config loader's accepted and refused inputs. Every refusal asserts the
// key path and the line it names, and the substance of the message.
#include "config/config_loader.h"
#include "common/names.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace nodeplane::config {
namespace {

// The smallest valid config; cases append to it, so its line count matters:
// line 6 is the first line a case adds.
constexpr const char* kBase =
    "deployment = \"test\"\n"
    "state_dir = \"/var/lib/nodeplane-test\"\n"
    "[plugins.ledger]\n"
    "library = \"ledger-sqlite\"\n"
    "provides = [\"ledger\"]\n";

LoadResult Load(const std::string& text) { return LoadConfigText(text, "test.toml"); }

Config MustLoad(const std::string& text) {
  LoadResult r = Load(text);
  for (const ConfigError& e : r.errors) ADD_FAILURE() << e.ToString();
  EXPECT_TRUE(r.config.has_value());
  return r.config ? *r.config : Config{};
}

// Asserts that loading fails with an error at `line` for `key` whose message
// contains `fragment`.
void ExpectError(const std::string& text, const std::string& key, uint32_t line,
                 const std::string& fragment) {
  LoadResult r = Load(text);
  ASSERT_FALSE(r.ok()) << "expected an error for " << key;
  EXPECT_FALSE(r.config.has_value());
  for (const ConfigError& e : r.errors) {
    if (e.key == key && e.line == line && e.message.find(fragment) != std::string::npos) {
      EXPECT_EQ(e.file, "test.toml");
      return;
    }
  }
  std::string got;
  for (const ConfigError& e : r.errors) got += "\n  " + e.ToString();
  ADD_FAILURE() << "no error for key " << key << " at line " << line << " containing \"" << fragment
                << "\"; got:" << got;
}

TEST(ConfigLoader, AcceptsTheSmallestConfigWithDefaults) {
  Config c = MustLoad(kBase);
  EXPECT_EQ(c.deployment, "test");
  EXPECT_EQ(c.wire.listen, "127.0.0.1:7717");
  EXPECT_FALSE(c.wire.tls.has_value());
  EXPECT_EQ(c.wire.poll_window, std::chrono::seconds(50));
  EXPECT_EQ(c.wire.command_timeout, std::chrono::minutes(10));
  EXPECT_EQ(c.wire.io_threads, 0u);  // one per core
  EXPECT_EQ(c.leases.ttl, std::chrono::seconds(90));
  EXPECT_EQ(c.admin.mode, 0660u);
  EXPECT_EQ(c.AdminSocketPath(), "/var/lib/nodeplane-test/admin.sock");
  EXPECT_EQ(c.LedgerPlugin().name, "ledger");
  EXPECT_EQ(c.LedgerPlugin().config_json, "{}");
}

// A node running jobs heartbeats every third of the lease TTL on a
// connection of its own; the idle timeout left unset outlasts that interval,
// so a longer TTL does not turn every heartbeat into a new connection.
TEST(ConfigLoader, TheIdleTimeoutLeftUnsetOutlastsTheHeartbeatInterval) {
  EXPECT_EQ(MustLoad(kBase).wire.idle_timeout, std::chrono::seconds(45));
  EXPECT_EQ(MustLoad(std::string(kBase) + "[leases]\nttl = \"5m\"\n").wire.idle_timeout, std::chrono::seconds(115));
  EXPECT_EQ(MustLoad(std::string(kBase) + "[wire]\nidle_timeout = \"20s\"\n[leases]\nttl = \"5m\"\n").wire.idle_timeout,
            std::chrono::seconds(20));  // as the operator wrote it
}

TEST(ConfigLoader, AcceptsAFullConfig) {
  Config c = MustLoad(std::string(kBase) +
                      "[plugins.ledger.config]\n"
                      "path = \"ledger.db\"\n"
                      "busy = 5\n"
                      "[plugins.acme-app]\n"
                      "library = \"/opt/np/jit-github.so\"\n"
                      "provides = [\"jit\"]\n"
                      "[log]\nlevel = \"debug\"\nformat = \"json\"\n"
                      "[wire]\nlisten = \"0.0.0.0:7717\"\npoll_window = \"30s\"\ncommand_timeout = \"5m\"\nio_threads = 3\n"
                      "[wire.tls]\nserver_names = [\"cp.example.com\"]\n"
                      "[bootstrap]\nlisten = \"0.0.0.0:7718\"\nmax_connections = 16\n"
                      "[leases]\nttl = \"2m\"\nreap_interval = \"20s\"\n"
                      "[limits]\nmax_vcpu = 64\nmax_memory = \"256GiB\"\nplacement = \"spread\"\n"
                      "[sites.eu-1]\nstore = \"ceph\"\n"
                      "[nodes.mac-1]\nprovider = \"tart\"\nguest_os = [\"macos\"]\nmacos_vm_limit = 2\n"
                      "[targets.acme]\njit = \"acme-app\"\n"
                      "[tiers.small]\nvcpu = 2\nmemory = \"4GiB\"\nproviders = [\"process\", \"docker\"]\n"
                      "site = \"eu-1\"\ntarget = \"acme\"\nrunner_group = \"default\"\n"
                      "labels = [\"self-hosted\", \"linux\"]\ncommand = [\"/usr/bin/true\"]\n"
                      "max_concurrent = 4\nreserved = 1\n");
  EXPECT_EQ(c.log_level, LogLevel::kDebug);
  EXPECT_EQ(c.log_format, LogFormat::kJson);
  ASSERT_TRUE(c.wire.tls.has_value());
  EXPECT_EQ(c.wire.tls->server_names.size(), 1u);
  EXPECT_EQ(c.wire.io_threads, 3u);
  ASSERT_TRUE(c.bootstrap.has_value());
  EXPECT_EQ(c.bootstrap->max_connections, 16u);
  EXPECT_EQ(c.limits.max_memory, 256ull << 30);
  EXPECT_EQ(c.limits.placement, Placement::kSpread);
  ASSERT_EQ(c.tiers.size(), 1u);
  EXPECT_EQ(c.tiers[0].memory, 4ull << 30);
  ASSERT_EQ(c.tiers[0].providers.size(), 2u);
  EXPECT_EQ(c.tiers[0].providers[0], Provider::kProcess);
  EXPECT_EQ(c.tiers[0].providers[1], Provider::kDocker);
  EXPECT_EQ(c.targets[0].jit, "acme-app");
  EXPECT_EQ(c.nodes[0].guest_os, std::vector<GuestOS>{GuestOS::kMacOS});
  EXPECT_NE(c.LedgerPlugin().config_json.find("\"path\""), std::string::npos);
  EXPECT_NE(c.LedgerPlugin().config_json.find("\"ledger.db\""), std::string::npos);
}

TEST(ConfigLoader, AcceptsLoopbackIPv6AndLocalhostWithoutTLS) {
  MustLoad(std::string(kBase) + "[wire]\nlisten = \"[::1]:7717\"\n");
  MustLoad(std::string(kBase) + "[wire]\nlisten = \"localhost:0\"\n");
}

TEST(ConfigLoader, AcceptsOperatorProvidedCertificate) {
  Config c = MustLoad(std::string(kBase) +
                      "[wire]\nlisten = \"0.0.0.0:7717\"\n[wire.tls]\ncert_file = \"/etc/np/s.pem\"\nkey_file = \"/etc/np/s.key\"\n");
  EXPECT_EQ(c.wire.tls->cert_file, "/etc/np/s.pem");
}

TEST(ConfigLoader, RefusesTOMLSyntaxErrorsWithTheirLine) {
  ExpectError(std::string(kBase) + "[wire]\nlisten = \n", "", 7, "TOML syntax");
}

TEST(ConfigLoader, RefusesAnUnknownTopLevelKeyWithASuggestion) {
  ExpectError("deploymnt = \"x\"\n" + std::string(kBase), "deploymnt", 1, "did you mean \"deployment\"");
}

TEST(ConfigLoader, RefusesAnUnknownNestedKeyWithASuggestion) {
  ExpectError(std::string(kBase) + "[wire]\npoll_windw = \"10s\"\n", "wire.poll_windw", 7,
              "did you mean \"poll_window\"");
}

TEST(ConfigLoader, RefusesAnUnknownTierKeyWithASuggestion) {
  ExpectError(std::string(kBase) +
                  "[tiers.small]\nvcpu = 1\nmemory = \"1GiB\"\nproviders = [\"docker\"]\nlabel = [\"x\"]\n",
              "tiers.small.label", 10, "did you mean \"labels\"");
}

TEST(ConfigLoader, ListsKnownKeysWhenNothingIsClose) {
  ExpectError(std::string(kBase) + "[leases]\nzzzzzzzzzzzz = 1\n", "leases.zzzzzzzzzzzz", 7,
              "known keys here: reap_interval, ttl");
}

TEST(ConfigLoader, RefusesAMissingDeployment) {
  ExpectError("state_dir = \"/x\"\n[plugins.ledger]\nlibrary = \"ledger-sqlite\"\nprovides = [\"ledger\"]\n",
              "deployment", 1, "required key is missing");
}

TEST(ConfigLoader, RefusesAnInvalidDeploymentName) {
  ExpectError("deployment = \"-bad\"\nstate_dir = \"/x\"\n", "deployment", 1, "invalid name \"-bad\"");
}

TEST(ConfigLoader, RefusesADeploymentNameOver64Characters) {
  ExpectError("deployment = \"" + std::string(65, 'a') + "\"\nstate_dir = \"/x\"\n", "deployment", 1,
              "1 to 64");
}

TEST(ConfigLoader, RefusesARelativeStateDir) {
  ExpectError("deployment = \"d\"\nstate_dir = \"var/lib\"\n", "state_dir", 2, "absolute path");
}

TEST(ConfigLoader, RefusesAWrongType) {
  ExpectError(std::string(kBase) + "[wire]\nmax_connections = \"many\"\n", "wire.max_connections", 7,
              "expected an integer, found a string");
}

TEST(ConfigLoader, RefusesAnOutOfRangeInteger) {
  ExpectError(std::string(kBase) + "[wire]\nmax_connections = 0\n", "wire.max_connections", 7,
              "between 1 and 1000000");
}

TEST(ConfigLoader, RefusesMoreIoThreadsThanTheLimit) {
  ExpectError(std::string(kBase) + "[wire]\nio_threads = 65\n", "wire.io_threads", 7, "between 0 and 64");
}

TEST(ConfigLoader, RefusesADurationWithoutUnit) {
  ExpectError(std::string(kBase) + "[wire]\npoll_window = \"50\"\n", "wire.poll_window", 7, "needs a unit");
}

TEST(ConfigLoader, RefusesADurationGivenAsANumber) {
  ExpectError(std::string(kBase) + "[leases]\nttl = 90\n", "leases.ttl", 7,
              "expected a duration string such as \"50s\"");
}

TEST(ConfigLoader, RefusesAZeroDuration) {
  ExpectError(std::string(kBase) + "[leases]\nttl = \"0s\"\n", "leases.ttl", 7, "greater than zero");
}

TEST(ConfigLoader, RefusesASizeWithoutUnit) {
  ExpectError(std::string(kBase) + "[limits]\nmax_memory = \"8\"\n", "limits.max_memory", 7,
              "the unit must be one of");
}

TEST(ConfigLoader, RefusesAnUnknownLogLevel) {
  ExpectError(std::string(kBase) + "[log]\nlevel = \"verbose\"\n", "log.level", 7,
              "unknown value \"verbose\"; expected one of \"debug\"");
}

TEST(ConfigLoader, RefusesAPlaintextWireOnAnyInterface) {
  ExpectError(std::string(kBase) + "[wire]\nlisten = \"0.0.0.0:7717\"\n", "wire.listen", 7,
              "not a loopback address");
}

TEST(ConfigLoader, RefusesAPlaintextWireOnAPrivateAddress) {
  ExpectError(std::string(kBase) + "[wire]\nlisten = \"10.0.0.5:7717\"\n", "wire.listen", 7, "add [wire.tls]");
}

TEST(ConfigLoader, RefusesAPlaintextWireOnANameOtherThanLocalhost) {
  ExpectError(std::string(kBase) + "[wire]\nlisten = \"localhost.evil.com:80\"\n", "wire.listen", 7,
              "not a loopback address");
}

TEST(ConfigLoader, RefusesAListenAddressWithoutPort) {
  ExpectError(std::string(kBase) + "[wire]\nlisten = \"127.0.0.1\"\n", "wire.listen", 7, "has no port");
}

TEST(ConfigLoader, RefusesANonNumericPort) {
  ExpectError(std::string(kBase) + "[wire]\nlisten = \"127.0.0.1:http\"\n", "wire.listen", 7,
              "numeric port from 0 to 65535");
}

TEST(ConfigLoader, RefusesTLSOnAWildcardWithoutServerNames) {
  ExpectError(std::string(kBase) + "[wire]\nlisten = \":7717\"\n[wire.tls]\n", "wire.tls.server_names", 8,
              "set server_names");
}

TEST(ConfigLoader, RefusesACertificateWithoutItsKey) {
  ExpectError(std::string(kBase) + "[wire.tls]\ncert_file = \"/etc/c.pem\"\n", "wire.tls.key_file", 6,
              "give both or neither");
}

TEST(ConfigLoader, RefusesBootstrapWithoutTLS) {
  ExpectError(std::string(kBase) + "[bootstrap]\nlisten = \"127.0.0.1:7718\"\n", "bootstrap", 6,
              "enrollment needs TLS");
}

TEST(ConfigLoader, RefusesBootstrapOnTheWireAddress) {
  ExpectError(std::string(kBase) +
                  "[wire]\nlisten = \"0.0.0.0:7717\"\n[wire.tls]\nserver_names = [\"cp\"]\n"
                  "[bootstrap]\nlisten = \"127.0.0.1:7717\"\n",
              "bootstrap.listen", 11, "own connection budget");
}

// Issue 19: the metrics listener is off by default, served on loopback
// plainly, and beyond loopback only over TLS or when insecure is said.
TEST(ConfigLoader, TheMetricsListenerIsOffUnlessListenIsSet) {
  Config off = MustLoad(kBase);
  EXPECT_TRUE(off.metrics.listen.empty());
  Config on = MustLoad(std::string(kBase) + "[metrics]\nlisten = \"127.0.0.1:9717\"\nsample_interval = \"2s\"\n");
  EXPECT_EQ(on.metrics.listen, "127.0.0.1:9717");
  EXPECT_EQ(on.metrics.sample_interval, std::chrono::seconds(2));
  EXPECT_EQ(on.metrics.max_connections, 64u);
  Config plain = MustLoad(std::string(kBase) + "[metrics]\nlisten = \"0.0.0.0:9717\"\ninsecure = true\n"
                                               "bearer_token_file = \"/etc/m.token\"\nhosts = [\"dash.example\"]\n");
  EXPECT_TRUE(plain.metrics.insecure);
  EXPECT_EQ(plain.metrics.bearer_token_file, "/etc/m.token");
  EXPECT_EQ(plain.metrics.hosts, std::vector<std::string>{"dash.example"});
  Config tls = MustLoad(std::string(kBase) + "[metrics]\nlisten = \"0.0.0.0:9717\"\n[metrics.tls]\n"
                                             "cert_file = \"/etc/m.crt\"\nkey_file = \"/etc/m.key\"\n"
                                             "client_ca = \"/etc/operators.pem\"\n");
  ASSERT_TRUE(tls.metrics.tls.has_value());
  EXPECT_EQ(tls.metrics.tls->cert_file, "/etc/m.crt");
  EXPECT_EQ(tls.metrics.tls->client_ca, "/etc/operators.pem");
}

// D14: beyond loopback, someone must be asked who they are.
TEST(ConfigLoader, RefusesMetricsBeyondLoopbackThatAsksNobodyWhoTheyAre) {
  ExpectError(std::string(kBase) + "[metrics]\nlisten = \"0.0.0.0:9717\"\n", "metrics.listen", 7,
              "say who may read: [metrics.tls] client_ca");
  ExpectError(std::string(kBase) + "[metrics]\nlisten = \"0.0.0.0:9717\"\ninsecure = true\n", "metrics.listen", 7,
              "say who may read");
  ExpectError(std::string(kBase) + "[metrics]\nlisten = \"0.0.0.0:9717\"\n[metrics.tls]\ncert_file = \"/etc/m.crt\"\n"
                                   "key_file = \"/etc/m.key\"\n",
              "metrics.listen", 7, "say who may read");
}

TEST(ConfigLoader, RefusesPlainMetricsBeyondLoopbackUnlessSaidOnPurpose) {
  ExpectError(std::string(kBase) + "[metrics]\nlisten = \"0.0.0.0:9717\"\nbearer_token_file = \"/etc/t\"\n",
              "metrics.listen", 7, "add [metrics.tls], or insecure = true");
}

TEST(ConfigLoader, RefusesMetricsTLSWithNoCertificateToUse) {
  ExpectError(std::string(kBase) + "[metrics]\nlisten = \"0.0.0.0:9717\"\n[metrics.tls]\n", "metrics.tls", 8,
              "which needs [wire.tls]");
}

TEST(ConfigLoader, RefusesMetricsOnTheWireAddress) {
  ExpectError(std::string(kBase) + "[metrics]\nlisten = \"127.0.0.1:7717\"\n", "metrics.listen", 7,
              "connection budget of their own");
}

TEST(ConfigLoader, RefusesMetricsSettingsWithoutAnAddress) {
  ExpectError(std::string(kBase) + "[metrics]\ninsecure = true\n", "metrics.listen", 6, "is required");
  ExpectError(std::string(kBase) + "[metrics]\nlisten = \"127.0.0.1:9717\"\nsample_interval = \"10m\"\n",
              "metrics.sample_interval", 6, "from 1s to 5m");
}

TEST(ConfigLoader, RefusesACommandTimeoutShorterThanThePollWindow) {
  ExpectError(std::string(kBase) + "[wire]\ncommand_timeout = \"10s\"\n", "wire.command_timeout", 1,
              "at least the poll window (50s)");
}

// Issue 20: replicas need a ledger several processes open, and an address
// nodes can be sent to.
TEST(ConfigLoader, RefusesReplicasOnASqliteLedger) {
  ExpectError(std::string(kBase) + "[ha]\nadvertise = \"10.0.0.1:7717\"\n", "ha", 6, "ledger-postgres");
}

TEST(ConfigLoader, RefusesAReplicaAdvertisingNoAddressNodesCanReach) {
  const std::string postgres =
      "deployment = \"test\"\nstate_dir = \"/var/lib/nodeplane-test\"\n[plugins.ledger]\n"
      "library = \"ledger-postgres\"\nprovides = [\"ledger\"]\n";
  ExpectError(postgres + "[ha]\nadvertise = \"0.0.0.0:7717\"\n", "ha.advertise", 7, "name a host and port");
  ExpectError(postgres + "[ha]\nterm = \"15s\"\n", "ha.advertise", 6, "");
  ExpectError(postgres + "[ha]\nadvertise = \"cp-a:7717\"\nterm = \"100ms\"\n", "ha.term", 6, "between 1s and 10m");
  Config c = MustLoad(postgres + "[ha]\nadvertise = \"cp-a:7717\"\n");
  ASSERT_TRUE(c.ha.has_value());
  EXPECT_EQ(c.ha->advertise, "cp-a:7717");
  EXPECT_EQ(c.ha->term, std::chrono::seconds(15));
}

TEST(ConfigLoader, RefusesAReapIntervalLongerThanTheTTL) {
  ExpectError(std::string(kBase) + "[leases]\nttl = \"30s\"\nreap_interval = \"1m\"\n",
              "leases.reap_interval", 6, "must not exceed leases.ttl (30s)");
}

TEST(ConfigLoader, RefusesAWorldAccessibleAdminSocket) {
  ExpectError(std::string(kBase) + "[admin]\nmode = \"0666\"\n", "admin.mode", 7, "accessible to others");
}

TEST(ConfigLoader, RefusesAnAdminSocketOwnerThatDoesNotExist) {
  ExpectError(std::string(kBase) + "[admin]\nowner = \"no-such-user-np\"\n", "admin.owner", 7,
              "no such user");
}

// R12: site names are keyed exactly as declared; config refuses names with surrounding whitespace.
TEST(ConfigLoader, R12_RefusesASiteNameWithSurroundingWhitespace) {
  ExpectError(std::string(kBase) + "[sites.\" eu-1\"]\n", "sites.\" eu-1\"", 6, "surrounding whitespace");
}

// R12: a tier's site must match a declared site byte for byte; nothing trims it.
TEST(ConfigLoader, R12_RefusesATierSiteThatDiffersByWhitespace) {
  ExpectError(std::string(kBase) +
                  "[sites.eu-1]\n[tiers.t]\nvcpu = 1\nmemory = \"1GiB\"\nproviders = [\"docker\"]\n"
                  "site = \"eu-1 \"\n",
              "tiers.t.site", 11, "matched byte-exactly");
}

TEST(ConfigLoader, R12_SiteNamesAreCaseSensitive) {
  ExpectError(std::string(kBase) +
                  "[sites.eu-1]\n[tiers.t]\nvcpu = 1\nmemory = \"1GiB\"\nproviders = [\"docker\"]\n"
                  "site = \"EU-1\"\n",
              "tiers.t.site", 11, "site \"EU-1\" is not declared");
}

// R11: with no sites declared, a tier cannot be confined to one.
TEST(ConfigLoader, R11_RefusesATierSiteWhenNoSitesAreDeclared) {
  ExpectError(std::string(kBase) + "[tiers.t]\nvcpu = 1\nmemory = \"1GiB\"\nproviders = [\"docker\"]\nsite = \"eu\"\n",
              "tiers.t.site", 10, "declares no sites");
}

TEST(ConfigLoader, RefusesAnUnknownSiteStore) {
  ExpectError(std::string(kBase) + "[sites.eu]\nstore = \"nfs\"\n", "sites.eu.store", 7,
              "expected one of \"ceph\", \"ebs-s3\"");
}

TEST(ConfigLoader, RefusesAnInvalidTierLabel) {
  ExpectError(std::string(kBase) + "[tiers.\"big tier\"]\n", "tiers.\"big tier\"", 6, "invalid name");
}

TEST(ConfigLoader, RefusesATierWithoutVcpuAndMemory) {
  const std::string text = std::string(kBase) + "[tiers.t]\nproviders = [\"docker\"]\n";
  ExpectError(text, "tiers.t.vcpu", 6, "required key is missing");
  ExpectError(text, "tiers.t.memory", 6, "required key is missing");
}

TEST(ConfigLoader, RefusesAnUnknownProvider) {
  ExpectError(std::string(kBase) + "[tiers.t]\nvcpu = 1\nmemory = \"1GiB\"\nproviders = [\"docker\", \"lxd\"]\n",
              "tiers.t.providers", 9, "unknown provider \"lxd\"");
}

TEST(ConfigLoader, RefusesANonStringArrayElement) {
  ExpectError(std::string(kBase) + "[tiers.t]\nvcpu = 1\nmemory = \"1GiB\"\nproviders = [\"docker\", 3]\n",
              "tiers.t.providers[1]", 9, "expected a string, found an integer");
}

TEST(ConfigLoader, RefusesAProcessTierWithoutACommand) {
  ExpectError(std::string(kBase) + "[tiers.t]\nvcpu = 1\nmemory = \"1GiB\"\nproviders = [\"process\"]\n",
              "tiers.t.command", 6, "runs the tier's command");
}

TEST(ConfigLoader, RefusesAnUndeclaredTarget) {
  ExpectError(std::string(kBase) +
                  "[tiers.t]\nvcpu = 1\nmemory = \"1GiB\"\nproviders = [\"docker\"]\ntarget = \"acme\"\n",
              "tiers.t.target", 10, "target \"acme\" is not declared");
}

TEST(ConfigLoader, RefusesARunnerGroupWithoutATarget) {
  ExpectError(std::string(kBase) +
                  "[tiers.t]\nvcpu = 1\nmemory = \"1GiB\"\nproviders = [\"docker\"]\nrunner_group = \"g\"\n",
              "tiers.t.runner_group", 6, "needs a target");
}

TEST(ConfigLoader, RefusesALabelWithASpace) {
  ExpectError(std::string(kBase) +
                  "[tiers.t]\nvcpu = 1\nmemory = \"1GiB\"\nproviders = [\"docker\"]\nlabels = [\"self hosted\"]\n",
              "tiers.t.labels", 10, "without spaces or commas");
}

TEST(ConfigLoader, RefusesReservedAboveMaxConcurrent) {
  ExpectError(std::string(kBase) +
                  "[tiers.t]\nvcpu = 1\nmemory = \"1GiB\"\nproviders = [\"docker\"]\nmax_concurrent = 1\nreserved = 2\n",
              "tiers.t.reserved", 6, "reserves 2 but max_concurrent is 1");
}

TEST(ConfigLoader, RefusesATargetWhoseJITInstanceIsMissing) {
  ExpectError(std::string(kBase) + "[targets.acme]\njit = \"acme-app\"\n", "targets.acme.jit", 7,
              "no plugin instance named \"acme-app\"");
}

TEST(ConfigLoader, RefusesATargetWhoseInstanceIsNotAJITSource) {
  ExpectError(std::string(kBase) + "[targets.acme]\njit = \"ledger\"\n", "targets.acme.jit", 7,
              "does not provide \"jit\"");
}

// R10: one credential-holding source per target; two targets never share an App.
TEST(ConfigLoader, R10_RefusesTwoTargetsSharingOneJITInstance) {
  ExpectError(std::string(kBase) +
                  "[plugins.app]\nlibrary = \"jit-github\"\nprovides = [\"jit\"]\n"
                  "[targets.a]\njit = \"app\"\n[targets.b]\njit = \"app\"\n",
              "targets.b.jit", 12, "already serves target \"a\"");
}

// Issue 18: a tier takes its jobs from its target's scale set, read by the
// target's job source.
constexpr const char* kScaleSetTarget =
    "[plugins.app]\nlibrary = \"jit-github\"\nprovides = [\"jit\", \"jobs\"]\n"
    "[targets.acme]\njit = \"app\"\njobs = \"app\"\n";
constexpr const char* kScaleSetTier =
    "[tiers.large]\nvcpu = 1\nmemory = \"1GiB\"\nproviders = [\"process\"]\ncommand = [\"/bin/true\"]\n"
    "target = \"acme\"\nscale_set = \"np-large\"\n";

TEST(ConfigLoader, ATierTakesItsJobsFromItsTargetsScaleSet) {
  Config c = MustLoad(std::string(kBase) + kScaleSetTarget + kScaleSetTier);
  ASSERT_EQ(c.tiers.size(), 1u);
  EXPECT_EQ(c.tiers[0].scale_set, "np-large");
  EXPECT_EQ(c.targets[0].jobs, "app");
}

TEST(ConfigLoader, RefusesAScaleSetWhoseTargetReadsNoQueue) {
  ExpectError(std::string(kBase) +
                  "[plugins.app]\nlibrary = \"jit-github\"\nprovides = [\"jit\"]\n[targets.acme]\njit = \"app\"\n" +
                  kScaleSetTier,
              "tiers.large.scale_set", 17, "has no job source");
  ExpectError(std::string(kBase) +
                  "[plugins.app]\nlibrary = \"jit-github\"\nprovides = [\"jit\"]\n"
                  "[targets.acme]\njit = \"app\"\njobs = \"app\"\n",
              "targets.acme.jobs", 11, "does not provide \"jobs\"");
}

TEST(ConfigLoader, RefusesAScaleSetWithoutATargetOrWithABadName) {
  ExpectError(std::string(kBase) + "[tiers.t]\nvcpu = 1\nmemory = \"1GiB\"\nproviders = [\"process\"]\n"
                                   "command = [\"/bin/true\"]\nscale_set = \"np\"\n",
              "tiers.t.scale_set", 11, "belongs to a target");
  ExpectError(std::string(kBase) + kScaleSetTarget +
                  "[tiers.t]\nvcpu = 1\nmemory = \"1GiB\"\nproviders = [\"process\"]\ncommand = [\"/bin/true\"]\n"
                  "target = \"acme\"\nscale_set = \"has space\"\n",
              "tiers.t.scale_set", 18, "letters, digits");
}

TEST(ConfigLoader, RefusesAConfigWithoutALedger) {
  ExpectError("deployment = \"d\"\nstate_dir = \"/x\"\n", "plugins", 1, "no plugin instance provides \"ledger\"");
}

TEST(ConfigLoader, RefusesTwoLedgers) {
  ExpectError(std::string(kBase) + "[plugins.other]\nlibrary = \"ledger-postgres\"\nprovides = [\"ledger\"]\n",
              "plugins.other.provides", 6, "a second ledger");
}

TEST(ConfigLoader, RefusesARelativePluginPath) {
  ExpectError(std::string(kBase) + "[plugins.x]\nlibrary = \"lib/x.so\"\nprovides = [\"jit\"]\n",
              "plugins.x.library", 7, "absolute path");
}

TEST(ConfigLoader, RefusesAnUnknownInterface) {
  ExpectError(std::string(kBase) + "[plugins.x]\nlibrary = \"x\"\nprovides = [\"metrics\"]\n",
              "plugins.x.provides", 8, "unknown interface \"metrics\"");
}

TEST(ConfigLoader, RefusesAPluginWithoutProvides) {
  ExpectError(std::string(kBase) + "[plugins.x]\nlibrary = \"x\"\n", "plugins.x.provides", 6,
              "required key is missing");
}

TEST(ConfigLoader, RefusesAPluginConfigThatIsNotATable) {
  ExpectError(std::string(kBase) + "config = \"path=x\"\n", "plugins.ledger.config", 6,
              "expected a table, found a string");
}

TEST(ConfigLoader, RefusesAnUnknownGuestOS) {
  ExpectError(std::string(kBase) + "[nodes.n1]\nguest_os = [\"linux\", \"beos\"]\n", "nodes.n1.guest_os", 7,
              "unknown guest OS \"beos\"");
}

TEST(ConfigLoader, ReportsEveryProblemInOneLoad) {
  LoadResult r = Load(std::string(kBase) + "[wire]\npoll_window = \"x\"\nmax_connections = -1\nbogus = 1\n");
  EXPECT_EQ(r.errors.size(), 3u);
  // Sorted by position.
  ASSERT_GE(r.errors.size(), 3u);
  EXPECT_EQ(r.errors[0].line, 7u);
  EXPECT_EQ(r.errors[1].line, 8u);
  EXPECT_EQ(r.errors[2].line, 9u);
}

TEST(ConfigLoader, ErrorStringNamesFileLineColumnAndKey) {
  LoadResult r = Load(std::string(kBase) + "[wire]\n  poll_windw = \"1s\"\n");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].ToString(),
            "test.toml:7:3: wire.poll_windw: unknown key; did you mean \"poll_window\"?");
}

TEST(ConfigLoader, ReportsAnUnreadableFile) {
  LoadResult r = LoadConfigFile("/nonexistent/nodeplane.toml");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].file, "/nonexistent/nodeplane.toml");
  EXPECT_NE(r.errors[0].message.find("cannot read"), std::string::npos);
}

TEST(ConfigLoader, LoadsAFileAndRemembersItsPath) {
  std::string path = ::testing::TempDir() + "/config_loader_test.toml";
  std::ofstream(path) << kBase;
  LoadResult r = LoadConfigFile(path);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.config->file, path);
}

TEST(ConfigNames, FollowTheNameRule) {
  EXPECT_TRUE(IsValidName("a"));
  EXPECT_TRUE(IsValidName("eu-west-1.a_b"));
  EXPECT_TRUE(IsValidName(std::string(64, 'x')));
  EXPECT_FALSE(IsValidName(""));
  EXPECT_FALSE(IsValidName(std::string(65, 'x')));
  EXPECT_FALSE(IsValidName(".hidden"));
  EXPECT_FALSE(IsValidName("a b"));
  EXPECT_FALSE(IsValidName("a/b"));
  EXPECT_FALSE(IsValidName("é"));
}

TEST(ConfigNames, EditDistance) {
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("poll_windw", "poll_window"), 1u);
}

}  // namespace
}  // namespace nodeplane::config
