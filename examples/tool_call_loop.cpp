// Tool calling in a sampling loop: a reasoning block, then calls of two
// tools in a model's tool-call format (grammask/tool_calls.h), decoded with
// random logits under the mask. The "model" is random, so the text is
// nonsense, but it always has the format's shape and the arguments always
// fit the tools' schemas.
//
//   tool_call_loop VOCAB [--format hermes|llama3] [--seed N] [--max-tokens N]
//
// VOCAB is a tokenizer.json or a GGUF file, e.g. the Llama 3 tokenizer.
// Prints the text, then each call with its parsed arguments.
#include <cmath>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammask/bitmask.h"
#include "grammask/matcher.h"
#include "grammask/structural_tag.h"
#include "grammask/tool_calls.h"
#include "grammask/vocabulary.h"

namespace {

const char* const kTools = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
   "parameters": {"type": "object", "properties": {
     "city": {"type": "string", "maxLength": 20},
     "unit": {"enum": ["celsius", "fahrenheit"]}},
     "required": ["city", "unit"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "get_time", "description": "Time in a time zone",
   "parameters": {"type": "object", "properties": {
     "tz": {"enum": ["UTC", "Europe/Paris", "Asia/Tokyo"]}},
     "required": ["tz"], "additionalProperties": false}}}
])";

// Text that closes what is open: the reasoning block, a string, an object,
// a call. Past the step budget the loop appends the first of these that
// the matcher takes (it refuses the others, changing nothing) and favours
// the stop tokens, so that the reply ends.
const std::vector<std::string> kClosers = {"</think>", "\"", "}", "\n</tool_call>"};
constexpr size_t kBudget = 40;

// Appends the first closer the matcher takes; false if none fits.
bool append_closer(grammask::Matcher& matcher, std::string& text) {
  for (const std::string& closer : kClosers) {
    if (closer == "</think>" && text.find(closer) != std::string::npos) continue;  // closed
    if (matcher.accept_bytes(closer).ok()) {
      text += closer;
      return true;
    }
  }
  return false;
}

uint32_t sample(const std::vector<float>& logits, std::mt19937& rng) {
  float top = -std::numeric_limits<float>::infinity();
  for (float v : logits) top = std::max(top, v);
  std::vector<double> weights(logits.size());
  for (size_t i = 0; i < logits.size(); ++i)
    weights[i] = std::isinf(logits[i]) ? 0.0 : std::exp(static_cast<double>(logits[i] - top));
  std::discrete_distribution<uint32_t> pick(weights.begin(), weights.end());
  return pick(rng);
}

// The calls of a reply in `format`: each `begin` JSON `end` object parsed.
void print_calls(const std::string& text, const std::string& format) {
  const std::string begin = format == "hermes" ? "<tool_call>\n" : "{\"name\"";
  const std::string end = format == "hermes" ? "\n</tool_call>" : "";
  for (size_t at = text.find(begin); at != std::string::npos; at = text.find(begin, at + 1)) {
    const size_t start = format == "hermes" ? at + begin.size() : at;
    const size_t stop = end.empty() ? text.size() : text.find(end, start);
    auto call = nlohmann::json::parse(text.substr(start, stop - start), nullptr, false);
    if (call.is_discarded()) continue;
    const auto& arguments = format == "hermes" ? call["arguments"] : call["parameters"];
    std::cout << "call " << call["name"].get<std::string>() << "(";
    const char* separator = "";
    for (const auto& [key, value] : arguments.items()) {
      std::cout << separator << key << "=" << value.dump();
      separator = ", ";
    }
    std::cout << ")\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: tool_call_loop VOCAB [--format hermes|llama3] [--seed N] "
                 "[--max-tokens N]\n";
    return 2;
  }
  const std::string vocab_path = argv[1];
  std::string format = "hermes";
  unsigned seed = 1;
  size_t max_tokens = 400;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--format") format = argv[i + 1];
    if (flag == "--seed") seed = static_cast<unsigned>(std::stoul(argv[i + 1]));
    if (flag == "--max-tokens") max_tokens = std::stoul(argv[i + 1]);
  }
  const bool gguf = vocab_path.size() > 5 && vocab_path.substr(vocab_path.size() - 5) == ".gguf";
  auto vocab = gguf ? grammask::Vocabulary::from_gguf_file(vocab_path)
                    : grammask::Vocabulary::from_tokenizer_json_file(vocab_path);
  if (!vocab.ok()) {
    std::cerr << vocab_path << ": " << vocab.status().to_string() << "\n";
    return 1;
  }

  // 1. The structural tag: reasoning first, then one or more calls.
  grammask::ToolCallOptions options;
  options.tool_choice = "required";
  options.reasoning = true;
  auto tag = grammask::tool_calls_structural_tag(format, kTools, options);
  if (!tag.ok()) {
    std::cerr << tag.status().to_string() << "\n";
    return 1;
  }
  // 2. Compile it for the vocabulary, once; matchers share it.
  //    JSON arguments get at most one blank between tokens (random logits
  //    favour the many whitespace tokens otherwise).
  grammask::StructuralTagOptions tag_options;
  tag_options.json_schema.max_whitespace_run = 1;
  auto compiled = grammask::compile_structural_tag(*tag, *vocab, {}, tag_options);
  if (!compiled.ok()) {
    std::cerr << compiled.status().to_string() << "\n";
    return 1;
  }

  // 3. Decode: forced text is taken as is (jump-forward); past the budget a
  //    closer is appended where one fits; otherwise mask the random logits,
  //    sample and accept.
  grammask::Matcher matcher(*compiled);
  const size_t n_logits = vocab->size();
  std::vector<float> logits(n_logits);
  std::vector<uint32_t> mask(grammask::mask_words(n_logits));
  std::mt19937 rng(seed);
  std::normal_distribution<float> model(0.0f, 2.0f);
  std::string text;
  for (size_t step = 0; step < max_tokens && !matcher.is_terminated(); ++step) {
    if (std::string forced = matcher.forced_bytes(); !forced.empty()) {
      if (!matcher.accept_bytes(forced).ok()) return 1;
      text += forced;
      continue;
    }
    if (step >= kBudget && !matcher.is_accepting() && append_closer(matcher, text)) continue;
    for (float& v : logits) v = model(rng);
    if (step >= kBudget) {
      for (uint32_t stop : vocab->stop_tokens()) logits[stop] += 100.0f;
    }
    if (grammask::Status s = matcher.fill_mask(mask.data(), mask.size()); !s.ok()) {
      std::cerr << s.to_string() << "\n";
      return 1;
    }
    grammask::apply_mask(logits.data(), n_logits, mask.data());
    const uint32_t token = sample(logits, rng);
    if (grammask::Status s = matcher.accept_token(token); !s.ok()) {
      std::cerr << "step " << step << ": " << s.to_string() << "\n";
      return 1;
    }
    if (!matcher.is_terminated()) text += std::string(vocab->token_bytes(token));
  }
  std::cout << text << "\n";
  if (!matcher.is_terminated()) {
    std::cerr << "(stopped after " << max_tokens << " steps, incomplete)\n";
    return 1;
  }
  std::cout << "--\n";
  print_calls(text, format);
  return 0;
}
