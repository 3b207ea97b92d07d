#pragma once

#include <sstream>
#include <string>

namespace fabscope::runtime {

// A number as a person writes it in a message: the stream's shortest form
// (0.5, 12, 1e+06), no fixed precision.
inline std::string numberText(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

}  // namespace fabscope::runtime
