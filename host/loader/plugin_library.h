// Opening a plugin library and negotiating its ABI.
//
// Boost.DLL is the loader only, and stays inside plugin_library.cpp. A
// library is resolved (a short name in the plugin directory, or an absolute
// path), checked (a regular file that neither group nor others may write),
// opened, asked through np_plugin_entry to pick an ABI version from the
// host's range, and its descriptors validated. Libraries are never unloaded:
// a plugin's static descriptors and vtables stay valid for the process.
//
// Every failure is a Status that names the library and says what to do:
// file missing, not a plugin, ABI ranges disjoint, interface not provided,
// required slot missing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>

#include "common/status.h"
#include "nodeplane/np_plugin.h"

namespace nodeplane::loader {

// The ABI versions this host offers.
inline constexpr uint32_t kHostAbiMin = 1;
inline constexpr uint32_t kHostAbiMax = NP_ABI_VERSION;

// "ledger-sqlite" -> "<plugin_dir>/ledger-sqlite.so"; an absolute path is
// kept as it is.
std::string ResolveLibraryPath(const std::string& library, const std::string& plugin_dir);

class PluginLibrary {
 public:
  // Opens and negotiates `library`. `host` must live for the process.
  static Result<std::shared_ptr<const PluginLibrary>> Open(const std::string& library,
                                                           const std::string& plugin_dir,
                                                           const np_host_v1* host);

  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }
  const std::string& version() const { return version_; }
  uint32_t abi() const { return abi_; }

  // The first implementation of `interface` with `major`; NotFound names
  // what the library does provide.
  Result<const np_interface_desc*> Find(const char* interface, uint32_t major) const;

 private:
  std::string path_, name_, version_;
  uint32_t abi_ = 0;
  const np_plugin_desc* desc_ = nullptr;
};

// Copies a plugin's vtable into the host's own type. Only the bytes the
// plugin declared (vtable_size) are copied; later slots stay NULL, which is
// how a plugin built against an older header has its missing optional slots
// treated as absent. `required` lists the offsets of the slots that must be
// present; a missing one is an Invalid status naming it.
struct RequiredSlot {
  size_t offset;
  const char* name;
};

template <typename VT>
Result<VT> CopyVtable(const np_interface_desc& desc, const std::string& library,
                      std::initializer_list<RequiredSlot> required) {
  VT vt{};
  if (desc.vtable == nullptr || desc.vtable_size < sizeof(uint32_t)) {
    return Status::Invalid(library + ": interface " + desc.interface + " has no vtable");
  }
  size_t n = desc.vtable_size < sizeof(VT) ? desc.vtable_size : sizeof(VT);
  std::memcpy(&vt, desc.vtable, n);
  vt.struct_size = static_cast<uint32_t>(n);
  for (const RequiredSlot& slot : required) {
    void* fn = nullptr;
    if (slot.offset + sizeof(fn) <= n) std::memcpy(&fn, reinterpret_cast<const char*>(&vt) + slot.offset, sizeof fn);
    if (fn == nullptr) {
      return Status::Invalid(library + ": interface " + desc.interface + " lacks the required function " +
                             slot.name + "; rebuild the plugin against the current headers");
    }
  }
  return vt;
}

}  // namespace nodeplane::loader
