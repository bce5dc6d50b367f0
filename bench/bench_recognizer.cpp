// Recognizer throughput: each shared case's text pushed byte by byte through
// a fresh Recognizer (bytes/s), plus the pathological grammars of the
// foundation issue on 100 KB inputs. Shared cases skip when ../shared is
// absent ($GRAMMASK_SHARED_DIR overrides).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "bench_shared.h"
#include "grammask/gbnf.h"
#include "grammask/json_schema.h"
#include "grammask/recognizer.h"

namespace {

using grammask_bench::read_file;
using grammask_bench::shared_dir;

void run(benchmark::State& state, const std::string& gbnf, const std::string& text) {
  auto grammar = grammask::parse_gbnf(gbnf);
  if (!grammar.ok()) {
    state.SkipWithError(grammar.status().to_string().c_str());
    return;
  }
  auto recognizer = grammask::Recognizer::create(*grammar);
  if (!recognizer.ok()) {
    state.SkipWithError(recognizer.status().to_string().c_str());
    return;
  }
  for (auto _ : state) {
    recognizer->reset();
    if (recognizer->push_bytes(text) != text.size() || !recognizer->is_accepting()) {
      state.SkipWithError("text rejected");
      return;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

void shared_case(benchmark::State& state, const char* name) {
  const std::string dir = shared_dir() + "/bench/cases/" + name;
  std::string gbnf = read_file(dir + "/grammar.gbnf");
  if (gbnf.empty()) {
    auto converted = grammask::json_schema_to_gbnf(read_file(dir + "/schema.json"));
    if (!converted.ok()) {
      state.SkipWithError("case not found or schema not converted");
      return;
    }
    gbnf = *converted;
  }
  run(state, gbnf, read_file(dir + "/text.txt"));
}

void BM_AmbiguousStars(benchmark::State& state) {
  run(state, "root ::= as as\nas ::= \"a\"*", std::string(100000, 'a'));
}
void BM_OptionalChain50(benchmark::State& state) {
  std::string g = "root ::= item*\nitem ::=";
  for (int i = 0; i < 50; ++i) g += " x?";
  g += " \";\"\nx ::= \"x\"";
  std::string text;
  while (text.size() < 100000) text += "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx;";
  run(state, g, text);
}
void BM_RightRecursion(benchmark::State& state) {
  run(state, "root ::= \"a\" root | \"\"", std::string(100000, 'a'));
}
void BM_LeftRecursion(benchmark::State& state) {
  run(state, "root ::= root \"a\" | \"\"", std::string(100000, 'a'));
}
BENCHMARK(BM_AmbiguousStars)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OptionalChain50)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RightRecursion)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LeftRecursion)->Unit(benchmark::kMillisecond);

void register_cases() {
  for (const char* name : {"arithmetic", "c-code", "chess", "free-text", "json-generic",
                           "list-lines", "schema-events", "schema-person", "schema-tree"}) {
    benchmark::RegisterBenchmark((std::string("BM_Recognize/") + name).c_str(),
                                 [name](benchmark::State& s) { shared_case(s, name); })
        ->Unit(benchmark::kMicrosecond);
  }
}
const bool registered = (register_cases(), true);

}  // namespace
