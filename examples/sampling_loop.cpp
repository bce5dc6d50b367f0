// A complete grammar-constrained sampling loop, written the way an inference
// engine would drive grammask. The "model" here produces random logits (or
// reads them from a file of float32 rows), so the example runs anywhere:
//
//   sampling_loop VOCAB (G.gbnf | S.json) [--seed N] [--logits FILE] [--max-tokens N]
//
// Per step: fill the mask -> apply it to the logits -> sample -> accept,
// until a stop token. Prints the generated text.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "grammask/bitmask.h"
#include "grammask/json_schema.h"
#include "grammask/matcher.h"
#include "grammask/vocabulary.h"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Softmax sampling over the masked logits (-inf entries get probability 0).
uint32_t sample(const std::vector<float>& logits, std::mt19937& rng) {
  float top = -std::numeric_limits<float>::infinity();
  for (float v : logits) top = std::max(top, v);
  std::vector<double> weights(logits.size());
  for (size_t i = 0; i < logits.size(); ++i)
    weights[i] = std::isinf(logits[i]) ? 0.0 : std::exp(static_cast<double>(logits[i] - top));
  std::discrete_distribution<uint32_t> pick(weights.begin(), weights.end());
  return pick(rng);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: sampling_loop VOCAB (G.gbnf | S.json) [--seed N] [--logits FILE] "
                 "[--max-tokens N]\n";
    return 2;
  }
  const std::string vocab_path = argv[1], constraint_path = argv[2];
  unsigned seed = 1;
  size_t max_tokens = 512;
  std::string logits_path;
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--seed")
      seed = static_cast<unsigned>(std::stoul(argv[i + 1]));
    else if (flag == "--logits")
      logits_path = argv[i + 1];
    else if (flag == "--max-tokens")
      max_tokens = std::stoul(argv[i + 1]);
  }

  // 1. Load the vocabulary once; it is immutable and shareable.
  auto vocab = ends_with(vocab_path, ".gguf")
                   ? grammask::Vocabulary::from_gguf_file(vocab_path)
                   : grammask::Vocabulary::from_tokenizer_json_file(vocab_path);
  if (!vocab.ok()) {
    std::cerr << vocab_path << ": " << vocab.status().to_string() << "\n";
    return 1;
  }

  // 2. Compile the grammar (or schema) against it; share it between sequences.
  std::string gbnf = read_file(constraint_path);
  if (ends_with(constraint_path, ".json")) {
    auto converted = grammask::json_schema_to_gbnf(gbnf);
    if (!converted.ok()) {
      std::cerr << constraint_path << ": " << converted.status().to_string() << "\n";
      return 1;
    }
    gbnf = *converted;
  }
  auto compiled = grammask::CompiledGrammar::from_gbnf(gbnf, *vocab);
  if (!compiled.ok()) {
    std::cerr << constraint_path << ":" << compiled.status().to_string() << "\n";
    return 1;
  }

  // 3. One matcher per sequence. The logits row may be wider than the
  //    vocabulary (models pad it); the mask covers the whole row.
  grammask::Matcher matcher(*compiled);
  const size_t n_logits = vocab->size();
  std::vector<float> logits(n_logits);
  std::vector<uint32_t> mask(grammask::mask_words(n_logits));
  std::mt19937 rng(seed);
  std::normal_distribution<float> model(0.0f, 2.0f);
  std::ifstream logits_file;
  if (!logits_path.empty()) logits_file.open(logits_path, std::ios::binary);

  std::string text;
  for (size_t step = 0; step < max_tokens && !matcher.is_terminated(); ++step) {
    // The "model": a row of logits from the file, else random ones.
    if (!logits_file.is_open() ||
        !logits_file.read(reinterpret_cast<char*>(logits.data()), n_logits * sizeof(float))) {
      for (float& v : logits) v = model(rng);
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
  std::cout << text;
  if (!matcher.is_terminated()) std::cerr << "\n(stopped after " << max_tokens << " tokens)\n";
  return 0;
}
