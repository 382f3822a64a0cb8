#include "cli/write_files.hpp"

#include <fstream>
#include <iostream>

namespace kevlaya::cli {

bool write_files(const std::filesystem::path& dir, const Files& files, bool force, const char* cmd) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!force) {
    for (const auto& [rel, text] : files) {
      if (fs::exists(dir / rel, ec)) {
        std::cerr << "kevlaya-orch " << cmd << ": " << (dir / rel).string()
                  << " exists; nothing written (--force overwrites)\n";
        return false;
      }
    }
  }
  for (const auto& [rel, text] : files) {
    const auto path = dir / rel;
    fs::create_directories(path.parent_path(), ec);
    std::ofstream out(path, std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      std::cerr << "kevlaya-orch " << cmd << ": cannot write " << path.string() << '\n';
      return false;
    }
    std::cout << "wrote " << path.string() << '\n';
  }
  return true;
}

}  // namespace kevlaya::cli
