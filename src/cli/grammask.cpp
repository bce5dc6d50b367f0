// grammask: the command-line tool bundled with the library.
//
//   grammask check G.gbnf
//   grammask match (G.gbnf | --schema S.json | --tag T.json) [INPUT] [--root NAME] [--prefix]
//                  [--lines]
//   grammask match --vocab FILE (G.gbnf | --schema S | --tag T) --tokens (IDS | -) [INPUT] ...
//   grammask schema S.json
//   grammask tag TAG.json [--vocab FILE]
//   grammask mask --vocab FILE (--grammar G | --schema S | --tag T) [--prefix-tokens "ids"]
//   grammask bench (--suite DIR | --vocab FILE (--grammar G | --schema S) --trace T)
//   grammask schema-stats DIR [--vocab FILE] [--lenient] [--verbose]
//   grammask tools --format NAME TOOLS.json [--tool-choice C] [--reasoning] [--no-parallel]
//                  [--any-order]
//
// Exit codes: 0 success / accepted, 1 rejected (or malformed grammar for
// `check`), 2 usage, I/O or grammar errors.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "grammask/bitmask.h"
#include "grammask/gbnf.h"
#include "grammask/json_schema.h"
#include "grammask/matcher.h"
#include "grammask/recognizer.h"
#include "grammask/structural_tag.h"
#include "schema_stats.h"
#include "tool_common.h"

namespace grammask_tool {

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return data;
}

std::map<std::string, std::string>& schema_documents() {
  static std::map<std::string, std::string> documents;
  return documents;
}

std::optional<std::string> load_constraint_gbnf(const std::string& path, Constraint kind,
                                                bool* io_error,
                                                const grammask::Vocabulary* vocabulary) {
  *io_error = false;
  auto text = read_file(path);
  if (!text) {
    std::cerr << "grammask: cannot read '" << path << "': " << std::strerror(errno) << "\n";
    *io_error = true;
    return std::nullopt;
  }
  if (kind == Constraint::kGbnf) return text;
  grammask::JsonSchemaOptions options;
  options.documents = schema_documents();
  grammask::Result<std::string> gbnf = std::string();
  if (kind == Constraint::kSchema) {
    gbnf = grammask::json_schema_to_gbnf(*text, options);
  } else {
    grammask::StructuralTagOptions tag_options;
    tag_options.json_schema = options;
    tag_options.vocabulary = vocabulary;
    std::vector<std::string> warnings;
    gbnf = grammask::structural_tag_to_gbnf(*text, tag_options, &warnings);
    for (const std::string& warning : warnings)
      std::cerr << path << ": warning: " << warning << "\n";
  }
  if (!gbnf.ok()) {
    std::cerr << path << ": " << gbnf.status().to_string() << "\n";
    return std::nullopt;
  }
  return std::move(gbnf).value();
}

grammask::Result<grammask::Vocabulary> load_vocabulary(const std::string& path) {
  const bool gguf = path.size() >= 5 && path.compare(path.size() - 5, 5, ".gguf") == 0;
  return gguf ? grammask::Vocabulary::from_gguf_file(path)
              : grammask::Vocabulary::from_tokenizer_json_file(path);
}

// Loads the vocabulary at `vocab_path` and compiles the grammar or schema at
// `path` for it; prints the error and returns nullopt on failure.
std::optional<grammask::CompiledGrammar> compile_for_vocabulary(const std::string& vocab_path,
                                                                const std::string& path,
                                                                Constraint kind,
                                                                const std::string& root) {
  auto vocab = load_vocabulary(vocab_path);
  if (!vocab.ok()) {
    std::cerr << vocab_path << ": " << vocab.status().to_string() << "\n";
    return std::nullopt;
  }
  bool io_error = false;
  auto gbnf = load_constraint_gbnf(path, kind, &io_error, &*vocab);
  if (!gbnf) return std::nullopt;
  grammask::CompileOptions options;
  options.root = root;
  auto compiled = grammask::CompiledGrammar::from_gbnf(*gbnf, *vocab, options);
  if (!compiled.ok()) {
    std::cerr << path << ":" << compiled.status().to_string() << "\n";
    return std::nullopt;
  }
  return std::move(compiled).value();
}

