// `grammask tools`: the structural tag of a model's tool-call format for an
// OpenAI-style tools file (grammask/tool_calls.h).
//
//   grammask tools --format NAME TOOLS.json [--tool-choice auto|required|none|NAME]
//                  [--reasoning] [--no-parallel] [--any-order]
//   grammask tools --list
#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "grammask/tool_calls.h"
#include "tool_common.h"

namespace grammask_tool {

int run_tools(int argc, char** argv) {
  std::string format;
  std::string path;
  grammask::ToolCallOptions options;
  bool list = false;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--format" || arg == "--tool-choice") {
      if (i + 1 >= argc) {
        std::cerr << "grammask: " << arg << " needs a value\n";
        return kExitUsage;
      }
      (arg == "--format" ? format : options.tool_choice) = argv[++i];
    } else if (arg == "--reasoning") {
      options.reasoning = true;
    } else if (arg == "--no-parallel") {
      options.parallel_tool_calls = false;
    } else if (arg == "--any-order") {
      options.any_order = true;
    } else if (arg == "--list") {
      list = true;
    } else if (arg.size() > 1 && arg[0] == '-') {
      std::cerr << "grammask: unknown option '" << arg << "'\n";
      return kExitUsage;
    } else if (path.empty()) {
      path = arg;
    } else {
      std::cerr << "grammask: tools takes one TOOLS.json\n";
      return kExitUsage;
    }
  }
  if (list) {
    for (const auto& info : grammask::tool_call_formats()) {
      std::cout << info.name << "\t" << info.models << "\n";
    }
    return kExitOk;
  }
  if (format.empty() || path.empty()) {
    std::cerr << "grammask: tools needs --format NAME and TOOLS.json (--list shows the names)\n";
    return kExitUsage;
  }
  auto text = read_file(path);
  if (!text) {
    std::cerr << "grammask: cannot read '" << path << "': " << std::strerror(errno) << "\n";
    return kExitUsage;
  }
  auto tag = grammask::tool_calls_structural_tag(format, *text, options);
  if (!tag.ok()) {
    std::cerr << path << ": " << tag.status().to_string() << "\n";
    return kExitUsage;
  }
  std::cout << nlohmann::ordered_json::parse(*tag).dump(2) << "\n";
  return kExitOk;
}

}  // namespace grammask_tool
