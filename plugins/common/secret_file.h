// Reading a file that holds a secret (a password, a token, a private key):
// refused, with the key that named it, when people other than the service
// could read it. The content is never part of a message.
#pragma once

#include <string>

namespace nodeplane::plugins {

// `key` is the config key that named `path`, for the message. With
// `allow_group` a file the service's group may read (0640) is accepted;
// otherwise only the owner may have any access (0600 or 0400).
std::string ReadSecretFile(const std::string& plugin, const std::string& key, const std::string& path,
                           bool allow_group);

}  // namespace nodeplane::plugins
