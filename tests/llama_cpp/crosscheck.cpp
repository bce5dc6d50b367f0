// The llama.cpp sampler (integrations/llama.cpp) against llama.cpp's own
// grammar sampler, on the shared bench workload:
//
//   consumer [SHARED_DIR]            the checks (ctest)
//   consumer [SHARED_DIR] --bench    apply() timings of both samplers (µs)
//   consumer [SHARED_DIR] --bench-quick  the same less llama.cpp's whole-vocabulary apply
// SHARED_DIR defaults to the one this program was configured with.
//
// Checks, per vocabulary of SHARED_DIR/bench/vocab and case of bench/cases
// (schema cases through grammask's converter, so both samplers read the same
// GBNF), replaying the case's trace:
//   - at every step both samplers' allowed sets over the whole vocabulary,
//     grammask with special tokens as text and with its default policy. Each
//     disagreement must have a known cause, printed by kind: llama.cpp reads
//     bytes that are never UTF-8, overlong forms and surrogates as code
//     points, refuses pieces that start with NUL, and (default policy only)
//     matches special tokens' text. Anything else fails the run.
//   - the same on candidate arrays cut by top-k (the small-array path);
//   - a real chain (grammask, top-k, dist) sampling from random logits: each
//     sampled token is allowed by llama.cpp's sampler too, and a clone of
//     the chain samples the same tokens;
//   - reset, the no-op empty grammar, fail-closed after a refused token, init
//     errors, and a lazy sampler against llama.cpp's lazy sampler.
// Exit status: 0 pass, 1 failure, 77 (skip) when SHARED_DIR lacks the files.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "grammask/json_schema.h"
#include "grammask_llama.h"
#include "llama.h"

namespace fs = std::filesystem;

