// `grammask bench`: replays the shared workload as ../shared/bench/README.md
// prescribes and prints one JSON object per (vocab, case).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "grammask/bitmask.h"
#include "grammask/matcher.h"
#include "grammask/thread_pool.h"
#include "tool_common.h"

namespace grammask_tool {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double micros_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

struct BenchJob {
  std::string vocab_path;
  std::string constraint_path;
  Constraint kind = Constraint::kGbnf;
  std::string trace_path;
  std::string case_name;
};

struct RunResult {
  bool ok = false;
  std::string error;
  double compile_ms = 0;
  std::vector<double> mask_us;
  double accept_us_total = 0;
  size_t accepts = 0;
  size_t rejected = 0;
  bool capped = false;
  // Heap bytes (memory_bytes()): the grammar once compiled and after the
  // replay, and the matcher after it.
  size_t grammar_bytes = 0;
  size_t grammar_bytes_after = 0;
  size_t matcher_bytes = 0;
};

// Nearest-rank percentile of sorted values.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * sorted.size()));
  return sorted[std::min(sorted.size(), std::max<size_t>(rank, 1)) - 1];
}

RunResult run_once(const grammask::Vocabulary& vocab, const std::string& gbnf,
                   const std::vector<uint32_t>& trace) {
  RunResult r;
  const auto start = Clock::now();
  auto compiled = grammask::CompiledGrammar::from_gbnf(gbnf, vocab);
  r.compile_ms = micros_since(start) / 1000.0;
  if (!compiled.ok()) {
    r.error = compiled.status().to_string();
    return r;
  }
  r.grammar_bytes = compiled->memory_bytes();
  grammask::Matcher matcher(*compiled);
  std::vector<uint32_t> words(compiled->mask_words());
  const auto run_start = Clock::now();
  for (size_t i = 0; i <= trace.size(); ++i) {
    const auto t0 = Clock::now();
    grammask::Status s = matcher.fill_mask(words.data(), words.size());
    r.mask_us.push_back(micros_since(t0));
    if (const char* v = std::getenv("GRAMMASK_BENCH_VERBOSE"); v && std::string(v) == "steps") {
      std::string text;
      for (size_t j = 0; j < i; ++j) text += vocab.token_bytes(trace[j]);
      if (text.size() > 60) text = text.substr(text.size() - 60);
      for (char& c : text)
        if (c == '\n') c = '|';
      std::cerr << "step " << i << " " << r.mask_us.back() << " us  ..." << text << "\n";
    }
    if (!s.ok()) {
      r.error = s.to_string();
      return r;
    }
    if (i == trace.size()) {
      bool eos_allowed = false;
      for (uint32_t stop : vocab.stop_tokens())
        eos_allowed |= grammask::test_bit(words.data(), stop);
      if (!eos_allowed) ++r.rejected;
      break;
    }
    if (!grammask::test_bit(words.data(), trace[i])) ++r.rejected;
    const auto t1 = Clock::now();
    s = matcher.accept_token(trace[i]);
    r.accept_us_total += micros_since(t1);
    ++r.accepts;
    if (!s.ok()) {
      // The trace cannot go on past a refused token.
      r.rejected += trace.size() - i;
      break;
    }
    if (micros_since(run_start) > 60e6) {
      r.capped = true;
      break;
    }
  }
  r.ok = true;
  r.grammar_bytes_after = compiled->memory_bytes();
  r.matcher_bytes = matcher.memory_bytes();
  if (std::getenv("GRAMMASK_BENCH_VERBOSE"))
    std::cerr << "mask cache: " << matcher.mask_cache_hits() << " hits, "
              << matcher.mask_cache_misses() << " misses\n";
  return r;
}

bool read_trace(const std::string& path, std::vector<uint32_t>& out) {
  auto text = read_file(path);
  if (!text) return false;
  std::istringstream in(*text);
  unsigned long long v;
  while (in >> v) out.push_back(static_cast<uint32_t>(v));
  return in.eof();
}

std::string json_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// --batch N --threads T: N sequences replay the trace together, each step
// one fill_masks over the sequences not yet finished on a pool of T threads.
struct BatchResult {
  bool ok = false;
  std::string error;
  double compile_ms = 0;
  std::vector<double> step_us;  // wall time of each step's fill_masks
  size_t masks = 0;
};

