// The size of the any-order rules of one object (PropertyOrder::kAny) by
// number of declared properties and how many are required: rules, grammar
// bytes, conversion time and CompiledGrammar::compile time against a
// vocabulary (a GGUF or tokenizer.json file; default ../shared's gpt2).
// Rules are spelled out (calls off, any_order_max_alternatives lifted), or
// with --calls the defaults: one AnyOrder(...) call; then the table also
// gives the median and slowest fill_mask of random decodes of an instance
// (3 seeds).
//   object_order_sizes [VOCAB] [MAX_N] [MIN_N] [--calls]
// Prints a Markdown table (docs/architecture.md quotes it).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "grammask/gbnf.h"
#include "grammask/json_schema.h"
#include "grammask/matcher.h"
#include "grammask/vocabulary.h"

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace

// fill_mask times (µs) of random decodes from `compiled`, each step taking
// a random allowed token (stop tokens only when nothing else is allowed).
std::vector<double> decode_mask_times(const grammask::CompiledGrammar& compiled,
                                      const grammask::Vocabulary& vocab) {
  std::vector<double> times;
  std::vector<uint32_t> words(compiled.mask_words());
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    grammask::Matcher matcher(compiled);
    std::mt19937 rng(seed);
    for (int step = 0; step < 400 && !matcher.is_terminated(); ++step) {
      auto start = std::chrono::steady_clock::now();
      if (!matcher.fill_mask(words.data(), words.size()).ok()) break;
      times.push_back(ms_since(start) * 1000);
      std::vector<uint32_t> allowed, stops;
      for (uint32_t id = 0; id < vocab.size(); ++id)
        if (words[id / 32] >> (id % 32) & 1) (vocab.is_stop(id) ? stops : allowed).push_back(id);
      if (allowed.empty()) allowed = stops;
      if (allowed.empty()) break;
      if (!matcher.accept_token(allowed[rng() % allowed.size()]).ok()) break;
    }
  }
  std::sort(times.begin(), times.end());
  return times;
}

int main(int argc, char** argv) {
  bool calls = false;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--calls") {
      calls = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  std::string path =
      args.size() > 0 ? args[0] : std::string(GRAMMASK_SHARED_DIR) + "/bench/vocab/gpt2.gguf";
  int max_n = args.size() > 1 ? std::atoi(args[1].c_str()) : 16;
  int min_n = args.size() > 2 ? std::atoi(args[2].c_str()) : 4;
  bool gguf = path.size() > 5 && path.compare(path.size() - 5, 5, ".gguf") == 0;
  auto vocab = gguf ? grammask::Vocabulary::from_gguf_file(path)
                    : grammask::Vocabulary::from_tokenizer_json_file(path);
  if (!vocab.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), vocab.status().to_string().c_str());
    return 1;
  }
  std::printf("vocabulary: %s (%zu tokens)\n\n", path.c_str(), vocab->size());
  std::printf("| n | required | rules | alternatives | bytes | convert ms | compile ms |%s\n",
              calls ? " mask p50 / max µs |" : "");
  std::printf("|---|---|---|---|---|---|---|%s\n", calls ? "---|" : "");
  for (int n = min_n; n <= max_n; ++n) {
    for (int required : {0, n / 2, n}) {
      std::string schema = R"({"type": "object", "additionalProperties": false, "properties": {)";
      std::string names;
      for (int i = 0; i < n; ++i) {
        schema += (i ? ", " : "") + std::string("\"p") + std::to_string(i) +
                  "\": {\"type\": \"integer\"}";
        if (i < required) names += (i ? ", " : "") + std::string("\"p") + std::to_string(i) + "\"";
      }
      schema += "}, \"required\": [" + names + "]}";
      grammask::JsonSchemaOptions options;
      options.property_order = grammask::JsonSchemaOptions::PropertyOrder::kAny;
      if (!calls) {
        options.any_order_calls = false;
        options.any_order_max_alternatives = 1u << 30;
      }
      options.max_rules = 1u << 30;
      options.max_grammar_bytes = size_t{1} << 31;
      auto start = std::chrono::steady_clock::now();
      auto text = grammask::json_schema_to_gbnf(schema, options);
      double convert_ms = ms_since(start);
      if (!text.ok()) {
        std::printf("| %d | %d | %s |\n", n, required, text.status().to_string().c_str());
        continue;
      }
      size_t rules = std::count(text->begin(), text->end(), '\n');
      size_t alternatives = 0;  // of the state rules: "|" plus one per rule "o..."
      for (size_t at = 0; (at = text->find("\no", at)) != std::string::npos; ++at) {
        size_t end = text->find('\n', at + 1);
        alternatives += 1 + std::count(text->begin() + at, text->begin() + end, '|');
      }
      grammask::CompileOptions compile_options;  // the defaults
      start = std::chrono::steady_clock::now();
      auto compiled = grammask::CompiledGrammar::from_gbnf(*text, *vocab, compile_options);
      double compile_ms = ms_since(start);
      std::printf("| %d | %d | %zu | %zu | %zu | %.1f | %s |", n, required, rules, alternatives,
                  text->size(), convert_ms,
                  compiled.ok() ? std::to_string(compile_ms).substr(0, 7).c_str()
                                : compiled.status().to_string().c_str());
      if (calls && compiled.ok()) {
        const std::vector<double> times = decode_mask_times(*compiled, *vocab);
        if (!times.empty()) std::printf(" %.0f / %.0f |", times[times.size() / 2], times.back());
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  return 0;
}
