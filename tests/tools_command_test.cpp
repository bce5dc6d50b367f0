// `grammask tools`: the structural tag of a tool-call format for a tools
// file (tests/data/tools/weather_tools.json: get_weather and get_time),
// --list, and the errors with their exit codes.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

#include "tool_run.h"

namespace {

using grammask::testing::run_tool;
using grammask::testing::ToolRun;

const std::string kTools =
    "\"" + std::string(GRAMMASK_SOURCE_DIR) + "/tests/data/tools/weather_tools.json\"";

TEST(ToolsCommand, PrintsThePrettyStructuralTag) {
  ToolRun run = run_tool("tools --format hermes " + kTools);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output.rfind("{\n  \"type\": \"structural_tag\",\n  \"format\": {\n", 0), 0u)
      << run.output;
  const auto tag = nlohmann::json::parse(run.output);
  EXPECT_EQ(tag["format"]["type"], "triggered_tags");
  EXPECT_EQ(tag["format"]["triggers"], nlohmann::json::array({"<tool_call>"}));
  EXPECT_EQ(tag["format"]["tags"].size(), 2u);
  EXPECT_EQ(tag["format"]["stop_after_first"], false);
}

TEST(ToolsCommand, OptionsReachTheTag) {
  ToolRun run = run_tool("tools " + kTools + " --format hermes --no-parallel --tool-choice auto");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(nlohmann::json::parse(run.output)["format"]["stop_after_first"], true);

  run = run_tool("tools --format hermes " + kTools + " --tool-choice get_time --reasoning");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto tag = nlohmann::json::parse(run.output)["format"];
  ASSERT_EQ(tag["type"], "sequence");
  EXPECT_EQ(tag["elements"][0]["begin"], "<think>");
  EXPECT_EQ(tag["elements"].back()["begin"],
            "<tool_call>\n{\"name\": \"get_time\", \"arguments\": ");

  run = run_tool("tools --format harmony " + kTools + " --tool-choice none");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output.find("get_weather"), std::string::npos);
}

TEST(ToolsCommand, ListsTheFormats) {
  ToolRun run = run_tool("tools --list");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const char* name : {"llama3\t", "llama3-python-tag\t", "hermes\t", "qwen3_coder\t",
                           "mistral\t", "deepseek\t", "harmony\t"}) {
    EXPECT_NE(("\n" + run.output).find(std::string("\n") + name), std::string::npos) << name;
  }
}

TEST(ToolsCommand, ErrorsAndExitCodes) {
  ToolRun run = run_tool("tools --format qwen9 " + kTools);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.output.find("unknown tool-call format \"qwen9\""), std::string::npos) << run.output;
  run = run_tool("tools --format hermes " + kTools + " --tool-choice get_wether");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.output.find("\"get_wether\", which is not among the tools"), std::string::npos)
      << run.output;
  run = run_tool("tools --format hermes /nonexistent/tools.json");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.output.find("cannot read"), std::string::npos) << run.output;
  run = run_tool("tools " + kTools);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.output.find("--format NAME"), std::string::npos) << run.output;
  run = run_tool("tools --format hermes " + kTools + " --parallel");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.output.find("unknown option '--parallel'"), std::string::npos) << run.output;
}

}  // namespace
