// grammask: the command-line tool bundled with the library.
//
//   grammask check G.gbnf
//   grammask match G.gbnf [INPUT] [--root NAME] [--prefix] [--lines]
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
#include <vector>

#include "grammask/gbnf.h"
#include "grammask/recognizer.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitRejected = 1;
constexpr int kExitUsage = 2;

const char* const kUsage =
    "usage:\n"
    "  grammask check G.gbnf\n"
    "  grammask match G.gbnf [INPUT] [--root NAME] [--prefix] [--lines]\n"
    "\n"
    "check  exit 0 if the grammar is well-formed, else print FILE:LINE:COL: error: ... and exit 1\n"
    "match  exit 0 if the whole INPUT (a file, or stdin) is in the language; exit 1 if not,\n"
    "       printing where the input stopped being a valid prefix (or that it is an\n"
    "       incomplete prefix); exit 2 on usage, I/O or grammar errors\n"
    "  --root NAME  start rule (default: root)\n"
    "  --prefix     also accept an input that is a valid prefix\n"
    "  --lines      each line of INPUT is a separate input; print accept, prefix or reject\n"
    "               per line; exit 0 when all lines were processed\n";

int usage_error(const std::string& message) {
  std::cerr << "grammask: " << message << "\n\n" << kUsage;
  return kExitUsage;
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return data;
}

std::string read_stdin() {
  std::ostringstream out;
  out << std::cin.rdbuf();
  return out.str();
}

struct CommandLine {
  std::vector<std::string> positional;
  std::string root = "root";
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

// Loads and compiles a grammar file; prints FILE:LINE:COL: error: on failure.
std::optional<grammask::Recognizer> load_grammar(const std::string& path, const std::string& root,
                                                 int* exit_code_on_error) {
  auto text = read_file(path);
  if (!text) {
    std::cerr << "grammask: cannot read '" << path << "': " << std::strerror(errno) << "\n";
    *exit_code_on_error = kExitUsage;
    return std::nullopt;
  }
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
  int io_error = kExitRejected;
  if (!load_grammar(cl.positional[0], cl.root, &io_error)) return io_error;
  return kExitOk;
}

enum class Verdict { kAccept, kPrefix, kReject };

struct MatchOutcome {
  Verdict verdict;
  size_t consumed;  // bytes accepted before the first refused byte
};

MatchOutcome match_one(grammask::Recognizer& recognizer, std::string_view input) {
  recognizer.reset();
  const size_t consumed = recognizer.push_bytes(input);
  if (consumed < input.size()) return {Verdict::kReject, consumed};
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

int run_match(int argc, char** argv) {
  CommandLine cl;
  if (std::string err = parse_command_line(argc, argv, cl); !err.empty()) return usage_error(err);
  if (cl.positional.empty() || cl.positional.size() > 2)
    return usage_error("match takes a grammar file and an optional input file");
  int error_exit = kExitUsage;
  auto recognizer = load_grammar(cl.positional[0], cl.root, &error_exit);
  if (!recognizer) return kExitUsage;

  std::string input_name = "<stdin>";
  std::string input;
  if (cl.positional.size() == 2 && cl.positional[1] != "-") {
    input_name = cl.positional[1];
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
  }
  return kExitRejected;
}

}  // namespace

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  if (argc < 2) return usage_error("missing command");
  const std::string command = argv[1];
  if (command == "check") return run_check(argc, argv);
  if (command == "match") return run_match(argc, argv);
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return kExitOk;
  }
  return usage_error("unknown command '" + command + "'");
}
