// `grammask schema-stats DIR [--vocab FILE] [--lenient] [--verbose]`: how the JSON Schema
// converter fares on real-world schemas laid out like MaskBench
// (../shared/jsonschemabench/maskbench/data: one JSON file per schema with
// `schema` and `tests`, each test `{"valid": bool, "data": instance}`).
//
// Per split (the file name up to "---", or up to the first "_" for names
// without it): schemas, how many convert, how many fully pass (converted,
// every valid instance accepted, every invalid one rejected), the instance
// counts, and conversion times. Then the refusals grouped by keyword, and
// every invalid instance that a converted schema accepted (the target is
// none). With --vocab, every converted schema is also compiled against the
// vocabulary and every accepted valid instance replayed token by token
// through a Matcher: the MaskBench measurement of mask and compile times.
#include "schema_stats.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammask/bitmask.h"
#include "grammask/json_schema.h"
#include "grammask/matcher.h"
#include "grammask/recognizer.h"
#include "tool_common.h"

namespace grammask_tool {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// Times are CPU time of this thread: the machines this runs on are often
// shared, and wall time would count other processes' turns.
struct Clock {
  using time_point = double;  // microseconds
  static time_point now() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
  }
};

double micros_since(Clock::time_point start) {
  return Clock::now() - start;
}

// Nearest-rank percentile of sorted values.
template <typename T>
double percentile(const std::vector<T>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return static_cast<double>(sorted[std::min(sorted.size(), std::max<size_t>(rank, 1)) - 1]);
}

std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string percent(size_t part, size_t whole) {
  return whole == 0 ? "-" : fixed(100.0 * static_cast<double>(part) / whole, 1) + "%";
}

// "Github_easy---o1234.json" -> "Github_easy"; "BFCL_simple_7.json" -> "BFCL".
std::string split_of(const std::string& file_name) {
  size_t dashes = file_name.find("---");
  if (dashes != std::string::npos) return file_name.substr(0, dashes);
  size_t underscore = file_name.find('_');
  if (underscore != std::string::npos && underscore > 0) return file_name.substr(0, underscore);
  return file_stem(file_name);
}

// Refusals grouped by the keyword the converter names ("unsupported
// keyword \"not\" at /a: ..."), limits and malformed keywords apart;
// messages without a keyword by their text with pointers and numbers elided.
std::string refusal_group(const std::string& message) {
  const std::string marker = "keyword \"";
  size_t at = message.find(marker);
  if (at != std::string::npos) {
    size_t start = at + marker.size();
    size_t end = message.find('"', start);
    std::string keyword = message.substr(start, end - start);
    if (message.compare(0, 8, "invalid ") == 0) return keyword + " (invalid)";
    if (message.find("exceeds a limit") != std::string::npos) return keyword + " (limit)";
    return keyword;
  }
  std::string group;
  bool in_pointer = false;
  for (size_t i = 0; i < message.size(); ++i) {
    char c = message[i];
    if (c == '/' && (i == 0 || message[i - 1] == ' ')) in_pointer = true;
    if (in_pointer) {
      if (c != ' ') continue;
      in_pointer = false;
      group += "PTR";
    }
    if (c >= '0' && c <= '9') {
      if (group.empty() || group.back() != 'N') group += 'N';
      continue;
    }
    group += c;
  }
  if (in_pointer) group += "PTR";
  return "(" + group.substr(0, 100) + ")";
}

// Greedy longest match over the bytes of every token that spells text
// (grammask does not implement the tokenizers' BPE merges): tokens sorted
// by their bytes, the candidates for a position narrowed one byte at a time.
class GreedyTokenizer {
 public:
  explicit GreedyTokenizer(const grammask::Vocabulary& vocab) {
    for (uint32_t id = 0; id < vocab.size(); ++id) {
      std::string_view bytes = vocab.token_bytes(id);
      if (bytes.empty() || vocab.is_special(id) || vocab.is_stop(id)) continue;
      tokens_.emplace_back(bytes, id);
    }
    std::sort(tokens_.begin(), tokens_.end());
  }

