#pragma once
// One word for /bin/sh whatever it holds: single quotes, each ' written as '\''.
// For values substituted into commands (a host name must never add shell syntax).
#include <string>

namespace fabscope::runtime {

inline std::string shellQuoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace fabscope::runtime
