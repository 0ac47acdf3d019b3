#include "config/config.h"

namespace nodeplane::config {

const char* GuestOSName(GuestOS os) {
  switch (os) {
    case GuestOS::kLinux: return "linux";
    case GuestOS::kMacOS: return "macos";
    case GuestOS::kWindows: return "windows";
  }
  return "linux";
}

const char* ProviderName(Provider p) {
  switch (p) {
    case Provider::kProcess: return "process";
    case Provider::kDocker: return "docker";
    case Provider::kFirecracker: return "firecracker";
    case Provider::kTart: return "tart";
    case Provider::kEc2: return "ec2";
    case Provider::kContainer: return "container";
  }
  return "process";
}

const char* InterfaceName(Interface i) {
  switch (i) {
    case Interface::kLedger: return "ledger";
    case Interface::kJit: return "jit";
    case Interface::kRevocation: return "revocation";
    case Interface::kCachePolicy: return "cache_policy";
    case Interface::kJobs: return "jobs";
  }
  return "ledger";
}

bool PluginInstance::Provides(Interface i) const {
  for (Interface p : provides) {
    if (p == i) return true;
  }
  return false;
}

const PluginInstance& Config::LedgerPlugin() const {
  for (const PluginInstance& p : plugins) {
    if (p.Provides(Interface::kLedger)) return p;
  }
  // Unreachable for a validated Config; plugins.front() keeps the contract total.
  return plugins.front();
}

std::string Config::AdminSocketPath() const {
  if (!admin.socket.empty() && admin.socket.front() == '/') return admin.socket;
  return state_dir + "/" + admin.socket;
}

std::string Config::CaDir() const { return wire.tls && !wire.tls->ca_dir.empty() ? wire.tls->ca_dir : state_dir; }

}  // namespace nodeplane::config