  // False when some byte starts no token.
  bool tokenize(std::string_view text, std::vector<uint32_t>& out) const {
    out.clear();
    size_t pos = 0;
    while (pos < text.size()) {
      size_t lo = 0, hi = tokens_.size();
      std::optional<uint32_t> best;
      size_t best_length = 0;
      for (size_t k = 0; pos + k < text.size() && lo < hi; ++k) {
        // Candidates share the first k bytes; one equal to them sorts first.
        if (tokens_[lo].first.size() == k) {
          best = tokens_[lo].second;
          best_length = k;
          while (lo < hi && tokens_[lo].first.size() == k) ++lo;
        }
        const char c = text[pos + k];
        auto byte_less = [k](const Entry& e, char v) {
          return static_cast<uint8_t>(e.first[k]) < static_cast<uint8_t>(v);
        };
        auto less_byte = [k](char v, const Entry& e) {
          return static_cast<uint8_t>(v) < static_cast<uint8_t>(e.first[k]);
        };
        lo = static_cast<size_t>(
            std::lower_bound(tokens_.begin() + lo, tokens_.begin() + hi, c, byte_less) -
            tokens_.begin());
        hi = static_cast<size_t>(
            std::upper_bound(tokens_.begin() + lo, tokens_.begin() + hi, c, less_byte) -
            tokens_.begin());
        if (lo < hi && tokens_[lo].first.size() == k + 1) {
          best = tokens_[lo].second;
          best_length = k + 1;
        }
      }
      if (!best) return false;
      out.push_back(*best);
      pos += best_length;
    }
    return true;
  }

 private:
  using Entry = std::pair<std::string_view, uint32_t>;
  std::vector<Entry> tokens_;
};

// Writes an instance as compact JSON into a Recognizer or a Matcher. The
// instance's own text first; if the grammar rejects it, object members are
// placed in the orders the grammar allows: grammars fix the order of
// declared properties (other members may go anywhere), so at each object the
// members are tried in the order of how many of the others may follow them.
// The search backtracks through every choice, nested ones included (a
// member written one way inside an anyOf branch may only fit the rest of the
// instance written another way), and is bounded: past 1 MB written (key
// probes aside) it gives up. Returns whether the grammar accepted a whole
// serialization; `text` is what was written.
class InstanceWriter {
 public:
  explicit InstanceWriter(grammask::Recognizer& recognizer) : recognizer_(&recognizer) {}
  explicit InstanceWriter(grammask::Matcher& matcher) : matcher_(&matcher) {}

