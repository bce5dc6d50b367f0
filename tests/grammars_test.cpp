// The grammar library of grammars/: every grammar parses, and the recognizer
// accepts every sample of samples/NAME.accept.txt and rejects every sample of
// samples/NAME.reject.txt (format: grammars/README.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "grammask/gbnf.h"
#include "grammask/recognizer.h"

namespace grammask {
namespace {

const char* const kGrammars[] = {
    "arithmetic", "c-like", "chess", "dash-list", "japanese", "json", "json-array",
};
constexpr size_t kMinSamples = 8;

std::string grammars_dir() {
  return std::string(GRAMMASK_SOURCE_DIR) + "/grammars";
}

bool read_file(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  *out = text.str();
  return true;
}

struct Sample {
  int line = 0;      // 1-based line in the sample file
  std::string text;  // decoded bytes
};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes one sample line; false (with *error set) on a malformed escape.
bool decode_line(const std::string& line, std::string* out, std::string* error) {
  out->clear();
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '\\') {
      out->push_back(line[i]);
      continue;
    }
    if (++i == line.size()) {
      *error = "a '\\' ends the line";
      return false;
    }
    switch (line[i]) {
      case 'n':
        out->push_back('\n');
        break;
      case 't':
        out->push_back('\t');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case '\\':
        out->push_back('\\');
        break;
      case '#':
        out->push_back('#');
        break;
      case 'e':
        break;
      case 'x': {
        const int hi = i + 1 < line.size() ? hex_digit(line[i + 1]) : -1;
        const int lo = i + 2 < line.size() ? hex_digit(line[i + 2]) : -1;
        if (hi < 0 || lo < 0) {
          *error = "\\x needs two hex digits";
          return false;
        }
        out->push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        break;
      }
      default:
        *error = std::string("unknown escape '\\") + line[i] + "'";
        return false;
    }
  }
  return true;
}

// Reads a sample file; a failed assertion names the file and line on error.
void read_samples(const std::string& path, std::vector<Sample>* samples) {
  std::string content;
  ASSERT_TRUE(read_file(path, &content)) << "cannot read " << path;
  std::istringstream lines(content);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    ASSERT_TRUE(line.empty() || line.back() != '\r') << path << ":" << number << ": CR LF line end";
    if (line.empty() || line[0] == '#') continue;
    Sample sample;
    sample.line = number;
    std::string error;
    ASSERT_TRUE(decode_line(line, &sample.text, &error)) << path << ":" << number << ": " << error;
    samples->push_back(std::move(sample));
  }
}

// Shows a sample with its control and non-ASCII bytes escaped.
std::string printable(const std::string& bytes) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : bytes) {
    if (c == '\n') {
      out += "\\n";
    } else if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

class GrammarLibrary : public ::testing::TestWithParam<const char*> {
 protected:
  std::string grammar_path() const { return grammars_dir() + "/" + GetParam() + ".gbnf"; }
  std::string samples_path(const char* kind) const {
    return grammars_dir() + "/samples/" + GetParam() + "." + kind + ".txt";
  }

  // Parses the grammar and creates a recognizer for its root rule.
  void load(std::optional<Recognizer>* recognizer) {
    std::string text;
    ASSERT_TRUE(read_file(grammar_path(), &text)) << "cannot read " << grammar_path();
    auto grammar = parse_gbnf(text);
    ASSERT_TRUE(grammar.ok()) << grammar_path() << ":" << grammar.status().to_string();
    auto created = Recognizer::create(*grammar, "root");
    ASSERT_TRUE(created.ok()) << grammar_path() << ": " << created.status().to_string();
    recognizer->emplace(std::move(created).value());
  }

  // Checks every sample of the file against `accept`.
  void check_samples(const char* kind, bool accept) {
    std::optional<Recognizer> recognizer;
    ASSERT_NO_FATAL_FAILURE(load(&recognizer));
    std::vector<Sample> samples;
    const std::string path = samples_path(kind);
    ASSERT_NO_FATAL_FAILURE(read_samples(path, &samples));
    EXPECT_GE(samples.size(), kMinSamples) << path;
    for (const Sample& sample : samples) {
      recognizer->reset();
      ASSERT_EQ(recognizer->size(), 0u);
      const size_t pushed = recognizer->push_bytes(sample.text);
      const bool accepted = pushed == sample.text.size() && recognizer->is_accepting();
      EXPECT_EQ(accepted, accept) << path << ":" << sample.line << ": \"" << printable(sample.text)
                                  << "\" was " << (accepted ? "accepted" : "rejected") << " ("
                                  << pushed << " of " << sample.text.size()
                                  << " bytes were a valid prefix"
                                  << (pushed == sample.text.size() ? ", incomplete" : "") << ")";
    }
  }
};

TEST_P(GrammarLibrary, Parses) {
  std::optional<Recognizer> recognizer;
  load(&recognizer);
}

TEST_P(GrammarLibrary, AcceptsItsAcceptSamples) {
  check_samples("accept", true);
}

TEST_P(GrammarLibrary, RejectsItsRejectSamples) {
  check_samples("reject", false);
}

std::string test_name(const ::testing::TestParamInfo<const char*>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Grammars, GrammarLibrary, ::testing::ValuesIn(kGrammars), test_name);

// A grammar added to grammars/ is added to kGrammars (and so gets samples).
TEST(GrammarLibraryFiles, EveryGrammarIsChecked) {
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator(grammars_dir())) {
    if (entry.path().extension() == ".gbnf") found.push_back(entry.path().stem().string());
  }
  std::sort(found.begin(), found.end());
  const std::vector<std::string> listed(std::begin(kGrammars), std::end(kGrammars));
  EXPECT_EQ(found, listed);
}

// The sample-file decoder itself.
TEST(SampleFormat, DecodesEscapes) {
  std::string out, error;
  ASSERT_TRUE(decode_line("a\\nb\\t\\r\\\\\\#\\x41\\e", &out, &error)) << error;
  EXPECT_EQ(out, std::string("a\nb\t\r\\#A"));
  ASSERT_TRUE(decode_line("\\e", &out, &error));
  EXPECT_EQ(out, "");
  EXPECT_FALSE(decode_line("\\q", &out, &error));
  EXPECT_FALSE(decode_line("\\x4", &out, &error));
  EXPECT_FALSE(decode_line("tail\\", &out, &error));
}

}  // namespace
}  // namespace grammask