std::string file_stem(const std::string& path) {
  size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dot = name.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

}  // namespace grammask_tool

namespace {

using namespace grammask_tool;

const char* const kUsage =
    "usage:\n"
    "  grammask check G.gbnf\n"
    "  grammask match (G.gbnf | --schema S.json | --tag T.json) [INPUT] [--root NAME] [--prefix]\n"
    "                 [--lines]\n"
    "  grammask match --vocab FILE (G.gbnf | --schema S.json | --tag T.json) --tokens (IDS | -)\n"
    "                 [INPUT] [--root NAME] [--prefix] [--lines]\n"
    "  grammask schema S.json [--document URI=FILE]...\n"
    "  grammask tag T.json [--vocab FILE]\n"
    "  grammask mask --vocab FILE (--grammar G.gbnf | --schema S.json | --tag T.json)\n"
    "                [--prefix-tokens \"IDS\"]\n"
    "  grammask bench --suite DIR [--runs N]\n"
    "  grammask bench --vocab FILE (--grammar G.gbnf | --schema S.json | --tag T.json)\n"
    "                 --trace T.ids [--runs N] [--batch N [--threads T]]\n"
    "  grammask schema-stats DIR [--vocab FILE] [--lenient] [--verbose]\n"
    "  grammask tools --format NAME TOOLS.json [--tool-choice auto|required|none|NAME]\n"
    "                 [--reasoning] [--no-parallel] [--any-order]\n"
    "  grammask tools --list\n"
    "\n"
    "check  exit 0 if the grammar is well-formed, else print FILE:LINE:COL: error: ... and exit 1\n"
    "match  exit 0 if the whole INPUT (a file, or stdin) is in the language; exit 1 if not,\n"
    "       printing where the input stopped being a valid prefix (or that it is an\n"
    "       incomplete prefix); exit 2 on usage, I/O or grammar errors\n"
    "  --root NAME  start rule (default: root)\n"
    "  --prefix     also accept an input that is a valid prefix\n"
    "  --lines      each line of INPUT is a separate input; print accept, prefix or reject\n"
    "               per line; exit 0 when all lines were processed\n"
    "  --schema S   match against a JSON Schema instead of a grammar\n"
    "  --tag T      match against a structural tag (XGrammar's JSON format)\n"
    "  --tokens IDS match token ids (separated by spaces or commas) against the grammar\n"
    "               compiled for --vocab FILE instead of text; with --tokens - the ids come\n"
    "               from INPUT (with --lines, one id list per line); a refused token is\n"
    "               reported by its index and id; a stop token ends a complete output\n"
    "  --document URI=FILE  (with a schema; repeatable) the document a $ref to URI reads;\n"
    "               nothing is fetched from the network\n"
    "schema prints the GBNF for a JSON Schema (exit 1 with the errors otherwise)\n"
    "tag    prints the GBNF for a structural tag; --vocab resolves token names that GBNF\n"
    "       cannot write as <text> (exit 1 with the errors otherwise)\n"
    "mask   prints the allowed token ids (one line, space-separated) after the given tokens\n"
    "bench  replays token traces and prints one JSON object per (vocab, case); with --batch N,\n"
    "       N sequences together, one fill_masks per step on --threads T (masks per second)\n"
    "schema-stats  converts every schema of a MaskBench-style directory (files with `schema`\n"
    "       and `tests`) and reports conversion, refusals and instance results per split;\n"
    "       with --vocab also compile and mask times from a token-by-token replay\n"
    "tools  prints the structural tag (JSON) of a model's tool-call format for OpenAI-style\n"
    "       tools; --list prints the format names\n";

int usage_error(const std::string& message) {
  std::cerr << "grammask: " << message << "\n\n" << kUsage;
  return kExitUsage;
}

std::string read_stdin() {
  std::ostringstream out;
  out << std::cin.rdbuf();
  return out.str();
}

struct CommandLine {
  std::vector<std::string> positional;
  std::string root = "root";
  std::string schema;
  std::string tag;
  std::string grammar;
  std::string vocab;
  std::string prefix_tokens;
  std::optional<std::string> tokens;  // match --tokens: ids, or "-" for INPUT
  bool prefix = false;
  bool lines = false;
};

// Parses flags shared by the subcommands; returns an error message or "".
std::string parse_command_line(int argc, char** argv, CommandLine& out) {
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--root") {
      if (i + 1 >= argc) return "--root needs a rule name";
      out.root = argv[++i];
    } else if (arg == "--schema" || arg == "--tag" || arg == "--grammar" || arg == "--vocab" ||
               arg == "--prefix-tokens") {
      if (i + 1 >= argc) return arg + " needs a value";
      std::string& slot = arg == "--schema"    ? out.schema
                          : arg == "--tag"     ? out.tag
                          : arg == "--grammar" ? out.grammar
                          : arg == "--vocab"   ? out.vocab
                                               : out.prefix_tokens;
      slot = argv[++i];
    } else if (arg == "--tokens") {
      if (i + 1 >= argc) return "--tokens needs token ids (or - to read them from INPUT)";
      out.tokens = argv[++i];
    } else if (arg == "--document") {
      if (i + 1 >= argc) return "--document needs URI=FILE";
      std::string spec = argv[++i];
      size_t equals = spec.find('=');
      if (equals == std::string::npos || equals == 0) return "--document needs URI=FILE";
      auto text = read_file(spec.substr(equals + 1));
      if (!text) return "cannot read '" + spec.substr(equals + 1) + "'";
      schema_documents()[spec.substr(0, equals)] = std::move(*text);
    } else if (arg == "--prefix") {
      out.prefix = true;
    } else if (arg == "--lines") {
      out.lines = true;
    } else if (arg.size() > 1 && arg[0] == '-' && arg != "-") {
      return "unknown option '" + arg + "'";
    } else {
      out.positional.push_back(arg);
    }
  }
  return "";
}

