#include "loader/plugin_library.h"

#include <sys/stat.h>

#include <boost/dll/shared_library.hpp>
#include <cerrno>
#include <mutex>
#include <vector>

namespace nodeplane::loader {
namespace {

// Every library ever opened, kept open for the life of the process: the host
// never unloads a plugin (its descriptors, vtables and threads may outlive
// any one owner).
std::mutex g_libraries_mu;
std::vector<boost::dll::shared_library>* g_libraries = new std::vector<boost::dll::shared_library>();

Status CheckFile(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return Status::NotFound("plugin library " + path + " does not exist; install the plugin's package or fix `library`");
    }
    return Status::Unavailable("cannot stat plugin library " + path + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) return Status::Invalid("plugin library " + path + " is not a regular file");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Status::Refused("plugin library " + path +
                           " is writable by group or others, so anyone in them could run code in the host; "
                           "chmod go-w it");
  }
  return Status::Ok();
}

}  // namespace

std::string ResolveLibraryPath(const std::string& library, const std::string& plugin_dir) {
  if (!library.empty() && library.front() == '/') return library;
  return plugin_dir + "/" + library + ".so";
}

Result<std::shared_ptr<const PluginLibrary>> PluginLibrary::Open(const std::string& library,
                                                                 const std::string& plugin_dir,
                                                                 const np_host_v1* host) {
  auto lib = std::shared_ptr<PluginLibrary>(new PluginLibrary());
  lib->path_ = ResolveLibraryPath(library, plugin_dir);
  const std::string& path = lib->path_;
  if (Status s = CheckFile(path); !s.ok()) return s;

  boost::dll::shared_library so;
  boost::dll::fs::error_code ec;
  so.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
  if (ec) return Status::Invalid("cannot load plugin library " + path + ": " + ec.message());
  if (!so.has(NP_PLUGIN_ENTRY_SYMBOL)) {
    return Status::Invalid(path + " is not a nodeplane plugin: it does not export " NP_PLUGIN_ENTRY_SYMBOL);
  }
  auto entry = so.get<np_code(np_negotiation*, np_error*)>(NP_PLUGIN_ENTRY_SYMBOL);

  char message[512] = {};
  np_error err{sizeof(np_error), NP_OK, 0, sizeof message, message, 0};
  np_negotiation n{};
  n.struct_size = sizeof n;
  n.host_abi_min = kHostAbiMin;
  n.host_abi_max = kHostAbiMax;
  n.host = host;
  np_code rc = entry(&n, &err);
  const std::string offered = std::to_string(kHostAbiMin) + ".." + std::to_string(kHostAbiMax);
  if (rc == NP_UNSUPPORTED) {
    return Status::Refused(path + " supports no plugin ABI this host offers (" + offered + "): " + message +
                           "; install a plugin built for this host");
  }
  if (rc != NP_OK) return Status::Invalid(path + " refused to initialise: " + message);
  if (n.chosen_abi < kHostAbiMin || n.chosen_abi > kHostAbiMax) {
    return Status::Refused(path + " chose plugin ABI " + std::to_string(n.chosen_abi) + ", outside the offered " +
                           offered);
  }
  const np_plugin_desc* d = n.plugin;
  if (d == nullptr || d->struct_size < sizeof(uint32_t) * 2 || d->name == nullptr ||
      (d->n_interfaces > 0 && d->interfaces == nullptr)) {
    return Status::Invalid(path + " returned no valid plugin description");
  }
  lib->abi_ = n.chosen_abi;
  lib->desc_ = d;
  lib->name_ = d->name;
  lib->version_ = d->version != nullptr ? d->version : "";

  std::lock_guard lock(g_libraries_mu);
  g_libraries->push_back(std::move(so));
  return std::shared_ptr<const PluginLibrary>(std::move(lib));
}

Result<const np_interface_desc*> PluginLibrary::Find(const char* interface, uint32_t major) const {
  std::string provided;
  for (uint32_t i = 0; i < desc_->n_interfaces; ++i) {
    const np_interface_desc& d = desc_->interfaces[i];
    if (d.interface == nullptr) continue;
    if (std::strcmp(d.interface, interface) == 0 && d.interface_major == major) return &d;
    if (!provided.empty()) provided += ", ";
    provided += std::string(d.interface) + " v" + std::to_string(d.interface_major);
  }
  return Status::NotFound(path_ + " does not provide " + interface + " v" + std::to_string(major) +
                          " (it provides: " + (provided.empty() ? "nothing" : provided) + ")");
}

}  // namespace nodeplane::loader
