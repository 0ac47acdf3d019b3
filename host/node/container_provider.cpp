#include "node/container_provider.h"

#include <fcntl.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cctype>
#include <cstdio>
#include <filesystem>

#include "node/job_sandbox.h"

namespace nodeplane::node {
namespace json = boost::json;
namespace {

constexpr auto kListEvery = std::chrono::seconds(5);  // the safety net under the event stream

std::string UrlEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

const json::object* ObjectAt(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_object() ? &v->as_object() : nullptr;
}

std::string TextAt(const json::object* o, const char* key) {
  const json::value* v = o == nullptr ? nullptr : o->if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

// The log endpoint's frames without a TTY: an 8-byte header (stream, 0, 0,
// 0, big-endian length) before each chunk (container-provider.md §5 Logs).
std::string Demultiplex(const std::string& raw) {
  std::string out;
  size_t at = 0;
  while (at + 8 <= raw.size() && static_cast<unsigned char>(raw[at]) <= 2 && raw[at + 1] == 0) {
    const size_t n = (static_cast<size_t>(static_cast<unsigned char>(raw[at + 4])) << 24) |
                     (static_cast<size_t>(static_cast<unsigned char>(raw[at + 5])) << 16) |
                     (static_cast<size_t>(static_cast<unsigned char>(raw[at + 6])) << 8) |
                     static_cast<size_t>(static_cast<unsigned char>(raw[at + 7]));
    out.append(raw, at + 8, n);
    at += 8 + n;
  }
  if (at < raw.size()) out.append(raw, at);  // not framed (a TTY), or a torn tail
  return out;
}

}  // namespace

ContainerProvider::ContainerProvider(ContainerOptions options)
    : o_(std::move(options)), jobs_dir_(o_.state_dir + "/jobs") {
  std::filesystem::create_directories(jobs_dir_);
}

ContainerProvider::~ContainerProvider() {
  events_.request_stop();
  wake_.notify_all();
}

EngineClient ContainerProvider::Engine() const {
  std::lock_guard lock(mu_);
  return EngineClient(o_.socket, api_version_);
}

std::string ContainerProvider::LabelFilter(const std::string& extra) const {
  json::object f;
  f["label"] = json::array{json::string("nodeplane.deployment=" + o_.deployment), json::string("nodeplane.node=" + o_.node)};
  if (!extra.empty()) f["type"] = json::array{json::string(extra)};
  return UrlEncode(json::serialize(f));
}

Result<std::map<std::string, std::string>> ContainerProvider::List() const {
  auto r = Engine().Call("GET", "/containers/json?all=1&filters=" + LabelFilter(""));
  if (!r.ok()) return r.status();
  if (r->status != 200) return Status::Unavailable("listing containers: " + EngineMessage(*r));
  std::map<std::string, std::string> out;
  boost::system::error_code ec;
  json::value v = json::parse(r->body, ec);
  if (ec || !v.is_array()) return Status::Unavailable("listing containers: an unreadable answer");
  for (const json::value& c : v.as_array()) {
    if (!c.is_object()) continue;
    const std::string lease = TextAt(ObjectAt(c.as_object(), "Labels"), "nodeplane.lease");
    if (!lease.empty()) out[lease] = TextAt(&c.as_object(), "State");
  }
  return out;
}

Recovered ContainerProvider::Recover() {
  Recovered r;
  EngineClient engine(o_.socket);
  auto v = engine.ApiVersion();
  if (!v.ok()) {
    r.status = v.status();
    return r;
  }
  {
    std::lock_guard lock(mu_);
    api_version_ = *v;
  }
  auto listed = List();
  if (!listed.ok()) {
    r.status = listed.status();
    return r;
  }
  {
    std::lock_guard lock(mu_);
    for (const auto& [lease, state] : *listed) {
      running_.insert(lease);
      if (state != "running") died_.insert(lease);  // ended while no agent watched: reaped next
      r.adopted.push_back(lease);
    }
  }
  events_ = std::jthread([this](std::stop_token stop) { WatchEvents(stop); });
  return r;
}

Status ContainerProvider::Start(const LaunchSpec& spec) {
  const protocol::TierShape& t = spec.tier;
  if (t.image.empty()) return Status::Invalid("the tier names no image for the container provider");
  {
    std::lock_guard lock(mu_);
    if (running_.count(spec.lease) != 0) return Status::Ok();  // a redelivered launch: already running
  }
  json::array env;
  for (std::string& e : LeaseVariables(o_.pass_env, spec.lease, spec.request_id, spec.jit_config)) env.emplace_back(e);
  env.emplace_back("RUNNER_MANUALLY_TRAP_SIG=1");  // run.sh passes SIGTERM on (actions/runner run.sh)
  json::object host{{"NetworkMode", t.network.empty() ? "bridge" : t.network},
                    {"NanoCpus", t.vcpu * 1'000'000'000},
                    {"Memory", t.memory},
                    {"MemorySwap", t.memory},
                    {"PidsLimit", t.pids_limit > 0 ? t.pids_limit : 4096}};
  json::object body{{"Image", t.image},
                    {"Env", std::move(env)},
                    {"Labels", json::object{{"nodeplane.deployment", o_.deployment},
                                            {"nodeplane.node", o_.node},
                                            {"nodeplane.lease", spec.lease}}},
                    {"StopTimeout", (t.stop_grace_ms > 0 ? t.stop_grace_ms : 10'000) / 1000},
                    {"HostConfig", std::move(host)}};
  if (!t.command.empty()) {
    json::array cmd;
    for (const std::string& a : t.command) cmd.emplace_back(a);
    body["Cmd"] = std::move(cmd);
  }
  EngineClient engine = Engine();
  auto created = engine.Call("POST", "/containers/create?name=" + Name(spec.lease), json::serialize(body));
  if (!created.ok()) return created.status();
  const std::string why = EngineMessage(*created);
  if (created->status == 404) {
    return Status::Invalid("image \"" + t.image + "\" is not on this node (" + why +
                           "): pull it, or name one the node has; nothing was started");
  }
  // The name is taken: a redelivered launch whose container exists
  // (Docker answers 409, podman 500 "already in use").
  const bool exists = created->status == 409 || why.find("already in use") != std::string::npos;
  if (!exists && created->status != 201) {
    return created->status >= 500 ? Status::Unavailable("the engine could not create the container: " + why)
                                  : Status::Invalid("the engine refused the container: " + why);
  }
  auto started = engine.Call("POST", "/containers/" + Name(spec.lease) + "/start");
  if (!started.ok()) return started.status();
  if (started->status != 204 && started->status != 304) {
    (void)engine.Call("DELETE", "/containers/" + Name(spec.lease) + "?force=1");
    return Status::Invalid("the engine could not start the container from \"" + t.image + "\": " +
                           EngineMessage(*started));
  }
  std::lock_guard lock(mu_);
  running_.insert(spec.lease);
  return Status::Ok();
}

Status ContainerProvider::Stop(const std::string& lease, std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(mu_);
    if (running_.count(lease) == 0) return Status::Ok();
  }
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(grace).count();
  auto r = Engine().Call("POST", "/containers/" + Name(lease) + "/stop?t=" + std::to_string(seconds));
  if (!r.ok()) return r.status();  // the engine is away: the container is still listed, stopped later
  (void)Finish(lease);
  std::lock_guard lock(mu_);
  running_.erase(lease);
  died_.erase(lease);
  return Status::Ok();
}

Exit ContainerProvider::Finish(const std::string& lease) {
  EngineClient engine = Engine();
  Exit e{lease, 0, ""};
  if (auto r = engine.Call("GET", "/containers/" + Name(lease) + "/json"); r.ok() && r->status == 200) {
    boost::system::error_code ec;
    json::value v = json::parse(r->body, ec);
    const json::object* state = !ec && v.is_object() ? ObjectAt(v.as_object(), "State") : nullptr;
    if (state != nullptr) {
      if (const json::value* c = state->if_contains("ExitCode"); c != nullptr && c->is_int64()) {
        e.code = static_cast<int>(c->as_int64());
      }
      if (const json::value* oom = state->if_contains("OOMKilled"); oom != nullptr && oom->is_bool() && oom->as_bool()) {
        e.detail = "killed for using more memory than the tier's";
      }
    }
  } else {
    e.code = 255;
    e.detail = "its container is gone, and with it its exit code";
  }
  if (auto logs = engine.Call("GET", "/containers/" + Name(lease) + "/logs?stdout=1&stderr=1"); logs.ok() && logs->status == 200) {
    const std::string text = Demultiplex(logs->body);
    int fd = ::open((jobs_dir_ + "/" + lease + ".log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
      (void)!::write(fd, text.data(), text.size());
      ::close(fd);
    }
  }
  (void)engine.Call("DELETE", "/containers/" + Name(lease) + "?force=1");
  return e;
}

std::vector<Exit> ContainerProvider::Reap() {
  std::set<std::string> ended;
  bool list_due = false;
  {
    std::lock_guard lock(mu_);
    ended.swap(died_);
    const auto now = std::chrono::steady_clock::now();
    list_due = !running_.empty() && now - listed_at_ >= kListEvery;
    if (list_due) listed_at_ = now;
  }
  if (list_due) {
    if (auto listed = List(); listed.ok()) {
      std::lock_guard lock(mu_);
      for (const std::string& lease : running_) {
        auto it = listed->find(lease);
        if (it == listed->end() || (it->second != "running" && it->second != "created")) ended.insert(lease);
      }
    }
  }
  std::vector<Exit> exits;
  for (const std::string& lease : ended) {
    {
      std::lock_guard lock(mu_);
      if (running_.count(lease) == 0) continue;  // stopped on purpose meanwhile
    }
    exits.push_back(Finish(lease));
    std::lock_guard lock(mu_);
    running_.erase(lease);
  }
  return exits;
}

std::vector<std::string> ContainerProvider::Running() const {
  std::lock_guard lock(mu_);
  return {running_.begin(), running_.end()};
}

void ContainerProvider::WatchEvents(std::stop_token stop) {
  const std::string path = "/events?filters=" + LabelFilter("container");
  while (!stop.stop_requested()) {
    Status s = Engine().Stream(path, [this](const std::string& line) {
      boost::system::error_code ec;
      json::value v = json::parse(line, ec);
      if (ec || !v.is_object()) return;
      // Docker's Action is "die"; podman's compat API says "die" too,
      // though its filter only knows "died" (measured), hence no filter.
      if (TextAt(&v.as_object(), "Action") != "die") return;
      const json::object* actor = ObjectAt(v.as_object(), "Actor");
      const std::string lease = TextAt(actor != nullptr ? ObjectAt(*actor, "Attributes") : nullptr, "nodeplane.lease");
      if (lease.empty()) return;
      std::lock_guard lock(mu_);
      died_.insert(lease);
    }, stop);
    if (stop.stop_requested()) break;
    (void)s;  // the engine went away: the list in Reap covers the gap; ask again shortly
    std::unique_lock lock(mu_);
    wake_.wait_for(lock, stop, std::chrono::seconds(1), [] { return false; });
  }
}

}  // namespace nodeplane::node
