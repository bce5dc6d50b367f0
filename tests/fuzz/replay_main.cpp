// main() for the fuzz targets in builds without libFuzzer: runs
// LLVMFuzzerTestOneInput once per input file named on the command line
// (directories are walked recursively, in name order), so that ctest replays
// every seed and regression input with the regular compiler. Arguments that
// start with '-' (libFuzzer flags) are ignored.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

bool read_file(const fs::path& path, std::vector<char>& contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  contents.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') continue;
    const fs::path path(argv[i]);
    std::error_code error;
    if (fs::is_directory(path, error)) {
      for (const auto& entry : fs::recursive_directory_iterator(path, error)) {
        if (entry.is_regular_file()) inputs.push_back(entry.path());
      }
    } else if (fs::is_regular_file(path, error)) {
      inputs.push_back(path);
    } else {
      std::fprintf(stderr, "replay: %s is neither a file nor a directory\n", argv[i]);
      return 1;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: no inputs (usage: %s FILE_OR_DIR...)\n", argv[0]);
    return 1;
  }
  std::sort(inputs.begin(), inputs.end());
  std::vector<char> contents;
  for (const fs::path& path : inputs) {
    if (!read_file(path, contents)) {
      std::fprintf(stderr, "replay: cannot read %s\n", path.string().c_str());
      return 1;
    }
    // An exact-size heap copy, so that a sanitizer build sees reads past the end.
    std::unique_ptr<uint8_t[]> data(new uint8_t[contents.size() + (contents.empty() ? 1 : 0)]);
    if (!contents.empty()) std::memcpy(data.get(), contents.data(), contents.size());
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", path.string().c_str(), contents.size());
    LLVMFuzzerTestOneInput(data.get(), contents.size());
  }
  std::fprintf(stderr, "replay: %zu inputs ran cleanly\n", inputs.size());
  return 0;
}
