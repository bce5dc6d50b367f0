// The converter never promises what the compiler refuses: every MaskBench
// schema (../shared/jsonschemabench/maskbench) that converts must compile
// with the default options.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "grammask/json_schema.h"
#include "grammask/matcher.h"

namespace grammask {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(MaskBench, EveryConvertedSchemaCompiles) {
  const std::string shared = GRAMMASK_SHARED_DIR;
  const fs::path data = fs::path(shared) / "jsonschemabench" / "maskbench" / "data";
  if (shared.empty() || !fs::is_directory(data)) GTEST_SKIP() << "no ../shared";
  auto vocabulary = Vocabulary::from_gguf_file(shared + "/bench/vocab/phi3.gguf");
  ASSERT_TRUE(vocabulary.ok()) << vocabulary.status().to_string();
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(data)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GT(files.size(), 1000u);
  // Sanitizer builds (GRAMMASK_TEST_LIGHT=1) take every 16th file.
  const char* light = std::getenv("GRAMMASK_TEST_LIGHT");
  const size_t stride = light != nullptr && std::string(light) == "1" ? 16 : 1;
  size_t converted = 0, compiled = 0;
  std::vector<std::string> failures;
  for (size_t i = 0; i < files.size(); i += stride) {
    const auto file = nlohmann::json::parse(read(files[i]), nullptr, false);
    if (!file.is_object() || !file.contains("schema")) continue;
    auto grammar = json_schema_to_grammar(file["schema"].dump());
    if (!grammar.ok()) continue;  // refused at conversion, with its reason
    ++converted;
    auto result = CompiledGrammar::compile(*grammar, *vocabulary);
    if (result.ok()) {
      ++compiled;
    } else {
      failures.push_back(files[i].filename().string() + ": " + result.status().to_string());
    }
  }
  std::printf("%zu schemas read, %zu converted, %zu compiled\n",
              (files.size() + stride - 1) / stride, converted, compiled);
  EXPECT_GT(converted, files.size() / stride / 2);
  EXPECT_EQ(compiled, converted);
  for (const std::string& failure : failures) ADD_FAILURE() << failure;
}

}  // namespace
}  // namespace grammask