  bool write(const Json& value, std::string& text) {
    auto accepting = [&] {
      return recognizer_ ? recognizer_->is_accepting() : matcher_->is_accepting();
    };
    // As written; then reordered, each member chosen among those that fit
    // where it goes, after scoring them there (good where objects are
    // small); then, if that search gave up, with one order per object
    // scored on its first visit (cheap for large objects).
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (attempt == 2 && !gave_up()) break;
      pushed_ = probed_ = 0;
      member_order_.clear();
      rescore_ = attempt == 1;
      text_.clear();
      if (recognizer_) recognizer_->reset();
      if (matcher_) matcher_->reset();
      bool ok = attempt == 0 ? push(value.dump()) && accepting() : value_fits(value, accepting);
      if (ok) {
        text = text_;
        return true;
      }
    }
    text.clear();
    return false;
  }
  // Whether the last write() stopped at the search's bound (its answer
  // then says nothing about the grammar).
  bool gave_up() const { return pushed_ > kSearchBytes; }

 private:
  // The search may write parts again and again; past this many bytes it
  // gives up (the instance counts as rejected).
  static constexpr size_t kSearchBytes = size_t{1} << 20;
  // What must still be written (and accepted) after a value: the search
  // tries the value's writings until `next` succeeds after one of them.
  using Next = std::function<bool()>;

  struct Mark {
    size_t state, text;
  };
  Mark mark() const {
    return {recognizer_ ? recognizer_->size() : matcher_->num_tokens(), text_.size()};
  }
  void rollback(const Mark& m) {
    if (recognizer_)
      recognizer_->truncate(m.state);
    else
      (void)matcher_->rollback(matcher_->num_tokens() - m.state);
    text_.resize(m.text);
  }
  bool push(const std::string& bytes) {
    pushed_ += bytes.size();
    if (pushed_ > kSearchBytes) return false;
    return push_uncounted(bytes);
  }
  // A key probe of member_order(): bounded on its own (an object of n
  // members probes n^2 keys once), not by the search's bound.
  bool probe(const std::string& bytes) {
    constexpr size_t kProbeBytes = size_t{8} << 20;
    probed_ += bytes.size();
    return probed_ <= kProbeBytes && push_uncounted(bytes);
  }
  bool push_uncounted(const std::string& bytes) {
    const Mark before = mark();
    bool ok = recognizer_ ? recognizer_->push_bytes(bytes) == bytes.size()
                          : matcher_->accept_bytes(bytes).ok();
    if (!ok) {
      rollback(before);
      return false;
    }
    text_ += bytes;
    return true;
  }
  // Pushes `bytes`, then runs `next`; on failure leaves nothing written.
  bool push_then(const std::string& bytes, const Next& next) {
    const Mark before = mark();
    if (push(bytes) && next()) return true;
    rollback(before);
    return false;
  }
  static std::string key_text(const std::string& key) { return Json(key).dump() + ":"; }

  // Writes `value` one way after another until `next` succeeds after it.
  bool value_fits(const Json& value, const Next& next) {
    if (value.is_array() || value.is_object()) {
      // As written, when the grammar takes it so.
      if (push_then(value.dump(), next)) return true;
    }
    if (value.is_array()) return push_then("[", [&] { return elements_fit(value, 0, next); });
    if (!value.is_object()) return push_then(value.dump(), next);
    if (rescore_) {
      std::vector<Json::const_iterator> members;
      for (auto it = value.begin(); it != value.end(); ++it) members.push_back(it);
      return push_then("{", [&] { return members_fit(members, true, next); });
    }
    return push_then("{", [&] { return members_fit(member_order(value), true, next); });
  }

  // Elements [i, size) of `array`, then "]", then `next`.
  bool elements_fit(const Json& array, size_t i, const Next& next) {
    if (i == array.size()) return push_then("]", next);
    return push_then(i == 0 ? "" : ",", [&] {
      return value_fits(array[i], [&] { return elements_fit(array, i + 1, next); });
    });
  }

  // Places the remaining members (then "}", then `next`), backtracking on
  // dead ends: with rescore_, those that fit here, scored here; else each in
  // turn in the order given (member_order()'s).
  bool members_fit(const std::vector<Json::const_iterator>& remaining, bool first,
                   const Next& next) {
    if (remaining.empty()) return push_then("}", next);
    auto write_member = [&](size_t k, const Next& after) {
      return push_then(first ? "" : ",", [&] {
        return push_then(key_text(remaining[k].key()),
                         [&] { return value_fits(remaining[k].value(), after); });
      });
    };
    std::vector<size_t> candidates;
    if (rescore_) {
      // The members that fit here, those after which most of the others
      // still fit first (in a grammar of declared order, the earliest
      // declared one lets all the later ones follow).
      const Next nothing = [] { return true; };
      std::vector<size_t> fitting;
      for (size_t k = 0; k < remaining.size(); ++k) {
        const Mark before = mark();
        if (write_member(k, nothing)) fitting.push_back(k);
        rollback(before);
      }
      std::vector<size_t> score(remaining.size(), 0);
      for (size_t k : fitting) {
        const Mark before = mark();
        if (write_member(k, nothing) && push(","))
          for (size_t j : fitting) {
            const Mark probe_mark = mark();
            if (j != k && probe(key_text(remaining[j].key()))) ++score[k];
            rollback(probe_mark);
          }
        rollback(before);
      }
      candidates = fitting;
      std::stable_sort(candidates.begin(), candidates.end(),
                       [&](size_t a, size_t b) { return score[a] > score[b]; });
    } else {
      for (size_t k = 0; k < remaining.size(); ++k) candidates.push_back(k);
    }
    for (size_t k : candidates) {
      std::vector<Json::const_iterator> rest = remaining;
      rest.erase(rest.begin() + static_cast<long>(k));
      if (write_member(k, [&] { return members_fit(rest, false, next); })) return true;
    }
    return false;
  }

  // The members of `object` in the order to try them, computed on its first
  // visit (right after its "{"): by how many of the others' keys may follow
  // each one (in a grammar of declared order, the earliest declared member
  // lets all the later ones follow), ties in the instance's order.
  const std::vector<Json::const_iterator>& member_order(const Json& object) {
    auto known = member_order_.find(&object);
    if (known != member_order_.end()) return known->second;
    std::vector<Json::const_iterator> members;
    for (auto it = object.begin(); it != object.end(); ++it) members.push_back(it);
    std::vector<size_t> score(members.size(), 0);
    for (size_t k = 0; k < members.size(); ++k) {
      const Mark before = mark();
      if (push(key_text(members[k].key())) && value_fits(members[k].value(), [] { return true; }) &&
          push(",")) {
        for (size_t j = 0; j < members.size(); ++j) {
          if (j == k) continue;
          const Mark probe_mark = mark();
          if (probe(key_text(members[j].key()))) ++score[k];
          rollback(probe_mark);
        }
      }
      rollback(before);
    }
    std::vector<size_t> order(members.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return score[a] > score[b]; });
    std::vector<Json::const_iterator> ordered;
    for (size_t k : order) ordered.push_back(members[k]);
    return member_order_.emplace(&object, std::move(ordered)).first->second;
  }

  std::unordered_map<const Json*, std::vector<Json::const_iterator>> member_order_;
  grammask::Recognizer* recognizer_ = nullptr;
  grammask::Matcher* matcher_ = nullptr;
  std::string text_;
  size_t pushed_ = 0;
  size_t probed_ = 0;
  bool rescore_ = false;  // members scored where each goes (else once per object)
};

