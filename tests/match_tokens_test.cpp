// `grammask match --tokens`: token ids matched against a grammar compiled for
// a vocabulary, inline, from a file and from stdin, one list or one per line
// (--lines), for a GBNF grammar and a JSON Schema; and `match` without
// --tokens still matching text. Vocabulary: tests/data/schema_stats_tokenizer.json
// (one token per printable ASCII character, a space, the tokens {" (95), ":
// (96) and "a" (97), and the stop token <|end_of_text|> (98)). Grammar:
// tests/data/match_tokens/object.gbnf, root ::= "{" "\"a\"" ":" [0-9]+ "}".
// Token items: token_item.gbnf and negated_item.gbnf. Also `grammask tag`,
// `match --tag`, `mask --tag` (tag.json) and `bench --batch`.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tool_run.h"

namespace {

using grammask::testing::run_tool;
using grammask::testing::ToolRun;

const std::string kData = std::string(GRAMMASK_SOURCE_DIR) + "/tests/data/match_tokens";
const std::string kVocab =
    "--vocab \"" + std::string(GRAMMASK_SOURCE_DIR) + "/tests/data/schema_stats_tokenizer.json\"";
const std::string kGrammar = "\"" + kData + "/object.gbnf\"";
const std::string kSchema = "--schema \"" + kData + "/object.json\"";
const std::string kIds = "\"" + kData + "/ids.txt\"";

// Ids of the vocabulary.
constexpr int kOpenBrace = 90, kCloseBrace = 92, kColon = 25, kA = 64, kOne = 16, kTwo = 17,
              kZero = 15, kBraceQuote = 95, kQuoteColon = 96, kQuotedA = 97, kStop = 98;

std::string ids(std::initializer_list<int> list) {
  std::string out;
  for (int id : list) out += (out.empty() ? "" : " ") + std::to_string(id);
  return out;
}

ToolRun match_tokens(const std::string& ids_text, const std::string& extra = "") {
  return run_tool("match " + kVocab + " " + kGrammar + " --tokens \"" + ids_text + "\" " + extra);
}

TEST(MatchTokens, AcceptsAWholeSentenceInAnyTokenization) {
  ToolRun run = match_tokens(ids({kBraceQuote, kA, kQuoteColon, kOne, kCloseBrace}));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "accept\n");
  run = match_tokens(ids({kOpenBrace, kQuotedA, kColon, kTwo, kZero, kCloseBrace}));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "accept\n");
  // Commas separate ids too.
  run = match_tokens("95,64, 96 ,16,92");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "accept\n");
}

TEST(MatchTokens, StopTokens) {
  // A stop token ends a complete output: still accepted.
  ToolRun run = match_tokens(ids({kBraceQuote, kA, kQuoteColon, kOne, kCloseBrace, kStop}));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "accept\n");
  // Not before the output is complete.
  run = match_tokens(ids({kBraceQuote, kA, kQuoteColon, kOne, kStop}));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_EQ(run.output, "reject: token index 4: id 98 \"<|end_of_text|>\" is not allowed here\n");
  // Nothing but stop tokens after it.
  run = match_tokens(ids({kBraceQuote, kA, kQuoteColon, kOne, kCloseBrace, kStop, kOne}));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_EQ(run.output,
            "reject: token index 6: id 16 \"1\" is not allowed here: a stop token already ended "
            "the output\n");
}

TEST(MatchTokens, IncompletePrefix) {
  ToolRun run = match_tokens(ids({kBraceQuote, kA, kQuoteColon}));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_EQ(run.output, "prefix: the tokens are a valid but incomplete prefix (3 tokens)\n");
  run = match_tokens(ids({kBraceQuote, kA, kQuoteColon}), "--prefix");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  // No ids at all: the empty output, a prefix of this grammar.
  run = match_tokens("");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_EQ(run.output, "prefix: the tokens are a valid but incomplete prefix (0 tokens)\n");
}

