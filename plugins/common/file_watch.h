// Noticing that a file was replaced, cheaply enough to ask on every call: a
// stat(2) compared with what was seen at the last load (inode, size,
// modification time to the nanosecond). An atomic replace (write a new file,
// rename it over the old) always changes the inode.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "plugin_time.h"

namespace nodeplane::plugins {

struct FileStamp {
  uint64_t inode = 0;
  int64_t size = -1;
  int64_t mtime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

// The file's stamp now; size -1 when it cannot be read.
inline FileStamp StampOf(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {static_cast<uint64_t>(st.st_ino), static_cast<int64_t>(st.st_size),
          static_cast<int64_t>(st.st_mtim.tv_sec) * kSecondNs + st.st_mtim.tv_nsec};
}

}  // namespace nodeplane::plugins