struct SplitStats {
  size_t schemas = 0;
  size_t converted = 0;
  size_t fully_passing = 0;
  size_t valid = 0, valid_accepted = 0;
  size_t valid_in_order = 0;  // accepted as written: members in the file's order
  size_t in_order = 0;        // converted, and every valid instance accepted as written
  size_t invalid = 0, invalid_rejected = 0;
  std::vector<double> convert_ms;
};

struct ReplayStats {
  std::vector<float> mask_us;
  std::vector<double> compile_ms;
  size_t compile_failures = 0;  // counted among the refusals too
  size_t instances = 0, tokens = 0;
  size_t untokenizable = 0;
  size_t token_refused = 0;  // the mask or the matcher refused a token of a valid instance
  size_t stop_allowed = 0;
  // memory_bytes(): of each compiled grammar once compiled and after every
  // replay of its instances, and of each matcher after its instance.
  std::vector<double> grammar_bytes, grammar_bytes_after, matcher_bytes;
};

struct Options {
  std::string dir;
  std::string vocab;
  bool verbose = false;
  bool lenient = false;  // JsonSchemaOptions::lenient
};

int usage(const std::string& message) {
  std::cerr << "grammask: " << message
            << "\nusage: grammask schema-stats DIR [--vocab FILE] [--lenient] [--verbose]\n";
  return kExitUsage;
}

