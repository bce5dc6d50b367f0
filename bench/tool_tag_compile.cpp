// Compile time of a tool-calling structural tag as the number of tools
// grows: the first N function schemas of MaskBench's BFCL split (each file's
// schema is {"properties": {NAME: PARAMETERS}}), wrapped in the Hermes/Qwen
// <tool_call> format as triggered tags (or, with --format, the tag that
// tool_calls_structural_tag writes for that model format, tool_choice auto),
// converted and compiled against a vocabulary. With --any-order, every
// json_schema has "any_order": true (ToolCallOptions::any_order). Prints
// one JSON line per N: the first compile in the process and the median of
// the next runs, in milliseconds.
//
//   tool_tag_compile VOCAB (tokenizer.json | .gguf) [BFCL_DIR] [N...] [--format NAME]
//                    [--any-order]
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "grammask/structural_tag.h"
#include "grammask/tool_calls.h"
#include "grammask/vocabulary.h"

namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  std::string format;
  bool any_order = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--format" && i + 1 < argc) {
      format = argv[++i];
    } else if (std::string(argv[i]) == "--any-order") {
      any_order = true;
    } else {
      args.emplace_back(argv[i]);
    }
  }
  if (args.empty()) {
    std::cerr << "usage: tool_tag_compile VOCAB [BFCL_DIR] [N...] [--format NAME] [--any-order]\n";
    return 2;
  }
  const std::string vocab_path = args[0];
  const bool gguf = vocab_path.size() > 5 && vocab_path.substr(vocab_path.size() - 5) == ".gguf";
  auto vocab = gguf ? grammask::Vocabulary::from_gguf_file(vocab_path)
                    : grammask::Vocabulary::from_tokenizer_json_file(vocab_path);
  if (!vocab.ok()) {
    std::cerr << vocab_path << ": " << vocab.status().to_string() << "\n";
    return 2;
  }
  std::string dir = args.size() > 1 ? args[1] : "";
  if (dir.empty()) {
    const char* shared = std::getenv("GRAMMASK_SHARED_DIR");
    dir = std::string(shared ? shared : "../shared") + "/jsonschemabench/maskbench/data";
  }
  std::vector<size_t> counts;
  for (size_t i = 2; i < args.size(); ++i) counts.push_back(std::stoul(args[i]));
  if (counts.empty()) counts = {1, 10, 100};

  // Tools: (name, parameters) from the BFCL files, in file-name order.
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().rfind("BFCL_", 0) == 0) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::vector<std::pair<std::string, Json>> tools;
  for (const fs::path& file : files) {
    std::ifstream in(file);
    const Json doc = Json::parse(in, nullptr, false);
    if (doc.is_discarded() || !doc.contains("schema")) continue;
    const Json& properties = doc["schema"].value("properties", Json::object());
    if (properties.size() != 1) continue;
    tools.emplace_back(properties.begin().key(), properties.begin().value());
  }

  for (size_t n : counts) {
    if (n > tools.size()) break;
    Json tags = Json::array();
    for (size_t i = 0; i < n; ++i) {
      tags.push_back(
          {{"begin", "<tool_call>\n{\"name\": \"" + tools[i].first + "\", \"arguments\": "},
           {"content",
            {{"type", "json_schema"}, {"json_schema", tools[i].second}, {"any_order", any_order}}},
           {"end", "}\n</tool_call>"}});
    }
    std::string text;
    if (format.empty()) {
      const Json tag = {
          {"type", "structural_tag"},
          {"format", {{"type", "triggered_tags"}, {"triggers", {"<tool_call>"}}, {"tags", tags}}}};
      text = tag.dump();
    } else {
      Json functions = Json::array();
      for (size_t i = 0; i < n; ++i) {
        functions.push_back(
            {{"type", "function"},
             {"function", {{"name", tools[i].first}, {"parameters", tools[i].second}}}});
      }
      grammask::ToolCallOptions tool_options;
      tool_options.any_order = any_order;
      auto tag = grammask::tool_calls_structural_tag(format, functions.dump(), tool_options);
      if (!tag.ok()) {
        std::cerr << format << ": " << tag.status().to_string() << "\n";
        return 1;
      }
      text = *tag;
    }
    std::vector<double> times, converts;
    size_t refused = 0;
    std::string error;
    for (int run = 0; run < 6; ++run) {
      const double convert_start = now_ms();
      grammask::StructuralTagOptions options;
      options.vocabulary = &*vocab;
      (void)grammask::structural_tag_to_grammar(text, options);
      converts.push_back(now_ms() - convert_start);
      const double start = now_ms();
      auto compiled = grammask::compile_structural_tag(text, *vocab);
      times.push_back(now_ms() - start);
      if (!compiled.ok()) {
        ++refused;
        error = compiled.status().to_string();
      }
    }
    const double first = times[0];
    std::vector<double> rest(times.begin() + 1, times.end());
    std::sort(rest.begin(), rest.end());
    std::sort(converts.begin(), converts.end());
    std::printf(
        "{\"tools\": %zu, \"tag_bytes\": %zu, \"convert_median_ms\": %.1f, \"first_ms\": %.1f, "
        "\"median_ms\": %.1f, \"ok\": %s}\n",
        n, text.size(), converts[converts.size() / 2], first, rest[rest.size() / 2],
        refused == 0 ? "true" : "false");
    if (refused) std::fprintf(stderr, "%s\n", error.c_str());
  }
  return 0;
}