// The constraint of match: --schema S, --tag T, or else the first
// positional argument (a GBNF file). Empty path: both options were given.
std::pair<Constraint, std::string> match_constraint(const CommandLine& cl) {
  if (!cl.schema.empty() && !cl.tag.empty()) return {Constraint::kGbnf, ""};
  if (!cl.schema.empty()) return {Constraint::kSchema, cl.schema};
  if (!cl.tag.empty()) return {Constraint::kStructuralTag, cl.tag};
  return {Constraint::kGbnf, cl.positional.empty() ? "" : cl.positional[0]};
}

// Loads a grammar (GBNF file, JSON Schema or structural tag) and builds a
// recognizer; prints PATH:LINE:COL: error: on failure.
std::optional<grammask::Recognizer> load_recognizer(const std::string& path, Constraint kind,
                                                    const std::string& root, int* exit_code) {
  bool io_error = false;
  auto text = load_constraint_gbnf(path, kind, &io_error);
  *exit_code = io_error ? kExitUsage : kExitRejected;
  if (!text) return std::nullopt;
  grammask::GbnfOptions options;
  options.root = root;
  auto grammar = grammask::parse_gbnf(*text, options);
  if (!grammar.ok()) {
    std::cerr << path << ":" << grammar.status().to_string() << "\n";
    return std::nullopt;
  }
  auto recognizer = grammask::Recognizer::create(*grammar, root);
  if (!recognizer.ok()) {
    std::cerr << path << ": " << recognizer.status().to_string() << "\n";
    return std::nullopt;
  }
  return std::move(recognizer).value();
}