// Replays one valid instance through a fresh Matcher; records mask times.
void replay(const grammask::CompiledGrammar& compiled, const grammask::Vocabulary& vocab,
            const std::vector<uint32_t>& tokens, std::vector<uint32_t>& words, ReplayStats& out,
            const std::string& where, bool verbose) {
  grammask::Matcher matcher(compiled);
  ++out.instances;
  const size_t first_mask = out.mask_us.size();
  // Names instances with slow masks (--verbose), for whoever tunes them.
  // The slowest mask is named by its token position and the text before it.
  struct SlowReport {
    const ReplayStats& out;
    size_t first;
    const std::string& where;
    const grammask::Vocabulary& vocab;
    const std::vector<uint32_t>& tokens;
    bool verbose;
    ~SlowReport() {
      if (!verbose || out.mask_us.size() == first) return;
      double total = 0, slowest = 0;
      size_t slowest_at = 0;
      for (size_t k = first; k < out.mask_us.size(); ++k) {
        total += out.mask_us[k];
        if (out.mask_us[k] > slowest) {
          slowest = out.mask_us[k];
          slowest_at = k - first;
        }
      }
      if (slowest < 1000) return;
      std::string before;
      for (size_t k = 0; k < slowest_at && k < tokens.size(); ++k)
        before += vocab.token_bytes(tokens[k]);
      constexpr size_t kContext = 40;
      if (before.size() > kContext) before = before.substr(before.size() - kContext);
      std::cout << "slow-masks " << where << ": " << out.mask_us.size() - first << " masks, mean "
                << fixed(total / static_cast<double>(out.mask_us.size() - first), 1) << " us, max "
                << fixed(slowest, 1) << " us at token " << slowest_at << " after "
                << nlohmann::json(before).dump(-1, ' ', false,
                                               nlohmann::json::error_handler_t::replace)
                << "\n";
    }
  } slow_report{out, first_mask, where, vocab, tokens, verbose};
  for (size_t i = 0;; ++i) {
    const auto start = Clock::now();
    grammask::Status filled = matcher.fill_mask(words.data(), words.size());
    out.mask_us.push_back(static_cast<float>(micros_since(start)));
    if (!filled.ok()) {
      ++out.token_refused;
      if (verbose) std::cout << "mask-failed " << where << ": " << filled.to_string() << "\n";
      return;
    }
    if (i == tokens.size()) {
      out.matcher_bytes.push_back(static_cast<double>(matcher.memory_bytes()));
      break;
    }
    ++out.tokens;
    if (!grammask::test_bit(words.data(), tokens[i]) || !matcher.accept_token(tokens[i]).ok()) {
      ++out.token_refused;
      if (verbose) std::cout << "token-refused " << where << " at token " << i << "\n";
      return;
    }
  }
  for (uint32_t stop : vocab.stop_tokens()) {
    if (grammask::test_bit(words.data(), stop) && matcher.accept_token(stop).ok()) {
      ++out.stop_allowed;
      return;
    }
  }
  if (verbose) std::cout << "stop-refused " << where << "\n";
}

}  // namespace

