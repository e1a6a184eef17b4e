// String helpers used across layers.
#pragma once

#include <cstdint>
#include <cstring>  // for memcpy
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tarn {

std::string_view Trim(std::string_view s);
std::vector<std::string> Split(std::string_view s, std::string_view delimiter);
std::string Join(const std::vector<std::string>& parts, std::string_view separator);
std::string ToLower(std::string_view s);
std::string ToUpper(std::string_view s);
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
// Levenshtein distance, ignoring case: how far a misspelled name is from a known one.
size_t EditDistance(std::string_view a, std::string_view b);
// The entry of `known` nearest to `name` by EditDistance (the first on a tie) and
// its distance; {"", SIZE_MAX} when `known` is empty.
template <typename Names>
std::pair<std::string, size_t> ClosestName(std::string_view name, const Names& known) {
  std::pair<std::string, size_t> best{"", static_cast<size_t>(-1)};
  for (const auto& k : known) {
    const size_t distance = EditDistance(name, k);
    if (distance < best.second) best = {std::string(k), distance};
  }
  return best;
}
bool StartsWith(std::string_view s, std::string_view prefix);
bool EndsWith(std::string_view s, std::string_view suffix);

// Parses the whole of `s` (after trimming blanks) as a finite or infinite double.
// Accepts what Java's Double.parseDouble accepts for plain numbers, plus a
// leading '+'. Returns nullopt for anything else (including empty).
std::optional<double> ParseDoubleSlow(std::string_view s);

namespace detail {
// Clinger's fast path: a decimal with at most 15 significant digits and a
// power of ten up to 22 is one exactly rounded multiply or divide. Most
// tabular values qualify; anything else goes to std::from_chars.
inline constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                    1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                    1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

inline bool FastParseDouble(std::string_view s, double* out) {
  const char* p = s.data();
  const char* end = p + s.size();
  bool negative = false;
  if (p < end && (*p == '-' || *p == '+')) negative = *p++ == '-';
  uint64_t mantissa = 0;
  int digits = 0, scale = 0;
  const char* start = p;
  while (p < end && static_cast<unsigned>(*p - '0') < 10) {
    if (digits || *p != '0') ++digits;
    mantissa = mantissa * 10 + static_cast<unsigned>(*p++ - '0');
    if (digits > 15) return false;
  }
  if (p < end && *p == '.') {
    ++p;
    while (p < end && static_cast<unsigned>(*p - '0') < 10) {
      if (digits || *p != '0') ++digits;
      mantissa = mantissa * 10 + static_cast<unsigned>(*p++ - '0');
      ++scale;
      if (digits > 15) return false;
    }
  }
  if (p == start || (p == start + 1 && *start == '.') || p != end || scale > 22) return false;
  double v = static_cast<double>(mantissa);
  if (scale) v /= kPow10[scale];
  *out = negative ? -v : v;
  return true;
}

}  // namespace detail

// Packs a string of at most 8 bytes into *bits so that, for strings of one length, different
// strings give different bits (the key of small lookup tables: codes, short numbers); false for
// a longer string. Reads only the bytes of `s`.
inline bool PackShortString(std::string_view s, uint64_t* bits) {
  const size_t n = s.size();
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  if (n >= 4) {
    if (n > 8) return false;
    uint32_t lo, hi;  // two loads that overlap for n < 8
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + n - 4, 4);
    *bits = lo | (uint64_t{hi} << 32);
  } else if (n > 0) {
    *bits = p[0] | (uint64_t{p[n / 2]} << 8) | (uint64_t{p[n - 1]} << 16);
  } else {
    *bits = 0;
  }
  return true;
}

// Inline so that the common case costs no call in per-field loops.
inline std::optional<double> ParseDouble(std::string_view s) {
  double v;
  if (detail::FastParseDouble(s, &v)) return v;
  return ParseDoubleSlow(s);
}
std::optional<long long> ParseInt(std::string_view s);

// Escapes &, <, >, " and ' for XML and HTML text and attribute values.
std::string EscapeMarkup(std::string_view s);

// "%.6g"-like shortest round-trip formatting of a double.
std::string FormatDouble(double v);
// "1.2 MB", "3.4 GB".
std::string FormatBytes(double bytes);
// "1h02m", "3m05s", "12.3s".
std::string FormatDuration(double seconds);

}  // namespace tarn
