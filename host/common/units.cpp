#include "common/units.h"

#include <array>
#include <limits>
#include <utility>

namespace nodeplane {
namespace {

struct Unit {
  std::string_view name;
  uint64_t factor;
};

// Longest names first, so "ms" is not read as "m" followed by garbage.
constexpr std::array<Unit, 5> kDurationUnits{{
    {"ms", 1'000'000ULL},
    {"s", kSecondNs},
    {"m", 60 * kSecondNs},
    {"h", kHourNs},
    {"d", kDayNs},
}};

constexpr std::array<Unit, 9> kSizeUnits{{
    {"KiB", 1ULL << 10},
    {"MiB", 1ULL << 20},
    {"GiB", 1ULL << 30},
    {"TiB", 1ULL << 40},
    {"KB", 1'000ULL},
    {"MB", 1'000'000ULL},
    {"GB", 1'000'000'000ULL},
    {"TB", 1'000'000'000'000ULL},
    {"B", 1ULL},
}};

// Reads leading decimal digits; false when there are none or they overflow.
bool ReadNumber(std::string_view& s, uint64_t& out) {
  size_t i = 0;
  out = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    uint64_t digit = static_cast<uint64_t>(s[i] - '0');
    if (out > (std::numeric_limits<uint64_t>::max() - digit) / 10) return false;
    out = out * 10 + digit;
    ++i;
  }
  if (i == 0) return false;
  s.remove_prefix(i);
  return true;
}

bool MulAdd(uint64_t n, uint64_t factor, uint64_t& acc, uint64_t limit) {
  if (n != 0 && factor > limit / n) return false;
  uint64_t add = n * factor;
  if (acc > limit - add) return false;
  acc += add;
  return true;
}

}  // namespace

Result<Nanos> ParseDuration(std::string_view text) {
  const std::string quoted = "\"" + std::string(text) + "\"";
  if (text.empty()) return Status::Invalid("empty duration; expected e.g. \"50s\", \"10m\"");
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  std::string_view s = text;
  uint64_t total = 0;
  while (!s.empty()) {
    uint64_t n;
    if (!ReadNumber(s, n)) {
      return Status::Invalid("bad duration " + quoted + "; expected <number><unit> with unit ms, s, m, h or d");
    }
    const Unit* unit = nullptr;
    for (const Unit& u : kDurationUnits) {
      if (s.substr(0, u.name.size()) == u.name) {
        unit = &u;
        break;
      }
    }
    if (unit == nullptr) {
      return Status::Invalid("bad duration " + quoted + "; every number needs a unit: ms, s, m, h or d");
    }
    s.remove_prefix(unit->name.size());
    if (!MulAdd(n, unit->factor, total, kMax)) return Status::Invalid("duration " + quoted + " is too large");
  }
  if (total == 0) return Status::Invalid("duration " + quoted + " must be greater than zero");
  return Nanos(static_cast<int64_t>(total));
}

Result<uint64_t> ParseByteSize(std::string_view text) {
  const std::string quoted = "\"" + std::string(text) + "\"";
  std::string_view s = text;
  uint64_t n;
  if (!ReadNumber(s, n)) {
    return Status::Invalid("bad size " + quoted + "; expected <number><unit>, e.g. \"8GiB\" or \"512MiB\"");
  }
  for (const Unit& u : kSizeUnits) {
    if (s == u.name) {
      uint64_t total = 0;
      if (!MulAdd(n, u.factor, total, std::numeric_limits<uint64_t>::max())) {
        return Status::Invalid("size " + quoted + " is too large");
      }
      return total;
    }
  }
  return Status::Invalid("bad size " + quoted +
                         "; the unit must be one of B, KiB, MiB, GiB, TiB, KB, MB, GB, TB");
}

std::string FormatDuration(Nanos d) {
  int64_t ns = d.count();
  if (ns <= 0) return "0s";
  std::string out;
  for (auto it = kDurationUnits.rbegin(); it != kDurationUnits.rend(); ++it) {
    int64_t f = static_cast<int64_t>(it->factor);
    if (ns >= f) {
      out += std::to_string(ns / f);
      out += it->name;
      ns %= f;
    }
  }
  return out;
}

}  // namespace nodeplane
