// Mask computation per shared grammar case (deepseek-llm vocabulary):
//   cold: a fresh Matcher replaying the trace (every mask, cache included);
//   warm: masks at states already seen (the cache hit path).
// Skips when ../shared is absent ($GRAMMASK_SHARED_DIR overrides).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench_shared.h"
#include "grammask/matcher.h"

namespace {

using grammask_bench::read_file;
using grammask_bench::shared_dir;

const grammask::Vocabulary* deepseek() {
  static const auto vocab =
      grammask::Vocabulary::from_gguf_file(shared_dir() + "/bench/vocab/deepseek-llm.gguf");
  return vocab.ok() ? &*vocab : nullptr;
}

void replay_case(benchmark::State& state, const char* name, bool warm) {
  const grammask::Vocabulary* vocab = deepseek();
  const std::string gbnf = read_file(shared_dir() + "/bench/cases/" + name + "/grammar.gbnf");
  if (!vocab || gbnf.empty()) {
    state.SkipWithError("shared workload not found");
    return;
  }
  std::vector<uint32_t> trace;
  std::istringstream ids(read_file(shared_dir() + "/bench/traces/deepseek-llm/" + name + ".ids"));
  for (uint32_t id; ids >> id;) trace.push_back(id);
  auto compiled = grammask::CompiledGrammar::from_gbnf(gbnf, *vocab);
  if (!compiled.ok()) {
    state.SkipWithError(compiled.status().to_string().c_str());
    return;
  }
  std::vector<uint32_t> words(compiled->mask_words());
  grammask::Matcher warmed(*compiled);
  if (warm) {
    for (uint32_t id : trace) {
      warmed.fill_mask(words.data(), words.size());
      warmed.accept_token(id);
    }
  }
  for (auto _ : state) {
    grammask::Matcher m = warm ? warmed : grammask::Matcher(*compiled);
    if (warm) m.rollback(m.num_tokens());
    for (uint32_t id : trace) {
      m.fill_mask(words.data(), words.size());
      m.accept_token(id);
    }
    benchmark::DoNotOptimize(words.data());
  }
  state.counters["masks"] = benchmark::Counter(static_cast<double>(trace.size()),
                                               benchmark::Counter::kIsIterationInvariantRate);
}

void register_cases() {
  for (const char* name :
       {"arithmetic", "c-code", "chess", "free-text", "json-generic", "list-lines"}) {
    benchmark::RegisterBenchmark((std::string("BM_MaskCold/") + name).c_str(),
                                 [name](benchmark::State& s) { replay_case(s, name, false); })
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("BM_MaskWarm/") + name).c_str(),
                                 [name](benchmark::State& s) { replay_case(s, name, true); })
        ->Unit(benchmark::kMillisecond);
  }
}

const bool registered = (register_cases(), true);

}  // namespace