int run_schema_stats(int argc, char** argv) {
  Options options;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--vocab") {
      if (i + 1 >= argc) return usage("--vocab needs a file");
      options.vocab = argv[++i];
    } else if (arg == "--verbose") {
      options.verbose = true;
    } else if (arg == "--lenient") {
      options.lenient = true;
    } else if (arg.size() > 1 && arg[0] == '-') {
      return usage("unknown option '" + arg + "'");
    } else if (options.dir.empty()) {
      options.dir = arg;
    } else {
      return usage("schema-stats takes one directory");
    }
  }
  if (options.dir.empty()) return usage("schema-stats needs a directory");

  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(options.dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_regular_file() && it->path().extension() == ".json") files.push_back(it->path());
  }
  if (ec) {
    std::cerr << "grammask: cannot read '" << options.dir << "': " << ec.message() << "\n";
    return kExitUsage;
  }
  std::sort(files.begin(), files.end());

  std::optional<grammask::Vocabulary> vocab;
  std::optional<GreedyTokenizer> tokenizer;
  if (!options.vocab.empty()) {
    auto loaded = load_vocabulary(options.vocab);
    if (!loaded.ok()) {
      std::cerr << options.vocab << ": " << loaded.status().to_string() << "\n";
      return kExitUsage;
    }
    vocab = std::move(loaded).value();
    tokenizer.emplace(*vocab);
  }

  std::map<std::string, SplitStats> splits;
  std::map<std::string, size_t> refusals;
  std::vector<std::string> invalid_accepted;
  size_t valid_rejected = 0, skipped = 0, with_tests = 0, unserializable = 0;
  size_t valid_reordered = 0, invalid_reordered = 0;  // accepted only with members reordered
  size_t empty_languages = 0;                         // converted schemas that accept no value
  ReplayStats replayed;
  std::vector<uint32_t> words, tokens;
  grammask::JsonSchemaOptions convert_options;
  convert_options.lenient = options.lenient;

  for (const fs::path& path : files) {
    const std::string name = path.filename().string();
    auto text = read_file(path.string());
    Json file;
    if (text) file = Json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (!file.is_object() || !file.contains("schema") || !file.contains("tests") ||
        !file["tests"].is_array()) {
      ++skipped;
      continue;
    }
    // Names on stderr, so that a crash or a hang can be traced to a file.
    if (options.verbose) std::cerr << "checking " << name << std::endl;
    SplitStats& split = splits[split_of(name)];
    ++split.schemas;
    const Json& tests = file["tests"];
    if (!tests.empty()) ++with_tests;
    for (const Json& test : tests) {
      if (test.value("valid", false))
        ++split.valid;
      else
        ++split.invalid;
    }

    const std::string schema_text = file["schema"].dump();
    const auto convert_start = Clock::now();
    auto grammar = grammask::json_schema_to_grammar(schema_text, convert_options);
    split.convert_ms.push_back(micros_since(convert_start) / 1000.0);
    // Instances are checked with a Recognizer, or with a Matcher of the
    // compiled grammar when there is a vocabulary (one lowering, not two).
    std::optional<grammask::Recognizer> recognizer;
    std::optional<grammask::CompiledGrammar> compiled;
    std::string refusal;
    // A schema that accepts no value (kInvalidArgument) is converted: its
    // language is empty, and every instance is rejected.
    const bool accepts_nothing =
        !grammar.ok() && grammar.status().code() == grammask::ErrorCode::kInvalidArgument;
    if (accepts_nothing) {
      ++empty_languages;
    } else if (!grammar.ok()) {
      refusal = grammar.status().message();
    } else if (vocab) {
      const auto compile_start = Clock::now();
      auto result = grammask::CompiledGrammar::compile(*grammar, *vocab);
      replayed.compile_ms.push_back(micros_since(compile_start) / 1000.0);
      if (options.verbose && replayed.compile_ms.back() >= 20)
        std::cout << "slow-compile " << name << ": " << fixed(replayed.compile_ms.back(), 1)
                  << " ms\n";
      if (result.ok()) {
        compiled = std::move(result).value();
        words.assign(compiled->mask_words(), 0);
        replayed.grammar_bytes.push_back(static_cast<double>(compiled->memory_bytes()));
      } else {
        ++replayed.compile_failures;
        refusal = "lowering: " + result.status().message();
      }
    } else {
      auto created = grammask::Recognizer::create(*grammar);
      if (created.ok())
        recognizer = std::move(created).value();
      else
        refusal = "lowering: " + created.status().message();
    }
    if (!recognizer && !compiled && !accepts_nothing) {
      ++refusals[refusal_group(refusal)];
      if (options.verbose) std::cout << "refused " << name << ": " << refusal << "\n";
      continue;
    }
    ++split.converted;
    std::optional<grammask::Matcher> checker;
    if (compiled) checker.emplace(*compiled);

    bool all_right = true;
    bool all_in_order = true;
    for (size_t i = 0; i < tests.size(); ++i) {
      const Json& test = tests[i];
      const bool valid = test.value("valid", false);
      std::string instance, written;
      bool accepted = false, search_gave_up = false;
      try {
        const Json& data = test.contains("data") ? test["data"] : Json(nullptr);
        instance = data.dump();
        if (accepts_nothing)
          accepted = false;
        else {
          InstanceWriter writer = checker ? InstanceWriter(*checker) : InstanceWriter(*recognizer);
          accepted = writer.write(data, written);
          search_gave_up = writer.gave_up();
        }
      } catch (const nlohmann::json::exception&) {
        ++unserializable;
        all_right = false;
        continue;
      }
      if (accepted && written != instance) ++(valid ? valid_reordered : invalid_reordered);
      if (valid && accepted && written == instance) ++split.valid_in_order;
      if (valid && !(accepted && written == instance)) all_in_order = false;
      const std::string where = name + " #" + std::to_string(i);
      if (valid && accepted) {
        ++split.valid_accepted;
        if (compiled) {
          if (tokenizer->tokenize(written, tokens))
            replay(*compiled, *vocab, tokens, words, replayed, where, options.verbose);
          else
            ++replayed.untokenizable;
        }
      } else if (!valid && !accepted) {
        ++split.invalid_rejected;
      } else if (valid) {
        ++valid_rejected;
        all_right = false;
        if (options.verbose)
          std::cout << "valid-rejected " << where
                    << (search_gave_up ? " (the member-order search gave up)" : "") << ": "
                    << instance << "\n";
      } else {
        invalid_accepted.push_back(where);
        all_right = false;
      }
    }
    if (compiled)
      replayed.grammar_bytes_after.push_back(static_cast<double>(compiled->memory_bytes()));
    if (all_right) ++split.fully_passing;
    if (all_in_order) ++split.in_order;
  }

  // --- report --------------------------------------------------------------
  SplitStats total;
  for (auto& [name, s] : splits) {
    total.schemas += s.schemas;
    total.converted += s.converted;
    total.fully_passing += s.fully_passing;
    total.valid += s.valid, total.valid_accepted += s.valid_accepted;
    total.valid_in_order += s.valid_in_order, total.in_order += s.in_order;
    total.invalid += s.invalid, total.invalid_rejected += s.invalid_rejected;
    total.convert_ms.insert(total.convert_ms.end(), s.convert_ms.begin(), s.convert_ms.end());
    std::sort(s.convert_ms.begin(), s.convert_ms.end());
  }
  std::sort(total.convert_ms.begin(), total.convert_ms.end());

  std::cout << "schema-stats " << options.dir << "\n";
  std::cout << "files: " << total.schemas << " schemas (" << with_tests << " with test instances), "
            << skipped << " other files skipped\n";
  std::cout << "converter: default options (flexible whitespace, properties in schema order, "
               "additionalProperties true, formats asserted)"
            << (options.lenient ? ", lenient (keywords it cannot enforce dropped)" : "") << "\n";
  std::cout << "instances: compact JSON; accepted = some order of object members (the instance's "
               "order first, else a bounded backtracking search over member orders) is a "
               "sentence of the grammar\n";
  std::cout << "fully passing: converted, every valid instance accepted, every invalid one "
               "rejected (schemas without tests pass when they convert)\n";
  std::cout << "in_order: valid instances accepted as written (members in the file's order); "
               "order%: converted schemas whose every valid instance is accepted as written\n\n";

  char line[512];
  const char* header_format = "%-16s %8s %9s %7s %8s %7s %8s %8s %8s %7s %8s %8s %9s %9s %9s\n";
  const char* row_format =
      "%-16s %8zu %9zu %7s %8zu %7s %8zu %8zu %8zu %7s %8zu %8zu %9s %9s %9s\n";
  std::snprintf(line, sizeof line, header_format, "split", "schemas", "converted", "conv%",
                "passing", "pass%", "valid", "accepted", "in_order", "order%", "invalid",
                "rejected", "p50_ms", "p99_ms", "max_ms");
  std::cout << line;
  auto row = [&](const std::string& name, const SplitStats& s) {
    std::snprintf(line, sizeof line, row_format, name.c_str(), s.schemas, s.converted,
                  percent(s.converted, s.schemas).c_str(), s.fully_passing,
                  percent(s.fully_passing, s.schemas).c_str(), s.valid, s.valid_accepted,
                  s.valid_in_order, percent(s.in_order, s.converted).c_str(), s.invalid,
                  s.invalid_rejected, fixed(percentile(s.convert_ms, 50), 3).c_str(),
                  fixed(percentile(s.convert_ms, 99), 3).c_str(),
                  fixed(s.convert_ms.empty() ? 0 : s.convert_ms.back(), 3).c_str());
    std::cout << line;
  };
  for (const auto& [name, s] : splits) row(name, s);
  row("total", total);

  std::cout << "\nconversion time (schema text to grammar IR, thread CPU time), ms: p50 "
            << fixed(percentile(total.convert_ms, 50), 3) << " p99 "
            << fixed(percentile(total.convert_ms, 99), 3) << " max "
            << fixed(total.convert_ms.empty() ? 0 : total.convert_ms.back(), 3) << "\n";

  std::vector<std::pair<std::string, size_t>> groups(refusals.begin(), refusals.end());
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::cout << "\nconverted schemas that accept no value (every instance rejected): "
            << empty_languages << "\n";
  std::cout << "\nrefused: " << total.schemas - total.converted << " schemas, by keyword:\n";
  for (const auto& [group, count] : groups) std::cout << "  " << count << "  " << group << "\n";

  std::cout << "\naccepted only with object members reordered: " << valid_reordered << " valid, "
            << invalid_reordered << " invalid\n";
  std::cout << "valid instances rejected: " << valid_rejected;
  if (unserializable) std::cout << " (" << unserializable << " could not be serialized)";
  std::cout << (options.verbose ? "\n" : " (listed with --verbose)\n");
  std::cout << "invalid instances accepted: " << invalid_accepted.size() << "\n";
  for (const std::string& where : invalid_accepted) std::cout << "  " << where << "\n";

  if (vocab) {
    std::sort(replayed.mask_us.begin(), replayed.mask_us.end());
    std::sort(replayed.compile_ms.begin(), replayed.compile_ms.end());
    double mean = 0;
    for (float v : replayed.mask_us) mean += v;
    if (!replayed.mask_us.empty()) mean /= static_cast<double>(replayed.mask_us.size());
    std::cout << "\nvocabulary: " << options.vocab << " (" << vocab->size()
              << " tokens; stop tokens: " << vocab->stop_tokens().size() << ")\n";
    std::cout << "tokenization: greedy longest match over the token bytes (grammask has no BPE "
                 "merges)\n";
    std::cout << "compiled: " << replayed.compile_ms.size() - replayed.compile_failures << " of "
              << replayed.compile_ms.size()
              << " grammars (a failure is counted as a refusal above)";
    std::cout << "\ncompile time (thread CPU time), ms: p50 "
              << fixed(percentile(replayed.compile_ms, 50), 3) << " p99 "
              << fixed(percentile(replayed.compile_ms, 99), 3) << " max "
              << fixed(replayed.compile_ms.empty() ? 0 : replayed.compile_ms.back(), 3) << "\n";
    std::cout << "replay: " << replayed.instances << " valid instances, " << replayed.tokens
              << " tokens, " << replayed.mask_us.size()
              << " masks (one thread); token refused: " << replayed.token_refused
              << "; untokenizable: " << replayed.untokenizable
              << "; stop token allowed at the end: " << replayed.stop_allowed << " of "
              << replayed.instances << "\n";
    std::cout << "mask time (thread CPU time), us: mean " << fixed(mean, 1) << " p50 "
              << fixed(percentile(replayed.mask_us, 50), 1) << " p99 "
              << fixed(percentile(replayed.mask_us, 99), 1) << " p99.9 "
              << fixed(percentile(replayed.mask_us, 99.9), 1) << " p99.99 "
              << fixed(percentile(replayed.mask_us, 99.99), 1) << " max "
              << fixed(replayed.mask_us.empty() ? 0 : replayed.mask_us.back(), 1) << "\n";
    auto kib = [](std::vector<double>& bytes) {
      std::sort(bytes.begin(), bytes.end());
      return "p50 " + fixed(percentile(bytes, 50) / 1024, 1) + " p99 " +
             fixed(percentile(bytes, 99) / 1024, 1) + " max " +
             fixed(bytes.empty() ? 0 : bytes.back() / 1024, 1);
    };
    std::cout << "memory (memory_bytes(), KiB): vocabulary "
              << fixed(vocab->memory_bytes() / 1024.0, 1) << "; compiled grammar "
              << kib(replayed.grammar_bytes) << "; after its replays "
              << kib(replayed.grammar_bytes_after) << "; matcher after an instance "
              << kib(replayed.matcher_bytes) << "\n";
  }
  return kExitOk;
}

}  // namespace grammask_tool