int run_check(int argc, char** argv) {
  CommandLine cl;
  if (std::string err = parse_command_line(argc, argv, cl); !err.empty()) return usage_error(err);
  if (cl.positional.size() != 1) return usage_error("check takes one grammar file");
  int exit_code = kExitRejected;
  if (!load_recognizer(cl.positional[0], Constraint::kGbnf, cl.root, &exit_code)) return exit_code;
  return kExitOk;
}

// kWorkLimit: a byte was refused for exceeding the per-byte work bound
// (RecognizerOptions::max_work_per_byte), so the input was not decided.
enum class Verdict { kAccept, kPrefix, kReject, kWorkLimit };

struct MatchOutcome {
  Verdict verdict;
  size_t consumed;  // bytes accepted before the first refused byte
};

MatchOutcome match_one(grammask::Recognizer& recognizer, std::string_view input) {
  recognizer.reset();
  const size_t consumed = recognizer.push_bytes(input);
  if (consumed < input.size())
    return {recognizer.work_limit_hit() ? Verdict::kWorkLimit : Verdict::kReject, consumed};
  return {recognizer.is_accepting() ? Verdict::kAccept : Verdict::kPrefix, consumed};
}

// 1-based line and column (in bytes) of `offset` in `text`.
std::pair<size_t, size_t> line_column(std::string_view text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

std::string describe_byte(unsigned char c) {
  char buf[32];
  if (c >= 0x20 && c < 0x7F) {
    std::snprintf(buf, sizeof buf, "'%c' (0x%02X)", c, c);
  } else {
    std::snprintf(buf, sizeof buf, "byte 0x%02X", c);
  }
  return buf;
}

int report_work_limit(const std::string& input_name, std::string_view input, size_t offset) {
  auto [line, column] = line_column(input, offset);
  std::cerr << "grammask: error: " << input_name << ":" << line << ":" << column << ": byte offset "
            << offset
            << ": undecided, the grammar exceeded the per-byte work limit "
               "(RecognizerOptions::max_work_per_byte; the grammar is highly ambiguous)\n";
  return kExitUsage;
}

int run_match_tokens(const CommandLine& cl);

int run_match(int argc, char** argv) {
  CommandLine cl;
  if (std::string err = parse_command_line(argc, argv, cl); !err.empty()) return usage_error(err);
  if (cl.tokens) return run_match_tokens(cl);
  const auto [kind, path] = match_constraint(cl);
  const size_t grammars = kind == Constraint::kGbnf ? 1 : 0;
  if (path.empty() || cl.positional.size() > grammars + 1)
    return usage_error(
        "match takes a grammar file (or --schema S.json, or --tag T.json) and an optional input "
        "file");
  int exit_code = kExitUsage;
  auto recognizer = load_recognizer(path, kind, cl.root, &exit_code);
  if (!recognizer) return kExitUsage;

  std::string input_name = "<stdin>";
  std::string input;
  const std::string input_arg = cl.positional.size() > grammars ? cl.positional.back() : "-";
  if (input_arg != "-") {
    input_name = input_arg;
    auto data = read_file(input_name);
    if (!data) {
      std::cerr << "grammask: cannot read '" << input_name << "': " << std::strerror(errno) << "\n";
      return kExitUsage;
    }
    input = std::move(*data);
  } else {
    input = read_stdin();
  }

  if (cl.lines) {
    size_t start = 0;
    while (start < input.size()) {
      size_t end = input.find('\n', start);
      if (end == std::string::npos) end = input.size();
      MatchOutcome m = match_one(*recognizer, std::string_view(input).substr(start, end - start));
      if (m.verdict == Verdict::kWorkLimit)
        return report_work_limit(input_name, input, start + m.consumed);
      std::cout << (m.verdict == Verdict::kAccept   ? "accept"
                    : m.verdict == Verdict::kPrefix ? "prefix"
                                                    : "reject")
                << "\n";
      start = end + 1;
    }
    return kExitOk;
  }

  MatchOutcome m = match_one(*recognizer, input);
  switch (m.verdict) {
    case Verdict::kAccept:
      std::cout << "accept\n";
      return kExitOk;
    case Verdict::kPrefix:
      std::cout << "prefix: the input is a valid but incomplete prefix (" << input.size()
                << " bytes)\n";
      return cl.prefix ? kExitOk : kExitRejected;
    case Verdict::kReject: {
      auto [line, column] = line_column(input, m.consumed);
      std::cout << "reject: " << input_name << ":" << line << ":" << column << ": byte offset "
                << m.consumed << ": "
                << describe_byte(static_cast<unsigned char>(input[m.consumed]))
                << " is not allowed here\n";
      return kExitRejected;
    }
    case Verdict::kWorkLimit:
      return report_work_limit(input_name, input, m.consumed);
  }
  return kExitRejected;
}

int run_schema(int argc, char** argv) {
  CommandLine cl;
  if (std::string err = parse_command_line(argc, argv, cl); !err.empty()) return usage_error(err);
  if (cl.positional.size() != 1) return usage_error("schema takes one JSON Schema file");
  bool io_error = false;
  auto gbnf = load_constraint_gbnf(cl.positional[0], Constraint::kSchema, &io_error);
  if (!gbnf) return io_error ? kExitUsage : kExitRejected;
  std::cout << *gbnf;
  return kExitOk;
}

int run_tag(int argc, char** argv) {
  CommandLine cl;
  if (std::string err = parse_command_line(argc, argv, cl); !err.empty()) return usage_error(err);
  if (cl.positional.size() != 1) return usage_error("tag takes one structural tag file");
  std::optional<grammask::Vocabulary> vocabulary;
  if (!cl.vocab.empty()) {
    auto loaded = load_vocabulary(cl.vocab);
    if (!loaded.ok()) {
      std::cerr << cl.vocab << ": " << loaded.status().to_string() << "\n";
      return kExitUsage;
    }
    vocabulary = std::move(loaded).value();
  }
  bool io_error = false;
  auto gbnf = load_constraint_gbnf(cl.positional[0], Constraint::kStructuralTag, &io_error,
                                   vocabulary ? &*vocabulary : nullptr);
  if (!gbnf) return io_error ? kExitUsage : kExitRejected;
  std::cout << *gbnf;
  return kExitOk;
}

// Parses "1 2 3" (spaces or commas) into ids; false on anything else.
bool parse_ids(const std::string& text, std::vector<uint32_t>& out) {
  std::string clean = text;
  for (char& c : clean)
    if (c == ',') c = ' ';
  std::istringstream in(clean);
  std::string word;
  while (in >> word) {
    if (word.find_first_not_of("0123456789") != std::string::npos || word.size() > 10) return false;
    unsigned long long v = std::stoull(word);
    if (v > UINT32_MAX) return false;
    out.push_back(static_cast<uint32_t>(v));
  }
  return true;
}

// A token's bytes for a message: printable ASCII as is, '"' and '\' escaped,
// any other byte as \xHH; cut after 40 bytes.
std::string describe_token_bytes(std::string_view bytes) {
  std::string out = "\"";
  for (size_t i = 0; i < bytes.size() && i < 40; ++i) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  out += bytes.size() > 40 ? "\"..." : "\"";
  return out;
}

enum class TokenVerdict { kAccept, kPrefix, kReject, kWorkLimit };

struct TokenOutcome {
  TokenVerdict verdict;
  size_t index = 0;  // kReject, kWorkLimit: the refused token's index
  bool after_stop = false;
};

// Accepts `ids` one by one from a reset matcher. Accepted at the end: the
// output is complete, or a stop token ended it.
TokenOutcome match_token_ids(grammask::Matcher& matcher, const std::vector<uint32_t>& ids) {
  matcher.reset();
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool terminated = matcher.is_terminated();
    grammask::Status s = matcher.accept_token(ids[i]);
    if (s.ok()) continue;
    if (s.code() == grammask::ErrorCode::kLimitExceeded) return {TokenVerdict::kWorkLimit, i};
    return {TokenVerdict::kReject, i, terminated};
  }
  const bool done = matcher.is_terminated() || matcher.is_accepting();
  return {done ? TokenVerdict::kAccept : TokenVerdict::kPrefix, ids.size()};
}

