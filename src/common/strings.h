// String helpers used across layers.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tarn {

std::string_view Trim(std::string_view s);
std::vector<std::string> Split(std::string_view s, std::string_view delimiter);
std::string Join(const std::vector<std::string>& parts, std::string_view separator);
std::string ToLower(std::string_view s);
bool EqualsIgnoreCase(std::string_view a, std::string_view b);
bool StartsWith(std::string_view s, std::string_view prefix);
bool EndsWith(std::string_view s, std::string_view suffix);

// Parses the whole of `s` (after trimming blanks) as a finite or infinite double.
// Accepts what Java's Double.parseDouble accepts for plain numbers, plus a
// leading '+'. Returns nullopt for anything else (including empty).
std::optional<double> ParseDouble(std::string_view s);
std::optional<long long> ParseInt(std::string_view s);

// "%.6g"-like shortest round-trip formatting of a double.
std::string FormatDouble(double v);
// "1.2 MB", "3.4 GB".
std::string FormatBytes(double bytes);
// "1h02m", "3m05s", "12.3s".
std::string FormatDuration(double seconds);

}  // namespace tarn
