// Conformance ratchet over the JSON-Schema-Test-Suite (draft 2020-12 and
// draft 7, tests/*.json and tests/*/optional/format/*.json).
//
// Every case is classified: pass, refused (conversion failed), false-accept
// (the grammar accepts an invalid instance) or false-reject. The committed
// file tests/data/json_schema_suite_expected.txt records each case; the test
// fails when a case that passed stops passing or a new false accept shows
// up. Set GRAMMASK_UPDATE_SUITE_EXPECTED=1 to rewrite the file after an
// improvement.
//
// References to http://localhost:1234/ are served from the suite's remotes/
// directory (JsonSchemaOptions::documents), as the official harness does;
// the metaschemas are not supplied.
//
// Instances are written compactly with keys in file order; numbers keep
// their exact text. The suite checks semantics, not layout, so schemas are
// converted with compact whitespace and any property order. `format` is an
// assertion in optional/format and an annotation elsewhere (the 2020-12
// default).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "grammask/gbnf.h"
#include "grammask/json_schema.h"
#include "grammask/recognizer.h"

namespace grammask {
namespace {

namespace fs = std::filesystem;

// A minimal JSON tree that keeps number text and member order.
struct Value {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = Kind::kNull;
  std::string text;  // number text, decoded string (UTF-8), "true"/"false"
  bool lone_surrogate = false;
  std::string raw;  // the string as written, for strings that cannot be re-encoded
  std::vector<Value> items;
  std::vector<std::pair<std::string, Value>> members;

  const Value* find(const std::string& key) const {
    for (const auto& [k, v] : members)
      if (k == key) return &v;
    return nullptr;
  }
};

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}
  bool parse(Value* out) {
    bool ok = value(out);
    skip();
    return ok && i_ == s_.size();
  }

 private:
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
      ++i_;
  }
  static void utf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  bool hex4(uint32_t* v) {
    if (i_ + 4 > s_.size()) return false;
    *v = static_cast<uint32_t>(std::stoul(s_.substr(i_, 4), nullptr, 16));
    i_ += 4;
    return true;
  }
  bool string(std::string* out, bool* lone, std::string* raw) {
    size_t start = i_;
    ++i_;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      char e = s_[i_++];
      switch (e) {
        case 'n':
          out->push_back('\n');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'u': {
          uint32_t cp;
          if (!hex4(&cp)) return false;
          if (cp >= 0xD800 && cp <= 0xDBFF && s_.compare(i_, 2, "\\u") == 0) {
            size_t save = i_;
            i_ += 2;
            uint32_t low;
            if (hex4(&low) && low >= 0xDC00 && low <= 0xDFFF) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            } else {
              i_ = save;
              *lone = true;
            }
          } else if (cp >= 0xD800 && cp <= 0xDFFF) {
            *lone = true;
          }
          utf8(cp, out);
          break;
        }
        default:
          out->push_back(e);
      }
    }
    if (i_ >= s_.size()) return false;
    ++i_;
    *raw = s_.substr(start, i_ - start);
    return true;
  }
  bool value(Value* out) {
    skip();
    if (i_ >= s_.size()) return false;
    char c = s_[i_];
    if (c == '{') {
      out->kind = Value::Kind::kObject;
      ++i_;
      skip();
      if (s_[i_] == '}') return ++i_, true;
      while (true) {
        skip();
        std::string key, raw;
        bool lone = false;
        if (s_[i_] != '"' || !string(&key, &lone, &raw)) return false;
        skip();
        if (s_[i_++] != ':') return false;
        Value v;
        if (!value(&v)) return false;
        out->members.emplace_back(key, std::move(v));
        skip();
        if (s_[i_] == ',') {
          ++i_;
          continue;
        }
        return s_[i_++] == '}';
      }
    }
    if (c == '[') {
      out->kind = Value::Kind::kArray;
      ++i_;
      skip();
      if (s_[i_] == ']') return ++i_, true;
      while (true) {
        Value v;
        if (!value(&v)) return false;
        out->items.push_back(std::move(v));
        skip();
        if (s_[i_] == ',') {
          ++i_;
          continue;
        }
        return s_[i_++] == ']';
      }
    }
    if (c == '"') {
      out->kind = Value::Kind::kString;
      return string(&out->text, &out->lone_surrogate, &out->raw);
    }
    if (s_.compare(i_, 4, "true") == 0)
      return out->kind = Value::Kind::kBool, out->text = "true", i_ += 4, true;
    if (s_.compare(i_, 5, "false") == 0)
      return out->kind = Value::Kind::kBool, out->text = "false", i_ += 5, true;
    if (s_.compare(i_, 4, "null") == 0) return out->kind = Value::Kind::kNull, i_ += 4, true;
    size_t start = i_;
    while (i_ < s_.size() && std::string("+-0123456789.eE").find(s_[i_]) != std::string::npos) ++i_;
    if (i_ == start) return false;
    out->kind = Value::Kind::kNumber;
    out->text = s_.substr(start, i_ - start);
    return true;
  }
  const std::string& s_;
  size_t i_ = 0;
};