TEST(MatchTokens, NamesTheFirstRefusedToken) {
  ToolRun run = match_tokens(ids({kOpenBrace, kCloseBrace, kCloseBrace}));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_EQ(run.output, "reject: token index 1: id 92 \"}\" is not allowed here\n");
  // A token whose bytes run past the grammar: '{"' then '{"'.
  run = match_tokens(ids({kBraceQuote, kBraceQuote}));
  EXPECT_EQ(run.output, "reject: token index 1: id 95 \"{\\\"\" is not allowed here\n");
  run = match_tokens(ids({kOpenBrace, 99}));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_EQ(run.output,
            "reject: token index 1: id 99 is out of range (the vocabulary has 99 tokens)\n");
}

TEST(MatchTokens, IdsFromAFileOrStdin) {
  const std::string one_list = "\"" + kData + "/one_list.txt\"";
  // The whole file is one list; line breaks separate ids like spaces.
  ToolRun run = run_tool("match " + kVocab + " " + kGrammar + " --tokens - " + one_list);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "accept\n");
  run = run_tool("match " + kVocab + " " + kGrammar + " --tokens - < " + one_list);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "accept\n");
  run = run_tool("match " + kVocab + " " + kGrammar + " --tokens - - < " + one_list);
  EXPECT_EQ(run.output, "accept\n");
  // A refused token read from a file names the file.
  run = run_tool("match " + kVocab + " " + kGrammar + " --tokens - " + kIds);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_EQ(run.output,
            "reject: " + kData + "/ids.txt: token index 5: id 90 \"{\" is not allowed here\n");
}

TEST(MatchTokens, OneListPerLine) {
  // ids.txt: two accepted tokenizations (the second ends with the stop
  // token), an incomplete prefix, an empty line, a refused list, and a list
  // with commas.
  const std::string expected = "accept\naccept\nprefix\nprefix\nreject\naccept\n";
  ToolRun run = run_tool("match " + kVocab + " " + kGrammar + " --tokens - --lines " + kIds);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, expected);
  run = run_tool("match --lines " + kVocab + " --tokens - " + kGrammar + " < " + kIds);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, expected);
  // A line that is not a list of ids is an error naming the line.
  run = run_tool("match " + kVocab + " " + kGrammar + " --tokens - --lines \"" + kData +
                 "/bad_ids.txt\"");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find(kData + "/bad_ids.txt:2: not a list of token ids"), std::string::npos)
      << run.output;
}

TEST(MatchTokens, JsonSchema) {
  ToolRun run = run_tool("match " + kVocab + " " + kSchema + " --tokens \"" +
                         ids({kBraceQuote, kA, kQuoteColon, kOne, kTwo, kCloseBrace}) + "\"");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "accept\n");
  run = run_tool("match " + kVocab + " " + kSchema + " --tokens \"" +
                 ids({kBraceQuote, kA, kQuoteColon, kBraceQuote}) + "\"");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_EQ(run.output, "reject: token index 3: id 95 \"{\\\"\" is not allowed here\n");
  run = run_tool("match " + kVocab + " " + kSchema + " --tokens - --lines " + kIds);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "accept\naccept\nprefix\nprefix\nreject\naccept\n");
}

TEST(MatchTokens, UsageErrors) {
  // --tokens needs a vocabulary.
  ToolRun run = run_tool("match " + kGrammar + " --tokens \"1 2\"");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("match --tokens needs --vocab FILE"), std::string::npos) << run.output;
  // Ids are decimal numbers.
  run = match_tokens("95 a");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("not a list of token ids"), std::string::npos) << run.output;
  run = match_tokens("-1");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  run = match_tokens("4294967296");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  // Inline ids and an input file are two inputs.
  run = match_tokens("95", kIds);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  // --tokens needs a value.
  run = run_tool("match " + kVocab + " " + kGrammar + " --tokens");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  // A grammar that does not compile.
  run = run_tool("match " + kVocab + " \"" + kData + "/ids.txt\" --tokens \"1\"");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("ids.txt:1:4: error: expected '::='"), std::string::npos) << run.output;
}

