/*
 * What the C test plugins share: reading one string value out of their JSON
 * config without a JSON library. Enough for the flat configs tests write;
 * a real plugin parses its config properly.
 */
#ifndef NODEPLANE_TEST_CONFIG_H
#define NODEPLANE_TEST_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Copies the string value that follows "key" and a colon into out; 1 when found. */
static int test_config_string(const char* json, uint64_t len, const char* key, char* out, size_t cap) {
  const char* end = json + len;
  size_t klen = strlen(key);
  const char* p;
  for (p = json; p + klen + 2 <= end; ++p) {
    if (*p == '"' && memcmp(p + 1, key, klen) == 0 && p[klen + 1] == '"') {
      size_t n = 0;
      p += klen + 2;
      while (p < end && (*p == ' ' || *p == ':')) ++p;
      if (p >= end || *p != '"') return 0;
      ++p;
      while (p < end && *p != '"' && n + 1 < cap) out[n++] = *p++;
      out[n] = '\0';
      return 1;
    }
  }
  return 0;
}

#endif