// Compact text, canonical string escapes (as nlohmann::json::dump writes).
void dump(const Value& v, std::string* out) {
  switch (v.kind) {
    case Value::Kind::kNull:
      *out += "null";
      return;
    case Value::Kind::kBool:
    case Value::Kind::kNumber:
      *out += v.text;
      return;
    case Value::Kind::kString: {
      if (v.lone_surrogate) {
        *out += v.raw;
        return;
      }
      *out += '"';
      for (char c : v.text) {
        switch (c) {
          case '"':
            *out += "\\\"";
            break;
          case '\\':
            *out += "\\\\";
            break;
          case '\n':
            *out += "\\n";
            break;
          case '\t':
            *out += "\\t";
            break;
          case '\r':
            *out += "\\r";
            break;
          case '\b':
            *out += "\\b";
            break;
          case '\f':
            *out += "\\f";
            break;
          default:
            if (static_cast<unsigned char>(c) < 0x20) {
              char buffer[8];
              std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned char>(c));
              *out += buffer;
            } else {
              out->push_back(c);
            }
        }
      }
      *out += '"';
      return;
    }
    case Value::Kind::kArray:
      *out += '[';
      for (size_t i = 0; i < v.items.size(); ++i) {
        if (i) *out += ',';
        dump(v.items[i], out);
      }
      *out += ']';
      return;
    case Value::Kind::kObject:
      *out += '{';
      for (size_t i = 0; i < v.members.size(); ++i) {
        if (i) *out += ',';
        Value key;
        key.kind = Value::Kind::kString;
        key.text = v.members[i].first;
        dump(key, out);
        *out += ':';
        dump(v.members[i].second, out);
      }
      *out += '}';
      return;
  }
}

std::string dump(const Value& v) {
  std::string out;
  dump(v, &out);
  return out;
}

enum class Outcome { kPass, kRefused, kFalseAccept, kFalseReject };
const char* name(Outcome outcome) {
  switch (outcome) {
    case Outcome::kPass:
      return "pass";
    case Outcome::kRefused:
      return "refused";
    case Outcome::kFalseAccept:
      return "false-accept";
    case Outcome::kFalseReject:
      return "false-reject";
  }
  return "?";
}