TEST(MatchTokens, TokenItemsMatchById) {
  // token_item.gbnf: root ::= "a" <[5]> "b"; id 5 is "&", 64 "a", 65 "b".
  const std::string item = "\"" + kData + "/token_item.gbnf\"";
  ToolRun run = run_tool("match " + kVocab + " " + item + " --tokens \"64 5 65\"");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "accept\n");
  // Another token in the item's place is refused.
  run = run_tool("match " + kVocab + " " + item + " --tokens \"64 6 65\"");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_EQ(run.output, "reject: token index 1: id 6 \"'\" is not allowed here\n");
  // negated_item.gbnf: root ::= "a" !<[5]> "b": any token but id 5.
  const std::string negated = "\"" + kData + "/negated_item.gbnf\"";
  run = run_tool("match " + kVocab + " " + negated + " --tokens \"64 5 65\"");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_EQ(run.output, "reject: token index 1: id 5 \"&\" is not allowed here\n");
  run = run_tool("match " + kVocab + " " + negated + " --tokens \"64 6 65\"");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "accept\n");
}

TEST(MatchText, WithoutTokensMatchesTextAsBefore) {
  // --vocab is ignored without --tokens: the input is text.
  const std::string text = "\"" + kData + "/object.txt\"";
  ToolRun run = run_tool("match " + kGrammar + " " + text);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "accept\n");
  run = run_tool("match " + kVocab + " " + kGrammar + " " + text);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "accept\n");
  run = run_tool("match " + kGrammar + " " + kIds);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_EQ(run.output,
            "reject: " + kData + "/ids.txt:1:1: byte offset 0: '9' (0x39) is not allowed here\n");
}

}  // namespace

// Structural tags through the tool: tag.json is free text with calls
// {"a":N} triggered by "{"; bad_tag.json asks for a token budget.
const std::string kTag = "\"" + kData + "/tag.json\"";

TEST(TagCommand, PrintsTheGrammarOrTheRefusal) {
  ToolRun run = run_tool("tag " + kTag);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("root ::= "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("TextExcluding(\"{\")"), std::string::npos) << run.output;
  run = run_tool("tag \"" + kData + "/bad_tag.json\"");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("structural tag at /format/elements/0/max_tokens"), std::string::npos)
      << run.output;
  run = run_tool("tag \"" + kData + "/missing.json\"");
  EXPECT_EQ(run.exit_code, 2) << run.output;
}

TEST(TagCommand, MatchAndMaskTakeATag) {
  ToolRun run = run_tool("match --tag " + kTag + " \"" + kData + "/tag_text.txt\"");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "accept\n");
  // {"a":1} as tokens, after free text "a": accepted; a call without digits is not.
  run = run_tool("match " + kVocab + " --tag " + kTag + " --tokens \"" +
                 ids({kA, kBraceQuote, kA, kQuoteColon, kOne, kCloseBrace}) + "\"");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "accept\n");
  run = run_tool("match " + kVocab + " --tag " + kTag + " --tokens \"" +
                 ids({kBraceQuote, kA, kQuoteColon, kCloseBrace}) + "\"");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("reject: token index 3"), std::string::npos) << run.output;
  // After {"a": only digits may come.
  run = run_tool("mask " + kVocab + " --tag " + kTag + " --prefix-tokens \"" +
                 ids({kBraceQuote, kA, kQuoteColon}) + "\"");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "15 16 17 18 19 20 21 22 23 24\n");
}

TEST(BenchCommand, BatchReplaysSequencesTogether) {
  ToolRun run = run_tool("bench " + kVocab + " --grammar " + kGrammar + " --trace \"" + kData +
                         "/trace.txt\" --runs 1 --batch 3 --threads 2");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("\"batch\":3,\"threads\":2"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("\"steps\":6"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("\"masks_per_s\":"), std::string::npos) << run.output;
  run = run_tool("bench " + kVocab + " --grammar " + kGrammar + " --trace \"" + kData +
                 "/trace.txt\" --batch 0");
  EXPECT_EQ(run.exit_code, 2) << run.output;
}
