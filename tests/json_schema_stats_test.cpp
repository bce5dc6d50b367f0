// `grammask schema-stats` over the fixture directory tests/data/schema_stats:
// the report's lines and counts, with and without a vocabulary
// (tests/data/schema_stats_tokenizer.json: one token per printable ASCII
// character, a space, three longer tokens and an end-of-text token).
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "tool_run.h"

namespace {

using grammask::testing::run_tool;
using grammask::testing::ToolRun;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The whitespace-separated fields of the table row starting with `name`.
std::vector<std::string> row(const std::string& output, const std::string& name) {
  for (const std::string& line : lines_of(output)) {
    std::istringstream in(line);
    std::vector<std::string> fields;
    for (std::string field; in >> field;) fields.push_back(field);
    if (!fields.empty() && fields[0] == name) return fields;
  }
  return {};
}

bool has_line(const std::string& output, const std::string& line) {
  for (const std::string& l : lines_of(output))
    if (l == line) return true;
  return false;
}

bool has_line_starting(const std::string& output, const std::string& prefix) {
  for (const std::string& l : lines_of(output))
    if (l.compare(0, prefix.size(), prefix) == 0) return true;
  return false;
}

const std::string kFixture = std::string(GRAMMASK_SOURCE_DIR) + "/tests/data/schema_stats";
const std::string kTokenizer =
    std::string(GRAMMASK_SOURCE_DIR) + "/tests/data/schema_stats_tokenizer.json";

TEST(SchemaStats, CountsPerSplit) {
  ToolRun run = run_tool("schema-stats \"" + kFixture + "\"");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(
      has_line(run.output, "files: 6 schemas (5 with test instances), 1 other files skipped"))
      << run.output;
  // split schemas converted conv% passing pass% valid accepted in_order order% invalid
  // rejected p50 p99 max
  const std::vector<std::string> header = {
      "split",    "schemas", "converted", "conv%",    "passing", "pass%",  "valid", "accepted",
      "in_order", "order%",  "invalid",   "rejected", "p50_ms",  "p99_ms", "max_ms"};
  EXPECT_EQ(row(run.output, "split"), header);
  auto counts = [&](const std::string& name) {
    std::vector<std::string> fields = row(run.output, name);
    if (fields.size() != header.size()) return std::vector<std::string>{};
    return std::vector<std::string>(fields.begin() + 1, fields.begin() + 12);
  };
  // Beta: the empty language accepts no valid instance, and Beta_order_3's
  // only valid instance is accepted with its members reordered; a schema
  // without tests counts as in order.
  EXPECT_EQ(counts("Alpha"), (std::vector<std::string>{"2", "1", "50.0%", "0", "0.0%", "3", "2",
                                                       "2", "100.0%", "4", "2"}))
      << run.output;
  EXPECT_EQ(counts("Beta"), (std::vector<std::string>{"4", "4", "100.0%", "3", "75.0%", "4", "3",
                                                      "2", "50.0%", "2", "2"}));
  EXPECT_EQ(counts("total"), (std::vector<std::string>{"6", "5", "83.3%", "3", "50.0%", "7", "5",
                                                       "4", "60.0%", "6", "4"}));
  EXPECT_TRUE(has_line_starting(
      run.output, "conversion time (schema text to grammar IR, thread CPU time), ms: p50 "));
  // A schema that accepts no value converts to an empty language.
  EXPECT_TRUE(
      has_line(run.output, "converted schemas that accept no value (every instance rejected): 1"));
  EXPECT_TRUE(has_line(run.output, "refused: 1 schemas, by keyword:"));
  EXPECT_TRUE(has_line(run.output, "  1  pattern"));
  // {"b":1,"a":2} is accepted as {"a":2,"b":1}, the order the grammar fixes.
  EXPECT_TRUE(
      has_line(run.output, "accepted only with object members reordered: 1 valid, 0 invalid"));
  EXPECT_TRUE(has_line(run.output, "valid instances rejected: 1 (listed with --verbose)"));
  // The deliberately mislabelled instance is listed by file and index.
  EXPECT_TRUE(has_line(run.output, "invalid instances accepted: 1"));
  EXPECT_TRUE(has_line(run.output, "  Alpha---simple.json #3"));
  EXPECT_FALSE(has_line_starting(run.output, "vocabulary:"));
}

// tests/data/schema_stats_nested: a valid instance whose nested object must
// be written in another member order than the one that fits first, which
// only the member after it tells.
TEST(SchemaStats, MemberOrderSearchBacktracksIntoNestedObjects) {
  const std::string fixture = std::string(GRAMMASK_SOURCE_DIR) + "/tests/data/schema_stats_nested";
  ToolRun run = run_tool("schema-stats \"" + fixture + "\" --verbose");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(
      has_line(run.output, "accepted only with object members reordered: 1 valid, 0 invalid"))
      << run.output;
  EXPECT_TRUE(has_line(run.output, "valid instances rejected: 0")) << run.output;
  EXPECT_TRUE(has_line(run.output, "invalid instances accepted: 0")) << run.output;
}

TEST(SchemaStats, VerboseNamesEveryFailure) {
  ToolRun run = run_tool("schema-stats \"" + kFixture + "\" --verbose");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(has_line_starting(
      run.output, "refused Alpha---refused.json: unsupported keyword \"pattern\" at /"))
      << run.output;
  EXPECT_TRUE(has_line(run.output, "valid-rejected Beta_enum_1.json #3: \"w\""));
}

TEST(SchemaStats, ReplayWithVocabulary) {
  ToolRun run = run_tool("schema-stats \"" + kFixture + "\" --vocab \"" + kTokenizer + "\"");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(has_line_starting(run.output, "tokenization: greedy longest match")) << run.output;
  EXPECT_TRUE(
      has_line(run.output, "compiled: 4 of 4 grammars (a failure is counted as a refusal above)"));
  EXPECT_TRUE(has_line_starting(run.output, "compile time (thread CPU time), ms: p50 "));
  // {"a":1} is {" a ": 1 } (5 tokens), {"a":-25,"b":"xy"} 15, "x" and "y" 3
  // each, {"a":2,"b":1} (reordered) 10; one mask per token plus the final
  // one, where the stop token is allowed.
  EXPECT_TRUE(has_line(run.output,
                       "replay: 5 valid instances, 36 tokens, 41 masks (one thread); token "
                       "refused: 0; untokenizable: 0; stop token allowed at the end: 5 of 5"));
  EXPECT_TRUE(has_line_starting(run.output, "mask time (thread CPU time), us: mean "));
  for (const char* field : {" p50 ", " p99 ", " p99.9 ", " max "})
    EXPECT_NE(run.output.find(field), std::string::npos) << field;
}

TEST(SchemaStats, UsageErrors) {
  EXPECT_EQ(run_tool("schema-stats").exit_code, 2);
  EXPECT_EQ(run_tool("schema-stats \"" + kFixture + "\" --bogus").exit_code, 2);
  EXPECT_EQ(run_tool("schema-stats \"" + kFixture + "\" --vocab").exit_code, 2);
  EXPECT_EQ(run_tool("schema-stats /nonexistent/dir").exit_code, 2);
}

}  // namespace
