#include "scenario/Units.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace fabscope::scenario {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

struct NumberAndUnit {
  double number;
  std::string_view unit;
};

NumberAndUnit splitNumber(std::string_view text, const char* what) {
  text = trim(text);
  std::size_t end = 0;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.' ||
                               (end == 0 && (text[end] == '-' || text[end] == '+'))))
    ++end;
  if (end == 0) throw std::invalid_argument(std::string("expected ") + what + ", got '" + std::string(text) + "'");
  double number = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + end, number);
  if (ec != std::errc() || ptr != text.data() + end)
    throw std::invalid_argument(std::string("expected ") + what + ", got '" + std::string(text) + "'");
  return {number, trim(text.substr(end))};
}

}  // namespace

std::int64_t parseMemorySize(std::string_view text) {
  const auto [number, unit] = splitNumber(text, "a memory size such as 512MiB or 8GiB");
  double scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "KiB")
    scale = 1024.0;
  else if (unit == "MiB")
    scale = 1024.0 * 1024;
  else if (unit == "GiB")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "TiB")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else
    throw std::invalid_argument("unknown memory unit '" + std::string(unit) + "'; expected B, KiB, MiB, GiB or TiB");
  const double bytes = number * scale;
  if (!(bytes >= 1 << 20) || bytes > 1e15)
    throw std::invalid_argument("memory size '" + std::string(trim(text)) + "' must be between 1MiB and 1PiB");
  return static_cast<std::int64_t>(bytes);
}

std::int64_t parseSize(std::string_view text) {
  const auto [number, unit] = splitNumber(text, "a size such as 8, 4KiB or 1MiB");
  double scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "KiB" || unit == "K" || unit == "k")
    scale = 1024.0;
  else if (unit == "MiB" || unit == "M")
    scale = 1024.0 * 1024;
  else if (unit == "GiB" || unit == "G")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "kB" || unit == "KB")
    scale = 1e3;
  else if (unit == "MB")
    scale = 1e6;
  else if (unit == "GB")
    scale = 1e9;
  else
    throw std::invalid_argument("unknown size unit '" + std::string(unit) + "' in '" + std::string(trim(text)) +
                                "'; expected B, KiB, MiB, GiB (or kB, MB, GB)");
  const double bytes = number * scale;
  if (bytes <= 0) throw std::invalid_argument("size '" + std::string(trim(text)) + "' must be at least 1 byte");
  if (bytes != std::floor(bytes))
    throw std::invalid_argument("size '" + std::string(trim(text)) + "' is not a whole number of bytes");
  if (bytes > static_cast<double>(maxMessageBytes))
    throw std::invalid_argument("size '" + std::string(trim(text)) + "' is larger than the 1GiB message limit");
  return static_cast<std::int64_t>(bytes);
}

std::vector<std::int64_t> parseSizeList(std::string_view text) {
  text = trim(text);
  const auto dots = text.find("..");
  if (dots == std::string_view::npos) return {parseSize(text)};
  const std::int64_t first = parseSize(text.substr(0, dots));
  std::string_view rest = trim(text.substr(dots + 2));
  double factor = 2;
  const auto x = rest.find_first_of("x*");
  if (x != std::string_view::npos) {
    const auto [f, unit] = splitNumber(rest.substr(x + 1), "a growth factor such as x2 or x4");
    if (!unit.empty() || f < 1.0001 || f != std::floor(f))
      throw std::invalid_argument("range '" + std::string(text) +
                                  "': the factor after 'x' must be a whole number of at least 2");
    factor = f;
    rest = trim(rest.substr(0, x));
  }
  const std::int64_t last = parseSize(rest);
  if (last < first) throw std::invalid_argument("range '" + std::string(text) + "' ends below its start");
  std::vector<std::int64_t> sizes;
  for (double s = static_cast<double>(first); s <= static_cast<double>(last); s *= factor) {
    sizes.push_back(static_cast<std::int64_t>(s));
    if (sizes.size() > 64) throw std::invalid_argument("range '" + std::string(text) + "' has more than 64 sizes");
  }
  return sizes;
}

double parseDurationSeconds(std::string_view text) {
  const auto [number, unit] = splitNumber(text, "a duration such as 500ms, 30s or 2m");
  double scale = 0;
  if (unit.empty() || unit == "s")
    scale = 1;
  else if (unit == "ms")
    scale = 1e-3;
  else if (unit == "us")
    scale = 1e-6;
  else if (unit == "m" || unit == "min")
    scale = 60;
  else if (unit == "h")
    scale = 3600;
  else
    throw std::invalid_argument("unknown duration unit '" + std::string(unit) + "' in '" + std::string(trim(text)) +
                                "'; expected ms, s, m or h");
  const double seconds = number * scale;
  if (!(seconds > 0)) throw std::invalid_argument("duration '" + std::string(trim(text)) + "' must be greater than 0");
  return seconds;
}

std::string formatSize(std::int64_t bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  std::int64_t v = bytes;
  while (u < 3 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  return std::to_string(v) + units[u];
}

}  // namespace fabscope::scenario
