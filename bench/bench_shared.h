// Helpers shared by the benchmarks that read the shared workload.
#ifndef GRAMMASK_BENCH_BENCH_SHARED_H_
#define GRAMMASK_BENCH_BENCH_SHARED_H_

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace grammask_bench {

// ../shared, or $GRAMMASK_SHARED_DIR when set.
inline std::string shared_dir() {
  const char* env = std::getenv("GRAMMASK_SHARED_DIR");
  return env && *env ? env : GRAMMASK_SHARED_DIR;
}

// The whole file, or "" when it cannot be read.
inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace grammask_bench

#endif  // GRAMMASK_BENCH_BENCH_SHARED_H_