BatchResult run_batch(const grammask::Vocabulary& vocab, const std::string& gbnf,
                      const std::vector<uint32_t>& trace, size_t batch, size_t threads) {
  BatchResult r;
  const auto start = Clock::now();
  auto compiled = grammask::CompiledGrammar::from_gbnf(gbnf, vocab);
  r.compile_ms = micros_since(start) / 1000.0;
  if (!compiled.ok()) {
    r.error = compiled.status().to_string();
    return r;
  }
  grammask::ThreadPool pool(threads);
  std::vector<grammask::Matcher> matchers(batch, grammask::Matcher(*compiled));
  std::vector<grammask::Matcher*> pointers;
  for (grammask::Matcher& m : matchers) pointers.push_back(&m);
  const size_t row_words = compiled->mask_words();
  std::vector<uint32_t> words(batch * row_words);
  for (size_t i = 0; i <= trace.size(); ++i) {
    const auto t0 = Clock::now();
    grammask::Status s =
        grammask::fill_masks(pointers.data(), batch, words.data(), row_words, pool);
    r.step_us.push_back(micros_since(t0));
    r.masks += batch;
    if (!s.ok()) {
      r.error = s.to_string();
      return r;
    }
    if (i == trace.size()) break;
    for (grammask::Matcher& m : matchers) {
      if (s = m.accept_token(trace[i]); !s.ok()) {
        r.error = "token " + std::to_string(i) + " refused: " + s.to_string();
        return r;
      }
    }
  }
  r.ok = true;
  return r;
}

bool run_batch_job(const BenchJob& job, const grammask::Vocabulary& vocab,
                   const std::vector<uint32_t>& trace, const std::string& gbnf, int runs,
                   size_t batch, size_t threads) {
  BatchResult best;
  double best_total = 0;
  for (int run = 0; run < runs; ++run) {
    BatchResult r = run_batch(vocab, gbnf, trace, batch, threads);
    if (!r.ok) {
      std::cerr << job.constraint_path << ": " << r.error << "\n";
      return false;
    }
    double total = 0;
    for (double v : r.step_us) total += v;
    if (run == 0 || total < best_total) {
      best = std::move(r);
      best_total = total;
    }
  }
  std::vector<double> sorted = best.step_us;
  std::sort(sorted.begin(), sorted.end());
  std::cout << "{\"vocab\":" << json_string(file_stem(job.vocab_path))
            << ",\"case\":" << json_string(job.case_name) << ",\"batch\":" << batch
            << ",\"threads\":" << threads << ",\"compile_ms\":" << json_number(best.compile_ms)
            << ",\"steps\":" << best.step_us.size() << ",\"step_us\":{\"mean\":"
            << json_number(best_total / std::max<size_t>(1, best.step_us.size()))
            << ",\"p50\":" << json_number(percentile(sorted, 50))
            << ",\"p99\":" << json_number(percentile(sorted, 99))
            << ",\"max\":" << json_number(sorted.empty() ? 0 : sorted.back()) << "}"
            << ",\"masks_per_s\":" << json_number(best.masks / (best_total / 1e6)) << "}"
            << std::endl;
  return true;
}

// Runs one (vocab, case); prints its JSON line. Returns false on errors.
bool run_job(const BenchJob& job, const grammask::Vocabulary& vocab, double vocab_ms, int runs,
             size_t batch, size_t threads) {
  std::vector<uint32_t> trace;
  if (!read_trace(job.trace_path, trace)) {
    std::cerr << "grammask: cannot read trace '" << job.trace_path << "'\n";
    return false;
  }
  bool io_error = false;
  auto gbnf = load_constraint_gbnf(job.constraint_path, job.kind, &io_error, &vocab);
  if (!gbnf) return false;
  if (batch > 0) return run_batch_job(job, vocab, trace, *gbnf, runs, batch, threads);
  RunResult best;
  double best_mean = 0;
  for (int run = 0; run < runs; ++run) {
    RunResult r = run_once(vocab, *gbnf, trace);
    if (!r.ok) {
      std::cerr << job.constraint_path << ": " << r.error << "\n";
      return false;
    }
    double mean = 0;
    for (double v : r.mask_us) mean += v;
    mean /= std::max<size_t>(1, r.mask_us.size());
    if (run == 0 || mean < best_mean) {
      best = std::move(r);
      best_mean = mean;
    }
  }
  std::vector<double> sorted = best.mask_us;
  std::sort(sorted.begin(), sorted.end());
  std::cout << "{\"vocab\":" << json_string(file_stem(job.vocab_path))
            << ",\"case\":" << json_string(job.case_name)
            << ",\"vocab_ms\":" << json_number(vocab_ms)
            << ",\"compile_ms\":" << json_number(best.compile_ms)
            << ",\"steps\":" << best.mask_us.size()
            << ",\"mask_us\":{\"mean\":" << json_number(best_mean)
            << ",\"p50\":" << json_number(percentile(sorted, 50))
            << ",\"p90\":" << json_number(percentile(sorted, 90))
            << ",\"p99\":" << json_number(percentile(sorted, 99))
            << ",\"max\":" << json_number(sorted.empty() ? 0 : sorted.back()) << "}"
            << ",\"accept_us_mean\":"
            << json_number(best.accepts ? best.accept_us_total / best.accepts : 0)
            << ",\"rejected\":" << best.rejected << ",\"bytes\":{\"vocab\":" << vocab.memory_bytes()
            << ",\"grammar\":" << best.grammar_bytes
            << ",\"grammar_after\":" << best.grammar_bytes_after
            << ",\"matcher\":" << best.matcher_bytes << "}";
  if (best.capped) std::cout << ",\"capped\":true";
  std::cout << "}" << std::endl;
  return true;
}

