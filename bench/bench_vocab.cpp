// Loading vocabularies (file -> token bytes -> trie) and building the trie.
// Reads ../shared (or $GRAMMASK_SHARED_DIR); skips when it is absent.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "grammask/vocabulary.h"
#include "vocab/token_trie.h"
#include "vocab/vocabulary_access.h"

namespace {

std::string shared_dir() {
  const char* from_env = std::getenv("GRAMMASK_SHARED_DIR");
  std::string dir = from_env != nullptr ? from_env : GRAMMASK_SHARED_DIR;
  if (dir.empty() || !std::ifstream(dir + "/bench/README.md")) return std::string();
  return dir;
}

const char* const kGgufNames[] = {"gpt2", "deepseek-llm", "phi3"};
const char* const kJsonNames[] = {"llama-3", "phi-3-mini"};

// GGUF -> Vocabulary, including the trie.
void BM_LoadGguf(benchmark::State& state) {
  const std::string dir = shared_dir();
  if (dir.empty()) return state.SkipWithError("shared dir not found");
  const std::string name = kGgufNames[state.range(0)];
  const std::string path = dir + "/bench/vocab/" + name + ".gguf";
  size_t tokens = 0;
  for (auto _ : state) {
    auto vocab = grammask::Vocabulary::from_gguf_file(path);
    if (!vocab.ok()) return state.SkipWithError(vocab.status().to_string().c_str());
    tokens = vocab->size();
    benchmark::DoNotOptimize(grammask::internal::VocabularyAccess::trie(*vocab).nodes().data());
  }
  state.SetLabel(name + " (" + std::to_string(tokens) + " tokens)");
}
BENCHMARK(BM_LoadGguf)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);

// tokenizer.json -> Vocabulary, including the trie.
void BM_LoadTokenizerJson(benchmark::State& state) {
  const std::string dir = shared_dir();
  if (dir.empty()) return state.SkipWithError("shared dir not found");
  const std::string name = kJsonNames[state.range(0)];
  const std::string path = dir + "/tokenizers/" + name + "/tokenizer.json";
  for (auto _ : state) {
    auto vocab = grammask::Vocabulary::from_tokenizer_json_file(path);
    if (!vocab.ok()) return state.SkipWithError(vocab.status().to_string().c_str());
    benchmark::DoNotOptimize(grammask::internal::VocabularyAccess::trie(*vocab).nodes().data());
  }
  state.SetLabel(name);
}
BENCHMARK(BM_LoadTokenizerJson)->DenseRange(0, 1)->Unit(benchmark::kMillisecond);

// The trie build alone, from an already loaded vocabulary.
void BM_BuildTrie(benchmark::State& state) {
  const std::string dir = shared_dir();
  if (dir.empty()) return state.SkipWithError("shared dir not found");
  const std::string name = kGgufNames[state.range(0)];
  auto vocab = grammask::Vocabulary::from_gguf_file(dir + "/bench/vocab/" + name + ".gguf");
  if (!vocab.ok()) return state.SkipWithError(vocab.status().to_string().c_str());
  // Pack the trie's tokens the way the vocabulary stores them.
  std::string bytes;
  std::vector<uint32_t> offsets = {0};
  std::vector<uint32_t> ids;
  for (uint32_t id = 0; id < vocab->size(); ++id) {
    if (!vocab->is_special(id) && !vocab->is_stop(id)) ids.push_back(id);
    bytes += vocab->token_bytes(id);
    offsets.push_back(static_cast<uint32_t>(bytes.size()));
  }
  for (auto _ : state) {
    auto trie = grammask::internal::TokenTrie::build(bytes.data(), offsets.data(), ids);
    benchmark::DoNotOptimize(trie.nodes().data());
  }
  state.SetLabel(name);
}
BENCHMARK(BM_BuildTrie)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);

}  // namespace
