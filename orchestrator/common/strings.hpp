// Small string helpers shared across the targets.
#pragma once
#include <string>
#include <vector>

namespace kevlaya {

// `v`'s items with `sep` between them ("" for none).
inline std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

}  // namespace kevlaya
