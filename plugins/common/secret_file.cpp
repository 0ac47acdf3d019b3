#include "secret_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "plugin_error.h"

namespace nodeplane::plugins {

std::string ReadSecretFile(const std::string& plugin, const std::string& key, const std::string& path,
                           bool allow_group) {
  const std::string where = plugin + ": " + key + " " + path;
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) Fail(NP_INVALID, where + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) Fail(NP_INVALID, where + " is not a regular file");
  const mode_t forbidden = allow_group ? 0007 : 0077;
  if ((st.st_mode & forbidden) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    Fail(NP_INVALID, where + " has mode " + mode + "; it holds a secret, so " +
                         (allow_group ? "chmod o-rwx it" : "chmod 600 it"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail(NP_INVALID, where + ": cannot be read: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace nodeplane::plugins
