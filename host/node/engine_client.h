// A client of Docker's Engine API over its unix socket: the same calls drive
// dockerd and `podman system service` (measured in
// docs/reference container-provider.md §6).
//
// The API version is negotiated once, from the unversioned GET /version: the
// engine's ApiVersion, capped at the newest this client was written against
// (kNewestApi) and never below the engine's MinAPIVersion. Docker 29 refuses
// clients below 1.44; bookworm's podman offers at most 1.41, so no pinned
// prefix serves both.
//
// Boost.Beast and Asio stay inside engine_client.cpp. Not thread-safe: one
// client per thread. Each call opens its own connection (a wait or an event
// stream blocks one).
#pragma once

#include <functional>
#include <stop_token>
#include <string>

#include "common/status.h"

namespace nodeplane::node {

struct EngineReply {
  int status = 0;
  std::string body;
};

class EngineClient {
 public:
  static constexpr const char* kNewestApi = "1.47";

  // `api_version`: one negotiated before ("" : negotiate on the first call).
  explicit EngineClient(std::string socket_path, std::string api_version = "")
      : socket_(std::move(socket_path)), version_(std::move(api_version)) {}

  // One call on the negotiated version ("/containers/json" becomes
  // "/v1.41/containers/json"). Unavailable: the engine cannot be reached
  // (its socket is missing or refuses); any HTTP status is a reply.
  Result<EngineReply> Call(const std::string& method, const std::string& path, const std::string& json_body = "");
  // Reads a streaming reply (GET /events) line by line, each handed to
  // `line`, until `stop` is requested or the engine ends it.
  Status Stream(const std::string& path, const std::function<void(const std::string&)>& line, std::stop_token stop);
  // "1.41": negotiated on the first call.
  Result<std::string> ApiVersion();

 private:
  Result<EngineReply> Raw(const std::string& method, const std::string& target, const std::string& body);

  std::string socket_;
  std::string version_;
};

// The engine's message in an error reply ({"message": ...}), or the body.
std::string EngineMessage(const EngineReply& r);
// Compares dotted API versions ("1.41" < "1.47").
bool ApiOlder(const std::string& a, const std::string& b);

}  // namespace nodeplane::node