grammask::Result<grammask::Vocabulary> timed_vocabulary(const std::string& path, double* ms) {
  const auto start = Clock::now();
  auto vocab = load_vocabulary(path);
  *ms = micros_since(start) / 1000.0;
  return vocab;
}

}  // namespace

int run_bench(int argc, char** argv) {
  std::string suite, vocab_path, grammar, schema, tag, trace;
  int runs = 3;
  size_t batch = 0;    // 0: one sequence, timed step by step
  size_t threads = 1;  // with --batch
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](std::string& slot) {
      if (i + 1 >= argc) return false;
      slot = argv[++i];
      return true;
    };
    bool ok = true;
    if (arg == "--suite")
      ok = value(suite);
    else if (arg == "--vocab")
      ok = value(vocab_path);
    else if (arg == "--grammar")
      ok = value(grammar);
    else if (arg == "--schema")
      ok = value(schema);
    else if (arg == "--tag")
      ok = value(tag);
    else if (arg == "--trace")
      ok = value(trace);
    else if (arg == "--batch" || arg == "--threads") {
      std::string n;
      ok = value(n) && !n.empty() && n.size() < 6 &&
           n.find_first_not_of("0123456789") == std::string::npos && std::stoul(n) > 0;
      if (ok) (arg == "--batch" ? batch : threads) = std::stoul(n);
    } else if (arg == "--runs") {
      std::string n;
      ok = value(n) && !n.empty() && n.find_first_not_of("0123456789") == std::string::npos;
      if (ok) runs = std::max(1, std::min(100, std::stoi(n)));
    } else {
      std::cerr << "grammask: unknown bench option '" << arg << "'\n";
      return kExitUsage;
    }
    if (!ok) {
      std::cerr << "grammask: " << arg << " needs a value (--batch, --threads: a positive count)\n";
      return kExitUsage;
    }
  }

  std::vector<BenchJob> jobs;
  if (!suite.empty()) {
    std::error_code ec;
    std::vector<fs::path> vocabs, cases;
    for (const auto& e : fs::directory_iterator(fs::path(suite) / "vocab", ec))
      if (e.path().extension() == ".gguf") vocabs.push_back(e.path());
    for (const auto& e : fs::directory_iterator(fs::path(suite) / "cases", ec))
      if (e.is_directory()) cases.push_back(e.path());
    if (vocabs.empty() || cases.empty()) {
      std::cerr << "grammask: '" << suite << "' has no vocab/*.gguf or cases/*/\n";
      return kExitUsage;
    }
    std::sort(vocabs.begin(), vocabs.end());
    std::sort(cases.begin(), cases.end());
    for (const auto& v : vocabs)
      for (const auto& c : cases) {
        BenchJob job;
        job.vocab_path = v.string();
        job.kind = fs::exists(c / "schema.json") ? Constraint::kSchema
                   : fs::exists(c / "tag.json")  ? Constraint::kStructuralTag
                                                 : Constraint::kGbnf;
        job.constraint_path = (c / (job.kind == Constraint::kSchema          ? "schema.json"
                                    : job.kind == Constraint::kStructuralTag ? "tag.json"
                                                                             : "grammar.gbnf"))
                                  .string();
        job.case_name = c.filename().string();
        job.trace_path =
            (fs::path(suite) / "traces" / v.stem() / (job.case_name + ".ids")).string();
        jobs.push_back(job);
      }
  } else {
    const int given = !grammar.empty() + !schema.empty() + !tag.empty();
    if (vocab_path.empty() || given != 1 || trace.empty()) {
      std::cerr << "grammask: bench needs --suite DIR, or --vocab FILE, one of --grammar G, "
                   "--schema S or --tag TAG.json, "
                   "and --trace T\n";
      return kExitUsage;
    }
    BenchJob job;
    job.vocab_path = vocab_path;
    job.kind = !schema.empty() ? Constraint::kSchema
               : !tag.empty()  ? Constraint::kStructuralTag
                               : Constraint::kGbnf;
    job.constraint_path = !schema.empty() ? schema : !tag.empty() ? tag : grammar;
    job.trace_path = trace;
    job.case_name = fs::path(job.constraint_path).parent_path().filename().string();
    if (job.case_name.empty()) job.case_name = file_stem(job.constraint_path);
    jobs.push_back(job);
  }

  bool all_ok = true;
  std::string loaded_path;
  grammask::Result<grammask::Vocabulary> vocab =
      grammask::Status(grammask::ErrorCode::kInvalidState, "no vocabulary");
  double vocab_ms = 0;
  for (const BenchJob& job : jobs) {
    if (job.vocab_path != loaded_path) {
      vocab = timed_vocabulary(job.vocab_path, &vocab_ms);
      loaded_path = job.vocab_path;
      if (!vocab.ok()) std::cerr << job.vocab_path << ": " << vocab.status().to_string() << "\n";
    }
    if (!vocab.ok()) {
      all_ok = false;
      continue;
    }
    all_ok &= run_job(job, *vocab, vocab_ms, runs, batch, threads);
  }
  return all_ok ? kExitOk : kExitRejected;
}

}  // namespace grammask_tool