// match --tokens: token ids against the grammar compiled for a vocabulary.
int run_match_tokens(const CommandLine& cl) {
  const auto [kind, path] = match_constraint(cl);
  const bool from_input = *cl.tokens == "-";
  const size_t grammars = kind == Constraint::kGbnf ? 1 : 0;
  if (path.empty() || cl.positional.size() > grammars + (from_input ? 1 : 0))
    return usage_error(
        "match --tokens takes a grammar file (or --schema S.json, or --tag T.json), and an "
        "input file only with --tokens -");
  if (cl.vocab.empty()) return usage_error("match --tokens needs --vocab FILE");

  std::string input_name = "--tokens";  // (named in messages only when not inline)
  std::string ids_text = *cl.tokens;
  if (from_input) {
    const std::string input_arg = cl.positional.size() > grammars ? cl.positional.back() : "-";
    input_name = "<stdin>";
    if (input_arg != "-") {
      input_name = input_arg;
      auto data = read_file(input_name);
      if (!data) {
        std::cerr << "grammask: cannot read '" << input_name << "': " << std::strerror(errno)
                  << "\n";
        return kExitUsage;
      }
      ids_text = std::move(*data);
    } else {
      ids_text = read_stdin();
    }
  }
  // The ids are checked before anything is loaded: a typo fails fast.
  std::vector<std::vector<uint32_t>> lists;
  if (cl.lines) {
    size_t start = 0, line = 1;
    while (start < ids_text.size()) {
      size_t end = ids_text.find('\n', start);
      if (end == std::string::npos) end = ids_text.size();
      lists.emplace_back();
      if (!parse_ids(ids_text.substr(start, end - start), lists.back())) {
        std::cerr << "grammask: " << input_name << ":" << line
                  << ": not a list of token ids (decimal ids separated by spaces or commas)\n";
        return kExitUsage;
      }
      start = end + 1;
      ++line;
    }
  } else {
    lists.emplace_back();
    if (!parse_ids(ids_text, lists.back())) {
      return usage_error((from_input ? input_name : std::string("--tokens")) +
                         ": not a list of token ids (decimal ids separated by spaces or commas)");
    }
  }

  auto compiled = compile_for_vocabulary(cl.vocab, path, kind, cl.root);
  if (!compiled) return kExitUsage;
  const grammask::Vocabulary* vocab = &compiled->vocabulary();
  grammask::Matcher matcher(*compiled);

  auto report_work_limit = [&](size_t list, const TokenOutcome& m) {
    std::cerr << "grammask: error: "
              << (cl.lines ? input_name + ":" + std::to_string(list + 1) + ": " : "")
              << "token index " << m.index << " (id " << lists[list][m.index]
              << "): undecided, the grammar exceeded the per-byte work limit "
                 "(RecognizerOptions::max_work_per_byte; the grammar is highly ambiguous)\n";
    return kExitUsage;
  };

  if (cl.lines) {
    for (size_t i = 0; i < lists.size(); ++i) {
      const TokenOutcome m = match_token_ids(matcher, lists[i]);
      if (m.verdict == TokenVerdict::kWorkLimit) return report_work_limit(i, m);
      std::cout << (m.verdict == TokenVerdict::kAccept   ? "accept"
                    : m.verdict == TokenVerdict::kPrefix ? "prefix"
                                                         : "reject")
                << "\n";
    }
    return kExitOk;
  }

  const std::vector<uint32_t>& ids = lists[0];
  const TokenOutcome m = match_token_ids(matcher, ids);
  switch (m.verdict) {
    case TokenVerdict::kAccept:
      std::cout << "accept\n";
      return kExitOk;
    case TokenVerdict::kPrefix:
      std::cout << "prefix: the tokens are a valid but incomplete prefix (" << ids.size()
                << " tokens)\n";
      return cl.prefix ? kExitOk : kExitRejected;
    case TokenVerdict::kReject: {
      const uint32_t id = ids[m.index];
      std::cout << "reject: " << (from_input ? input_name + ": " : "") << "token index " << m.index
                << ": id " << id;
      if (id >= vocab->size()) {
        std::cout << " is out of range (the vocabulary has " << vocab->size() << " tokens)\n";
      } else {
        std::cout << " " << describe_token_bytes(vocab->token_bytes(id)) << " is not allowed here"
                  << (m.after_stop ? ": a stop token already ended the output" : "") << "\n";
      }
      return kExitRejected;
    }
    case TokenVerdict::kWorkLimit:
      return report_work_limit(0, m);
  }
  return kExitRejected;
}