struct Totals {
  int counts[4] = {0, 0, 0, 0};
  void add(Outcome o) { ++counts[static_cast<int>(o)]; }
  int total() const { return counts[0] + counts[1] + counts[2] + counts[3]; }
  std::string line() const {
    std::ostringstream s;
    s << "pass " << counts[0] << ", refused " << counts[1] << ", false-accept " << counts[2]
      << ", false-reject " << counts[3] << " (of " << total() << ")";
    return s.str();
  }
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<fs::path> suite_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  fs::path formats = dir / "optional" / "format";
  if (fs::exists(formats))
    for (const auto& entry : fs::directory_iterator(formats))
      if (entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(JsonSchemaSuiteTest, Ratchet) {
  fs::path root = fs::path(GRAMMASK_SHARED_DIR) / "json-schema-test-suite" / "tests";
  if (std::string(GRAMMASK_SHARED_DIR).empty() || !fs::exists(root))
    GTEST_SKIP() << "JSON-Schema-Test-Suite not found under GRAMMASK_SHARED_DIR";
  fs::path expected_path =
      fs::path(GRAMMASK_SOURCE_DIR) / "tests" / "data" / "json_schema_suite_expected.txt";
  std::map<std::string, std::string> expected;
  {
    std::ifstream in(expected_path);
    std::string key, outcome;
    while (in >> key >> outcome) expected[key] = outcome;
  }
  // The suite's remote documents, as its harness serves them.
  std::map<std::string, std::string> remotes;
  fs::path remotes_dir = root.parent_path() / "remotes";
  if (fs::exists(remotes_dir))
    for (const auto& entry : fs::recursive_directory_iterator(remotes_dir))
      if (entry.is_regular_file() && entry.path().extension() == ".json")
        remotes["http://localhost:1234/" +
                fs::relative(entry.path(), remotes_dir).generic_string()] = read_file(entry.path());
  std::map<std::string, std::string> actual;
  std::map<std::string, int> refusal_reasons;
  std::vector<std::string> regressions, false_accepts;
  std::map<std::string, Totals> totals;
  for (const char* draft : {"draft2020-12", "draft7"}) {
    for (const fs::path& file : suite_files(root / draft)) {
      std::string relative = fs::relative(file, root).generic_string();
      bool format_file = relative.find("/optional/format/") != std::string::npos;
      std::string section = std::string(draft) + (format_file ? " optional/format" : " required");
      Value groups;
      ASSERT_TRUE(Parser(read_file(file)).parse(&groups)) << relative;
      JsonSchemaOptions options;
      options.whitespace = JsonSchemaOptions::Whitespace::kCompact;
      options.property_order = JsonSchemaOptions::PropertyOrder::kAny;
      options.assert_formats = format_file;
      options.documents = remotes;
      options.default_draft = std::string(draft) == "draft7"
                                  ? JsonSchemaOptions::Draft::kDraft7
                                  : JsonSchemaOptions::Draft::kDraft2020_12;
      for (size_t g = 0; g < groups.items.size(); ++g) {
        const Value& group = groups.items[g];
        std::string schema = dump(*group.find("schema"));
        Result<std::string> text = json_schema_to_gbnf(schema, options);
        std::optional<Recognizer> recognizer;
        std::string why;
        if (text.ok()) {
          Result<Grammar> grammar = parse_gbnf(*text);
          if (!grammar.ok()) {
            ADD_FAILURE() << relative << "#" << g
                          << ": emitted GBNF does not parse: " << grammar.status().to_string()
                          << "\n"
                          << *text;
          } else {
            Result<Recognizer> created = Recognizer::create(*grammar, "root");
            if (created.ok())
              recognizer.emplace(std::move(*created));
            else
              why = "recognizer: " + created.status().message();
          }
        } else if (text.status().code() == ErrorCode::kInvalidArgument) {
          // "accepts no value": the converter's answer is that every
          // instance is invalid, which is what we score.
          why = "empty";
        } else {
          why = text.status().message();
        }
        if (!recognizer && why != "empty") {
          const char* verbose = std::getenv("GRAMMASK_SUITE_VERBOSE");
          if (verbose && std::string(verbose) == "1")
            std::printf("REFUSED %s#%zu  %s\n", relative.c_str(), g, why.c_str());
          std::string reason = why.substr(0, why.find(" at "));
          if (reason.find("unsupported keyword") == std::string::npos) reason = why.substr(0, 60);
          if (reason.find("\"format\"") != std::string::npos ||
              reason.find("\"$ref\"") != std::string::npos)
            reason = why.substr(0, 140);
          refusal_reasons[reason] += static_cast<int>(group.find("tests")->items.size());
        }
        const Value& tests = *group.find("tests");
        for (size_t t = 0; t < tests.items.size(); ++t) {
          const Value& test = tests.items[t];
          bool valid = test.find("valid")->text == "true";
          std::string key = relative + "#" + std::to_string(g) + "#" + std::to_string(t);
          Outcome outcome = Outcome::kRefused;
          if (why == "empty") outcome = valid ? Outcome::kFalseReject : Outcome::kPass;
          if (recognizer) {
            std::string instance = dump(*test.find("data"));
            recognizer->reset();
            bool accepted =
                recognizer->push_bytes(instance) == instance.size() && recognizer->is_accepting();
            outcome = accepted == valid
                          ? Outcome::kPass
                          : (accepted ? Outcome::kFalseAccept : Outcome::kFalseReject);
            const char* verbose = std::getenv("GRAMMASK_SUITE_VERBOSE");
            if (outcome == Outcome::kFalseReject && verbose && std::string(verbose) == "1")
              std::printf("FALSE REJECT %s  schema %s  instance %s\n", key.c_str(), schema.c_str(),
                          instance.c_str());
            if (outcome == Outcome::kFalseAccept)
              false_accepts.push_back(key + "  schema " + schema + "  instance " + instance);
          }
          totals[section].add(outcome);
          totals[draft].add(outcome);
          actual[key] = name(outcome);
          auto it = expected.find(key);
          if (it != expected.end()) {
            bool was_pass = it->second == "pass";
            bool new_false_accept =
                outcome == Outcome::kFalseAccept && it->second != "false-accept";
            if ((was_pass && outcome != Outcome::kPass) || new_false_accept)
              regressions.push_back(key + ": expected " + it->second + ", got " + name(outcome) +
                                    "  schema " + schema);
          } else if (outcome == Outcome::kFalseAccept) {
            regressions.push_back(key + ": new case is a false accept");
          }
        }
      }
    }
  }
  for (const auto& [section, t] : totals)
    std::printf("%-32s %s\n", section.c_str(), t.line().c_str());
  std::vector<std::pair<int, std::string>> reasons;
  for (const auto& [reason, count] : refusal_reasons) reasons.emplace_back(count, reason);
  std::sort(reasons.rbegin(), reasons.rend());
  std::printf("refused cases by reason:\n");
  for (size_t i = 0; i < reasons.size() && i < 25; ++i)
    std::printf("  %5d  %s\n", reasons[i].first, reasons[i].second.c_str());
  for (const std::string& line : false_accepts) std::printf("FALSE ACCEPT %s\n", line.c_str());
  const char* update = std::getenv("GRAMMASK_UPDATE_SUITE_EXPECTED");
  if (update && std::string(update) == "1") {
    fs::create_directories(expected_path.parent_path());
    std::ofstream out(expected_path);
    for (const auto& [key, outcome] : actual) out << key << " " << outcome << "\n";
    std::printf("wrote %s\n", expected_path.string().c_str());
    return;
  }
  int improved = 0;
  for (const auto& [key, outcome] : actual) {
    auto it = expected.find(key);
    if (outcome == "pass" && (it == expected.end() || it->second != "pass")) ++improved;
  }
  if (improved > 0)
    std::printf(
        "%d cases pass that the expected file does not record as passing: "
        "rerun with GRAMMASK_UPDATE_SUITE_EXPECTED=1\n",
        improved);
  for (const std::string& regression : regressions) ADD_FAILURE() << "regression: " << regression;
}

}  // namespace
}  // namespace grammask
