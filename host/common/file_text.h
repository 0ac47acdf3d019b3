// Reading a whole (small) file: certificates, keys, CRLs, passwords.
#pragma once

#include <string>

#include "common/status.h"

namespace nodeplane {

// The file's bytes; Unavailable naming the path when it cannot be read.
Result<std::string> ReadTextFile(const std::string& path);

}  // namespace nodeplane