int run_mask(int argc, char** argv) {
  CommandLine cl;
  if (std::string err = parse_command_line(argc, argv, cl); !err.empty()) return usage_error(err);
  const int given = !cl.grammar.empty() + !cl.schema.empty() + !cl.tag.empty();
  if (cl.vocab.empty() || given != 1 || !cl.positional.empty())
    return usage_error("mask needs --vocab FILE and one of --grammar G, --schema S or --tag T");
  std::vector<uint32_t> prefix;
  if (!parse_ids(cl.prefix_tokens, prefix))
    return usage_error("--prefix-tokens takes space-separated token ids");
  const Constraint kind = !cl.schema.empty() ? Constraint::kSchema
                          : !cl.tag.empty()  ? Constraint::kStructuralTag
                                             : Constraint::kGbnf;
  const std::string& path = !cl.schema.empty() ? cl.schema : !cl.tag.empty() ? cl.tag : cl.grammar;
  auto compiled = compile_for_vocabulary(cl.vocab, path, kind, cl.root);
  if (!compiled) return kExitUsage;
  const grammask::Vocabulary* vocab = &compiled->vocabulary();
  grammask::Matcher matcher(*compiled);
  for (size_t i = 0; i < prefix.size(); ++i) {
    grammask::Status s = matcher.accept_token(prefix[i]);
    if (!s.ok()) {
      std::cerr << "grammask: prefix token #" << i << " (" << prefix[i] << "): " << s.message()
                << "\n";
      return kExitRejected;
    }
  }
  std::vector<uint32_t> words(compiled->mask_words());
  if (grammask::Status s = matcher.fill_mask(words.data(), words.size()); !s.ok()) {
    std::cerr << "grammask: " << s.to_string() << "\n";
    return kExitUsage;
  }
  std::string line;
  for (size_t id = 0; id < vocab->size(); ++id) {
    if (!grammask::test_bit(words.data(), id)) continue;
    if (!line.empty()) line += ' ';
    line += std::to_string(id);
  }
  std::cout << line << "\n";
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  if (argc < 2) return usage_error("missing command");
  const std::string command = argv[1];
  if (command == "check") return run_check(argc, argv);
  if (command == "match") return run_match(argc, argv);
  if (command == "schema") return run_schema(argc, argv);
  if (command == "tag") return run_tag(argc, argv);
  if (command == "mask") return run_mask(argc, argv);
  if (command == "bench") return run_bench(argc, argv);
  if (command == "schema-stats") return run_schema_stats(argc, argv);
  if (command == "tools") return run_tools(argc, argv);
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return kExitOk;
  }
  return usage_error("unknown command '" + command + "'");
}