namespace {

int failures = 0;

void fail(const std::string& message) {
  ++failures;
  std::fprintf(stderr, "FAIL: %s\n", message.c_str());
}

#define CHECK(condition, message)    \
  do {                               \
    if (!(condition)) fail(message); \
  } while (0)

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<llama_token> read_ids(const fs::path& path) {
  std::ifstream in(path);
  std::vector<llama_token> ids;
  for (long id; in >> id;) ids.push_back(static_cast<llama_token>(id));
  return ids;
}

int llama_errors = 0;
void log_callback(ggml_log_level level, const char* text, void*) {
  if (level == GGML_LOG_LEVEL_ERROR) {
    ++llama_errors;
    std::fprintf(stderr, "llama.cpp: %s", text);
  }
}

std::string piece_of(const llama_vocab* vocab, llama_token id) {
  char buffer[256];
  const int32_t n = llama_token_to_piece(vocab, id, buffer, sizeof buffer, 0, true);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

// Why llama.cpp and grammask may disagree on a token: its bytes as
// llama.cpp's decoder reads them (it takes the length from the lead byte's
// high nibble and accepts any continuation), or its kind.
std::string known_cause(const std::string& piece, llama_token_attr attr, bool special_as_text) {
  if (piece.empty()) return "";  // neither engine may allow an empty piece
  if (piece[0] == '\0') return "piece starting with NUL";
  if (!special_as_text && (attr & (LLAMA_TOKEN_ATTR_CONTROL | LLAMA_TOKEN_ATTR_UNKNOWN))) {
    return "special token (control or unknown)";
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(piece.data());
  const size_t size = piece.size();
  for (size_t i = 0; i < size; ++i) {
    const unsigned char lead = bytes[i];
    if (lead < 0x80) continue;
    if (lead < 0xC0) return "byte that is never UTF-8 (stray continuation)";
    if (lead == 0xC0 || lead == 0xC1 || lead >= 0xF5) return "byte that is never UTF-8";
    const size_t length = lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    if (i + 1 < size) {
      const unsigned char next = bytes[i + 1];
      if ((next & 0xC0) != 0x80) return "truncated UTF-8 sequence";
      if ((lead == 0xE0 && next < 0xA0) || (lead == 0xF0 && next < 0x90)) return "overlong form";
      if (lead == 0xED && next >= 0xA0) return "surrogate";
      if (lead == 0xF4 && next >= 0x90) return "above U+10FFFF";
    }
    for (size_t k = 2; k < length && i + k < size; ++k) {
      if ((bytes[i + k] & 0xC0) != 0x80) return "truncated UTF-8 sequence";
    }
    i += length - 1;
  }
  return "";
}

// The ids a sampler allows among `ids` (logits all 0 before).
std::vector<bool> allowed_set(llama_sampler* sampler, const std::vector<llama_token>& ids,
                              int n_vocab) {
  std::vector<llama_token_data> data(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) data[i] = llama_token_data{ids[i], 0.0f, 0.0f};
  llama_token_data_array array{data.data(), data.size(), -1, false};
  llama_sampler_apply(sampler, &array);
  std::vector<bool> allowed(static_cast<size_t>(n_vocab), false);
  for (size_t i = 0; i < array.size; ++i) {
    if (array.data[i].logit != -INFINITY) allowed[static_cast<size_t>(array.data[i].id)] = true;
  }
  return allowed;
}

struct Tally {
  size_t steps = 0, compared = 0;
  std::map<std::string, size_t> causes;  // "llama.cpp only: cause" -> count
  size_t unexplained = 0;
};

void compare(const llama_vocab* vocab, const std::vector<llama_token>& ids,
             const std::vector<bool>& llama, const std::vector<bool>& ours, bool special_as_text,
             Tally& tally, const std::string& where) {
  ++tally.steps;
  for (llama_token id : ids) {
    const auto index = static_cast<size_t>(id);
    ++tally.compared;
    if (llama[index] == ours[index]) continue;
    const std::string piece = piece_of(vocab, id);
    const std::string cause = known_cause(piece, llama_vocab_get_attr(vocab, id), special_as_text);
    const std::string side = llama[index] ? "llama.cpp only" : "grammask only";
    if (cause.empty()) {
      if (tally.unexplained++ < 5) {
        fail(where + ": token " + std::to_string(id) + " allowed by " + side +
             " with no known cause");
      }
      continue;
    }
    ++tally.causes[side + ": " + cause];
  }
}

struct Case {
  std::string name;
  std::string gbnf;
};

std::vector<Case> load_cases(const fs::path& bench) {
  std::vector<Case> cases;
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(bench / "cases")) dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& dir : dirs) {
    Case c{dir.filename().string(), ""};
    if (fs::exists(dir / "grammar.gbnf")) {
      c.gbnf = read_file(dir / "grammar.gbnf");
    } else {
      auto gbnf = grammask::json_schema_to_gbnf(read_file(dir / "schema.json"));
      if (!gbnf.ok()) {
        fail(c.name + ": schema conversion failed: " + gbnf.status().to_string());
        continue;
      }
      c.gbnf = *gbnf;
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<llama_token> all_ids(int n_vocab) {
  std::vector<llama_token> ids(static_cast<size_t>(n_vocab));
  for (int i = 0; i < n_vocab; ++i) ids[static_cast<size_t>(i)] = i;
  return ids;
}

// Replays a trace through llama.cpp's sampler and grammask's two policies,
// comparing the allowed sets over the whole vocabulary and over the top 40
// of random logits.
void replay(const llama_vocab* vocab, const Case& c, const std::vector<llama_token>& trace,
            const std::string& label, std::map<std::string, Tally>& tallies) {
  const int n_vocab = llama_vocab_n_tokens(vocab);
  llama_errors = 0;
  llama_sampler* reference = llama_sampler_init_grammar(vocab, c.gbnf.c_str(), "root");
  if (reference == nullptr || llama_errors != 0) {
    std::printf("%-13s %-14s llama.cpp cannot parse the grammar: not compared\n", label.c_str(),
                c.name.c_str());
    if (reference) llama_sampler_free(reference);
    return;
  }
  grammask_llama_params as_text = grammask_llama_default_params();
  as_text.special_tokens_as_text = true;
  llama_sampler* text_policy =
      grammask_llama_init_grammar_params(vocab, c.gbnf.c_str(), "root", &as_text);
  llama_sampler* default_policy = grammask_llama_init_grammar(vocab, c.gbnf.c_str(), "root");
  if (text_policy == nullptr || default_policy == nullptr) {
    fail(label + " " + c.name + ": grammask init failed: " + grammask_llama_last_error());
    return;
  }
  const std::vector<llama_token> ids = all_ids(n_vocab);
  std::mt19937 random(12345);
  std::normal_distribution<float> logit(0.0f, 3.0f);
  llama_sampler* top_k = llama_sampler_init_top_k(40);
  Tally& text_tally = tallies[label + " | special tokens as text | whole vocabulary"];
  Tally& default_tally = tallies[label + " | default | whole vocabulary"];
  Tally& small_tally = tallies[label + " | special tokens as text | top 40"];
  // Every step with GRAMMASK_LLAMA_CPP_ALL_STEPS=1; else about 120 steps
  // spread over the trace, and the last (llama.cpp's sampler takes
  // milliseconds per step over the whole vocabulary).
  const char* all_steps = std::getenv("GRAMMASK_LLAMA_CPP_ALL_STEPS");
  const size_t stride =
      all_steps != nullptr && std::strcmp(all_steps, "1") == 0 ? 1 : trace.size() / 120 + 1;
  for (size_t step = 0; step <= trace.size(); ++step) {
    const std::string where = label + " " + c.name + " step " + std::to_string(step);
    if (step % stride != 0 && step != trace.size()) {
      const llama_token token = trace[step];
      llama_sampler_accept(reference, token);
      llama_sampler_accept(text_policy, token);
      llama_sampler_accept(default_policy, token);
      continue;
    }
    const std::vector<bool> expected = allowed_set(reference, ids, n_vocab);
    compare(vocab, ids, expected, allowed_set(text_policy, ids, n_vocab), true, text_tally, where);
    compare(vocab, ids, expected, allowed_set(default_policy, ids, n_vocab), false, default_tally,
            where);
    // The small-array path: the top 40 of random logits.
    std::vector<llama_token_data> data(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) data[i] = llama_token_data{ids[i], logit(random), 0};
    llama_token_data_array array{data.data(), data.size(), -1, false};
    llama_sampler_apply(top_k, &array);
    std::vector<llama_token> top(array.size);
    for (size_t i = 0; i < array.size; ++i) top[i] = array.data[i].id;
    compare(vocab, top, expected, allowed_set(text_policy, top, n_vocab), true, small_tally, where);
    if (step == trace.size()) break;
    const llama_token token = trace[step];
    llama_sampler_accept(reference, token);
    llama_sampler_accept(text_policy, token);
    llama_sampler_accept(default_policy, token);
  }
  for (llama_sampler* ours : {text_policy, default_policy}) {
    const char* error = grammask_llama_sampler_error(ours);
    CHECK(error == nullptr, label + " " + c.name + ": the trace failed: " + (error ? error : ""));
    CHECK(grammask_llama_is_accepting(ours), label + " " + c.name + ": not accepting at the end");
  }
  llama_sampler_free(top_k);
  llama_sampler_free(reference);
  llama_sampler_free(text_policy);
  llama_sampler_free(default_policy);
}

// A chain (grammask, top-k, dist) sampling from random logits; llama.cpp's
// sampler checks every token; a clone made midway samples the same tokens.
void sample_chain(const llama_vocab* vocab, const Case& c, const std::string& label) {
  const int n_vocab = llama_vocab_n_tokens(vocab);
  llama_sampler* chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
  grammask_llama_params as_text = grammask_llama_default_params();
  as_text.special_tokens_as_text = true;
  llama_sampler* grammar =
      grammask_llama_init_grammar_params(vocab, c.gbnf.c_str(), "root", &as_text);
  if (grammar == nullptr) {
    fail(label + " " + c.name + ": " + grammask_llama_last_error());
    llama_sampler_free(chain);
    return;
  }
  llama_sampler_chain_add(chain, grammar);
  llama_sampler_chain_add(chain, llama_sampler_init_top_k(40));
  llama_sampler_chain_add(chain, llama_sampler_init_dist(7));
  llama_sampler* reference = llama_sampler_init_grammar(vocab, c.gbnf.c_str(), "root");
  llama_sampler* clone = nullptr;
  std::mt19937 random(99);
  std::normal_distribution<float> logit(0.0f, 3.0f);
  std::vector<llama_token_data> data(static_cast<size_t>(n_vocab));
  std::vector<llama_token_data> copy;
  size_t sampled = 0;
  for (int step = 0; step < 64; ++step) {
    for (int i = 0; i < n_vocab; ++i) data[static_cast<size_t>(i)] = {i, logit(random), 0};
    copy = data;
    llama_token_data_array array{data.data(), data.size(), -1, false};
    llama_sampler_apply(chain, &array);
    if (array.selected < 0 || array.data[array.selected].logit == -INFINITY) break;  // all refused
    const llama_token token = array.data[array.selected].id;
    if (clone != nullptr) {
      llama_token_data_array twin{copy.data(), copy.size(), -1, false};
      llama_sampler_apply(clone, &twin);
      CHECK(twin.selected >= 0 && twin.data[twin.selected].id == token,
            label + " " + c.name + ": the clone sampled another token");
      llama_sampler_accept(clone, token);
    }
    llama_token_data single{token, 0.0f, 0.0f};
    llama_token_data_array one{&single, 1, -1, false};
    llama_sampler_apply(reference, &one);
    const std::string cause =
        known_cause(piece_of(vocab, token), llama_vocab_get_attr(vocab, token), true);
    CHECK(single.logit != -INFINITY || !cause.empty(), label + " " + c.name + ": sampled token " +
                                                           std::to_string(token) +
                                                           " that llama.cpp refuses");
    ++sampled;
    if (llama_vocab_is_eog(vocab, token)) break;
    llama_sampler_accept(chain, token);
    llama_sampler_accept(reference, token);
    if (step == 10) clone = llama_sampler_clone(chain);
  }
  CHECK(sampled > 0, label + " " + c.name + ": the chain sampled nothing");
  CHECK(grammask_llama_sampler_error(grammar) == nullptr,
        label + " " + c.name + ": the chain's sampler failed");
  if (clone) llama_sampler_free(clone);
  llama_sampler_free(reference);
  llama_sampler_free(chain);
}

// Reset, the empty grammar, fail-closed, init errors, lazy triggers.
void behaviours(const llama_vocab* vocab, const std::string& label) {
  const int n_vocab = llama_vocab_n_tokens(vocab);
  const std::vector<llama_token> ids = all_ids(n_vocab);
  const char* digits = "root ::= [0-9]+";

  // Empty grammar: changes nothing.
  llama_sampler* none = grammask_llama_init_grammar(vocab, "", "root");
  CHECK(none != nullptr, label + ": the empty grammar gave no sampler");
  if (none) {
    const std::vector<bool> all = allowed_set(none, ids, n_vocab);
    CHECK(std::count(all.begin(), all.end(), true) == n_vocab,
          label + ": the empty grammar masked tokens");
    llama_sampler_free(none);
  }

  // Init errors: NULL and a message with the position.
  CHECK(grammask_llama_init_grammar(vocab, "root ::= [0-9", "root") == nullptr,
        label + ": a bad grammar gave a sampler");
  CHECK(std::strstr(grammask_llama_last_error(), "1:") != nullptr,
        label + ": the error has no position: " + grammask_llama_last_error());
  CHECK(grammask_llama_init_grammar(vocab, digits, "start") == nullptr,
        label + ": a missing root rule gave a sampler");

  // Fail closed: accept a refused token; afterwards only end-of-generation.
  llama_sampler* sampler = grammask_llama_init_grammar(vocab, digits, "root");
  if (sampler == nullptr) {
    fail(label + ": " + grammask_llama_last_error());
    return;
  }
  const std::vector<bool> start = allowed_set(sampler, ids, n_vocab);
  llama_token letter = -1;
  for (llama_token id = 0; id < n_vocab && letter < 0; ++id) {
    if (piece_of(vocab, id) == "a") letter = id;
  }
  CHECK(letter >= 0 && !start[static_cast<size_t>(letter)], label + ": 'a' allowed by [0-9]+");
  llama_sampler_accept(sampler, letter);
  CHECK(grammask_llama_sampler_error(sampler) != nullptr, label + ": no error after 'a'");
  const std::vector<bool> closed = allowed_set(sampler, ids, n_vocab);
  for (llama_token id = 0; id < n_vocab; ++id) {
    CHECK(closed[static_cast<size_t>(id)] == llama_vocab_is_eog(vocab, id),
          label + ": after an error, token " + std::to_string(id) + " is wrongly masked");
  }
  llama_sampler_reset(sampler);
  CHECK(grammask_llama_sampler_error(sampler) == nullptr, label + ": reset kept the error");
  CHECK(allowed_set(sampler, ids, n_vocab) == start, label + ": reset did not restore the start");
  llama_sampler_free(sampler);

  // `sorted` survives only while the blocked candidates trail the allowed.
  llama_token digit = -1;
  for (llama_token id = 0; id < n_vocab && digit < 0; ++id) {
    if (piece_of(vocab, id) == "7") digit = id;
  }
  sampler = grammask_llama_init_grammar(vocab, digits, "root");
  if (sampler != nullptr && digit >= 0) {
    llama_token_data trailing[] = {{digit, 2.0f, 0.0f}, {letter, 1.0f, 0.0f}};
    llama_token_data_array sorted_array{trailing, 2, -1, true};
    llama_sampler_apply(sampler, &sorted_array);
    CHECK(sorted_array.sorted && trailing[1].logit == -INFINITY,
          label + ": a blocked last candidate cleared `sorted`");
    llama_token_data leading[] = {{letter, 2.0f, 0.0f}, {digit, 1.0f, 0.0f}};
    llama_token_data_array unsorted_array{leading, 2, -1, true};
    llama_sampler_apply(sampler, &unsorted_array);
    CHECK(!unsorted_array.sorted && leading[0].logit == -INFINITY && leading[1].logit == 1.0f,
          label + ": a blocked first candidate kept `sorted`");
    llama_sampler_free(sampler);
  }

  // JSON Schema and structural tags: refusals name the JSON pointer.
  sampler = grammask_llama_init_json_schema(
      vocab, R"({"type":"object","properties":{"n":{"type":"integer","minimum":3}}})", nullptr);
  CHECK(sampler != nullptr, label + ": schema: " + grammask_llama_last_error());
  if (sampler) {
    const std::vector<bool> first = allowed_set(sampler, ids, n_vocab);
    bool brace_allowed = false, bracket_allowed = false;
    for (llama_token id = 0; id < n_vocab; ++id) {
      const std::string piece = piece_of(vocab, id);
      if (piece == "{") brace_allowed |= first[static_cast<size_t>(id)];
      if (piece == "[") bracket_allowed |= first[static_cast<size_t>(id)];
    }
    CHECK(brace_allowed && !bracket_allowed, label + ": the object schema's first mask is wrong");
    llama_sampler_free(sampler);
  }
  CHECK(grammask_llama_init_json_schema(vocab, R"({"properties":{"a":{"$ref":"#/nowhere"}}})",
                                        nullptr) == nullptr &&
            std::strstr(grammask_llama_last_error(), "/properties/a") != nullptr,
        label + ": a bad schema's error has no pointer: " + grammask_llama_last_error());
  sampler = grammask_llama_init_structural_tag(
      vocab,
      R"({"type":"structural_tag","format":{"type":"tag","begin":"<a>","content":{"type":"const_string","value":"x"},"end":"</a>"}})",
      nullptr);
  CHECK(sampler != nullptr, label + ": structural tag: " + grammask_llama_last_error());
  if (sampler) llama_sampler_free(sampler);

  // Lazy with a whole-output pattern: the grammar starts at the capture.
  const char* patterns[] = {"[\\s\\S]*?(<call>)[\\s\\S]*"};
  sampler = grammask_llama_init_grammar_lazy_patterns(
      vocab, "root ::= \"<call>\" [a-z]+ \"</call>\"", "root", patterns, 1, nullptr, 0, nullptr);
  CHECK(sampler != nullptr, label + ": lazy patterns: " + grammask_llama_last_error());
  if (sampler) llama_sampler_free(sampler);

  // Lazy: before "<call>" llama.cpp allows everything; grammask allows
  // everything but tokens that would fire the trigger into refused text.
  const char* lazy_grammar = "root ::= \"<call>\" [a-z]+ \"</call>\"";
  const char* words[] = {"<call>"};
  llama_sampler* reference =
      llama_sampler_init_grammar_lazy(vocab, lazy_grammar, "root", words, 1, nullptr, 0);
  llama_sampler* lazy =
      grammask_llama_init_grammar_lazy(vocab, lazy_grammar, "root", words, 1, nullptr, 0);
  if (lazy == nullptr || reference == nullptr) {
    fail(label + ": lazy init failed: " + grammask_llama_last_error());
    return;
  }
  const std::string text = "Let me look. <call>weather</call>";
  std::vector<llama_token> tokens(text.size() + 8);
  const int32_t n =
      llama_tokenize(vocab, text.c_str(), static_cast<int32_t>(text.size()), tokens.data(),
                     static_cast<int32_t>(tokens.size()), false, false);
  tokens.resize(n > 0 ? static_cast<size_t>(n) : 0);
  for (llama_token token : tokens) {
    const std::vector<bool> expected = allowed_set(reference, ids, n_vocab);
    const std::vector<bool> got = allowed_set(lazy, ids, n_vocab);
    for (llama_token id = 0; id < n_vocab; ++id) {
      const auto index = static_cast<size_t>(id);
      if (expected[index] == got[index]) continue;
      // Before the trigger grammask refuses only tokens whose text fires it.
      const std::string piece = piece_of(vocab, id);
      const bool fires =
          piece.find('<') != std::string::npos || piece.find('>') != std::string::npos;
      CHECK(expected[index] && fires,
            label + ": lazy: token " + std::to_string(id) + " (" + piece + ") differs");
    }
    CHECK(got[static_cast<size_t>(token)], label + ": lazy refused the text's token");
    llama_sampler_accept(reference, token);
    llama_sampler_accept(lazy, token);
  }
  CHECK(grammask_llama_sampler_error(lazy) == nullptr && grammask_llama_is_accepting(lazy),
        label + ": lazy did not accept the text");
  llama_sampler_free(reference);
  llama_sampler_free(lazy);
}

double mean_apply_us(llama_sampler* sampler, const std::vector<llama_token>& trace,
                     const std::vector<llama_token>& candidates) {
  std::vector<llama_token_data> data(candidates.size());
  double total = 0;
  for (size_t step = 0; step <= trace.size(); ++step) {
    for (size_t i = 0; i < candidates.size(); ++i) data[i] = {candidates[i], 0.0f, 0.0f};
    llama_token_data_array array{data.data(), data.size(), -1, false};
    const auto start = std::chrono::steady_clock::now();
    llama_sampler_apply(sampler, &array);
    total +=
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (step < trace.size()) llama_sampler_accept(sampler, trace[step]);
  }
  return total / static_cast<double>(trace.size() + 1);
}

// apply() timings over a trace: the whole vocabulary (llama.cpp's skipped
// with `quick`), and 40 candidates (as after top-k) through grammask's mask
// path and its per-candidate path.
void bench(const llama_vocab* vocab, const Case& c, const std::vector<llama_token>& trace,
           const std::string& label, bool quick) {
  const int n_vocab = llama_vocab_n_tokens(vocab);
  const std::vector<llama_token> ids = all_ids(n_vocab);
  std::vector<llama_token> few;
  for (int i = 0; i < 40; ++i) few.push_back((i * 2654435761u) % static_cast<unsigned>(n_vocab));
  auto time = [&](bool llama, uint32_t small_array_max,
                  const std::vector<llama_token>& shape) -> double {
    grammask_llama_params params = grammask_llama_default_params();
    params.special_tokens_as_text = true;
    params.small_array_max = small_array_max;
    llama_sampler* sampler =
        llama ? llama_sampler_init_grammar(vocab, c.gbnf.c_str(), "root")
              : grammask_llama_init_grammar_params(vocab, c.gbnf.c_str(), "root", &params);
    if (sampler == nullptr) return NAN;
    const double mean = mean_apply_us(sampler, trace, shape);
    llama_sampler_free(sampler);
    return mean;
  };
  const double llama_all = quick ? NAN : time(true, 0, ids);
  const double ours_all = time(false, 1, ids);
  const double llama_few = time(true, 0, few);
  const double ours_mask = time(false, 1, few);
  const double ours_each = time(false, 64, few);
  std::printf("| %s | %s | %.1f | %.1f | %.2f | %.2f | %.2f |\n", label.c_str(), c.name.c_str(),
              llama_all, ours_all, llama_few, ours_mask, ours_each);
}

}  // namespace

int main(int argc, char** argv) {
  fs::path shared = GRAMMASK_SHARED_DIR;
  bool timing = false, quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--bench") == 0 || std::strcmp(argv[i], "--bench-quick") == 0) {
      timing = true;
      quick = std::strcmp(argv[i], "--bench-quick") == 0;
    } else {
      shared = argv[i];
    }
  }
  const fs::path bench_dir = shared / "bench";
  if (!fs::exists(bench_dir / "vocab")) {
    std::printf("skipped: %s not found\n", (bench_dir / "vocab").c_str());
    return 77;
  }
  llama_log_set(log_callback, nullptr);
  llama_backend_init();
  const std::vector<Case> cases = load_cases(bench_dir);
  if (timing) {
    std::printf(
        "| vocab | case | llama.cpp, all | grammask, all | llama.cpp, 40 "
        "| grammask, 40 by mask | grammask, 40 one by one |\n"
        "|---|---|---|---|---|---|---|\n");
  }
  std::map<std::string, Tally> tallies;
  for (const char* name : {"gpt2", "deepseek-llm", "phi3"}) {
    const fs::path gguf = bench_dir / "vocab" / (std::string(name) + ".gguf");
    llama_model_params params = llama_model_default_params();
    params.vocab_only = true;
    llama_model* model = llama_model_load_from_file(gguf.c_str(), params);
    if (model == nullptr) {
      fail(std::string("cannot load ") + gguf.string());
      continue;
    }
    const llama_vocab* vocab = llama_model_get_vocab(model);
    for (const Case& c : cases) {
      const std::vector<llama_token> trace =
          read_ids(bench_dir / "traces" / name / (c.name + ".ids"));
      if (timing) {
        bench(vocab, c, trace, name, quick);
        continue;
      }
      replay(vocab, c, trace, name, tallies);
      sample_chain(vocab, c, name);
    }
    if (!timing) behaviours(vocab, name);
    llama_model_free(model);
  }
  if (!timing) {
    std::printf(
        "| vocab | policy | candidates | steps | decisions | differing, by cause "
        "| unexplained |\n|---|---|---|---|---|---|---|\n");
    size_t steps = 0;
    for (const auto& [row, tally] : tallies) {
      std::string causes;
      for (const auto& [cause, count] : tally.causes) {
        causes += (causes.empty() ? "" : "; ") + std::to_string(count) + " " + cause;
      }
      std::printf("| %s | %zu | %zu | %s | %zu |\n", row.c_str(), tally.steps, tally.compared,
                  causes.empty() ? "none" : causes.c_str(), tally.unexplained);
      steps += tally.steps;
    }
    CHECK(steps > 0, "no step was compared");
  }
  grammask_llama_clear_vocab_cache();
  llama_backend_free();
  std::printf("%s\n", failures == 0 ? "PASS" : "FAIL");
  return failures == 0 ? 0 : 1;
}
