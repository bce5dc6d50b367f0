// grammask samplers for llama.cpp (contracts in grammask_llama.h; the
// mapping of token attributes and the fail-closed policy are described in
// docs/integration.md).

#include "grammask_llama.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "grammask/bitmask.h"
#include "grammask/json_schema.h"
#include "grammask/lazy_matcher.h"
#include "grammask/matcher.h"
#include "grammask/structural_tag.h"
#include "grammask/vocabulary.h"

namespace {

using grammask::CompiledGrammar;
using grammask::LazyMatcher;
using grammask::Matcher;
using grammask::Status;
using grammask::TokenKind;
using grammask::Vocabulary;

// Checking a candidate costs a fraction of a microsecond; a mask that is not
// cached, tens to hundreds (docs/performance.md, "llama.cpp sampler").
constexpr uint32_t kDefaultSmallArrayMax = 64;

thread_local std::string last_error;

// The grammask kind of a llama.cpp token attribute (docs/integration.md).
TokenKind kind_of(llama_token_attr attr, bool special_as_text) {
  if (attr & LLAMA_TOKEN_ATTR_UNUSED) return TokenKind::kUnused;
  if (attr & (LLAMA_TOKEN_ATTR_UNKNOWN | LLAMA_TOKEN_ATTR_CONTROL)) {
    if (special_as_text) return TokenKind::kUserDefined;
    return (attr & LLAMA_TOKEN_ATTR_CONTROL) ? TokenKind::kControl : TokenKind::kUnknown;
  }
  if (attr & LLAMA_TOKEN_ATTR_BYTE) return TokenKind::kByte;
  if (attr & LLAMA_TOKEN_ATTR_USER_DEFINED) return TokenKind::kUserDefined;
  return TokenKind::kNormal;
}

// The bytes llama.cpp's grammar sampler reads for a token (special pieces
// spelled out, no leading-space stripping).
std::string token_piece(const llama_vocab* vocab, llama_token id) {
  char small[64];
  int32_t n = llama_token_to_piece(vocab, id, small, sizeof small, 0, true);
  if (n >= 0) return std::string(small, static_cast<size_t>(n));
  std::string piece(static_cast<size_t>(-n), '\0');
  n = llama_token_to_piece(vocab, id, piece.data(), -n, 0, true);
  piece.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return piece;
}

// FNV-1a over every token's text and attribute: tells a vocabulary apart
// from another one later allocated at the same address.
uint64_t fingerprint(const llama_vocab* vocab) {
  uint64_t hash = 1469598103934665603ull;
  auto mix = [&hash](unsigned char byte) { hash = (hash ^ byte) * 1099511628211ull; };
  const int32_t n = llama_vocab_n_tokens(vocab);
  for (llama_token id = 0; id < n; ++id) {
    const char* text = llama_vocab_get_text(vocab, id);
    for (const char* c = text ? text : ""; *c != '\0'; ++c) mix(static_cast<unsigned char>(*c));
    const auto attr = static_cast<uint32_t>(llama_vocab_get_attr(vocab, id));
    mix(static_cast<unsigned char>(attr));
    mix(static_cast<unsigned char>(attr >> 8));
    mix(llama_vocab_is_eog(vocab, id) ? 1 : 2);
  }
  return hash ^ static_cast<uint64_t>(n);
}

grammask::Result<Vocabulary> build_vocabulary(const llama_vocab* vocab, bool special_as_text) {
  grammask::DecodedVocabulary decoded;
  const int32_t n = llama_vocab_n_tokens(vocab);
  decoded.reserve(static_cast<size_t>(std::max(n, 0)), static_cast<size_t>(std::max(n, 0)) * 8);
  for (llama_token id = 0; id < n; ++id) {
    decoded.add_token(token_piece(vocab, id),
                      kind_of(llama_vocab_get_attr(vocab, id), special_as_text));
    if (llama_vocab_is_eog(vocab, id)) decoded.stop_ids.push_back(static_cast<uint32_t>(id));
  }
  const llama_token bos = llama_vocab_bos(vocab);
  if (bos >= 0 && bos < n) decoded.bos_id = static_cast<uint32_t>(bos);
  return Vocabulary::from_decoded(std::move(decoded));
}

// Vocabularies built so far, most recently used last. Small: a process
// rarely has more than a model or two loaded.
class VocabularyCache {
 public:
  grammask::Result<Vocabulary> get(const llama_vocab* vocab, bool special_as_text) {
    const uint64_t print = fingerprint(vocab);
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < entries_.size(); ++i) {
      Entry& entry = entries_[i];
      if (entry.vocab != vocab || entry.special_as_text != special_as_text) continue;
      if (entry.fingerprint != print) {
        entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
      std::rotate(entries_.begin() + static_cast<std::ptrdiff_t>(i),
                  entries_.begin() + static_cast<std::ptrdiff_t>(i) + 1, entries_.end());
      return entries_.back().vocabulary;
    }
    auto built = build_vocabulary(vocab, special_as_text);
    if (!built.ok()) return built;
    if (entries_.size() == kMaxEntries) entries_.erase(entries_.begin());
    entries_.push_back(Entry{vocab, special_as_text, print, *built});
    return built;
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.clear();
  }

 private:
  static constexpr size_t kMaxEntries = 4;
  struct Entry {
    const llama_vocab* vocab;
    bool special_as_text;
    uint64_t fingerprint;
    Vocabulary vocabulary;
  };
  std::mutex mutex_;
  std::vector<Entry> entries_;
};

VocabularyCache& vocabulary_cache() {
  static VocabularyCache* cache =
      new VocabularyCache;  // never destroyed: samplers may outlive main
  return *cache;
}

// One sampler's state. Exactly one of `matcher` and `lazy` is set, or
// neither for the no-op sampler of an empty grammar.
struct SamplerState {
  grammask_llama_params params{};
  std::optional<Vocabulary> vocabulary;
  std::optional<Matcher> matcher;
  std::optional<LazyMatcher> lazy;
  std::vector<uint32_t> words;
  std::string error;  // non-empty: failed closed

  bool active() const { return matcher.has_value() || lazy.has_value(); }
  size_t n_tokens() const { return vocabulary ? vocabulary->size() : 0; }

  Status fill_mask() {
    return matcher ? matcher->fill_mask(words.data(), words.size())
                   : lazy->fill_mask(words.data(), words.size());
  }
  bool is_token_allowed(uint32_t token) const {
    return matcher ? matcher->is_token_allowed(token) : lazy->is_token_allowed(token);
  }
  Status accept_token(uint32_t token) {
    return matcher ? matcher->accept_token(token) : lazy->accept_token(token);
  }
  void reset() {
    if (matcher) matcher->reset();
    if (lazy) lazy->reset();
    error.clear();
  }
  void fail(std::string message) { error = std::move(message); }
};

// Bit `id` of the mask; false for ids outside [0, n_tokens). No branches:
// allowed and refused candidates come in no predictable order.
inline bool allowed_in(const uint32_t* words, size_t n_tokens, llama_token id) {
  const auto index = static_cast<uint32_t>(id);  // negative ids wrap past n_tokens
  const bool in_range = index < n_tokens;
  const uint32_t clamped = in_range ? index : 0;
  return in_range & static_cast<bool>((words[clamped / 32] >> (clamped % 32)) & 1u);
}

const char* sampler_name(const llama_sampler*) {
  return "grammask";
}

SamplerState* state_of(const llama_sampler* sampler) {
  return static_cast<SamplerState*>(sampler->ctx);
}

// Sets -INFINITY on every candidate `allowed` refuses. The array stays
// marked sorted only if no allowed candidate follows a refused one (the
// refused ones then sit at its end). Branch-free in the loop.
template <typename Allowed>
void mask_candidates(llama_token_data_array* candidates, Allowed allowed) {
  llama_token_data* const data = candidates->data;
  const size_t size = candidates->size;
  if (!candidates->sorted) {  // the usual whole-vocabulary array: no order to keep track of
    for (size_t i = 0; i < size; ++i) {
      data[i].logit = allowed(data[i].id) ? data[i].logit : -INFINITY;
    }
    return;
  }
  bool refused_before = false;
  bool order_broken = false;
  for (size_t i = 0; i < size; ++i) {
    const bool ok = allowed(data[i].id);
    const float logit = data[i].logit;
    order_broken |= ok & refused_before;
    refused_before |= !ok & (logit != -INFINITY);
    data[i].logit = ok ? logit : -INFINITY;
  }
  if (order_broken) candidates->sorted = false;
}

void sampler_apply(llama_sampler* sampler, llama_token_data_array* candidates) {
  SamplerState& state = *state_of(sampler);
  if (!state.active()) return;
  const size_t n_tokens = state.n_tokens();
  const Vocabulary& vocabulary = *state.vocabulary;
  if (state.error.empty()) {
    const uint32_t small =
        state.params.small_array_max != 0 ? state.params.small_array_max : kDefaultSmallArrayMax;
    // Negative ids wrap past the vocabulary: refused like any id out of range.
    if (candidates->size <= small) {
      mask_candidates(candidates, [&](llama_token id) {
        return state.is_token_allowed(static_cast<uint32_t>(id));
      });
      return;
    }
    const Status status = state.fill_mask();
    if (status.ok()) {
      const uint32_t* const words = state.words.data();
      mask_candidates(candidates, [words, n_tokens](llama_token id) {
        return allowed_in(words, n_tokens, id);
      });
      return;
    }
    state.fail("grammask: mask: " + status.to_string());
  }
  // Failed closed: only end-of-generation tokens.
  mask_candidates(candidates,
                  [&](llama_token id) { return vocabulary.is_stop(static_cast<uint32_t>(id)); });
}

void sampler_accept(llama_sampler* sampler, llama_token token) {
  SamplerState& state = *state_of(sampler);
  if (!state.active() || !state.error.empty()) return;
  const Status status = state.accept_token(static_cast<uint32_t>(token));
  if (!status.ok()) {
    state.fail("grammask: accept of token " + std::to_string(token) + ": " + status.to_string());
  }
}

void sampler_reset(llama_sampler* sampler) {
  state_of(sampler)->reset();
}

llama_sampler* sampler_clone(const llama_sampler* sampler);

void sampler_free(llama_sampler* sampler) {
  delete state_of(sampler);
}

const llama_sampler_i sampler_interface = {
    /* .name   = */ sampler_name,
    /* .accept = */ sampler_accept,
    /* .apply  = */ sampler_apply,
    /* .reset  = */ sampler_reset,
    /* .clone  = */ sampler_clone,
    /* .free   = */ sampler_free,
};

llama_sampler* make_sampler(std::unique_ptr<SamplerState> state) {
  llama_sampler* sampler = llama_sampler_init(&sampler_interface, state.get());
  if (sampler != nullptr) state.release();
  return sampler;
}

llama_sampler* sampler_clone(const llama_sampler* sampler) {
  try {
    return make_sampler(std::make_unique<SamplerState>(*state_of(sampler)));
  } catch (const std::exception&) {
    return nullptr;
  }
}

grammask_llama_params params_or_default(const grammask_llama_params* params) {
  return params != nullptr ? *params : grammask_llama_default_params();
}

bool is_empty(const char* text) {
  return text == nullptr || text[0] == '\0';
}

// What every init function shares: the vocabulary, then `compile` (which
// returns the compiled grammar), then the matcher (lazy when `triggers`).
template <typename Compile>
llama_sampler* init_sampler(const llama_vocab* vocab, const grammask_llama_params& params,
                            Compile compile, const grammask::LazyTriggers* triggers) {
  last_error.clear();
  try {
    if (vocab == nullptr) {
      last_error = "grammask: no vocabulary (vocab is NULL)";
      return nullptr;
    }
    auto state = std::make_unique<SamplerState>();
    state->params = params;
    auto vocabulary = vocabulary_cache().get(vocab, params.special_tokens_as_text);
    if (!vocabulary.ok()) {
      last_error = "grammask: vocabulary: " + vocabulary.status().to_string();
      return nullptr;
    }
    state->vocabulary = *vocabulary;
    grammask::Result<CompiledGrammar> compiled = compile(*vocabulary);
    if (!compiled.ok()) {
      last_error = "grammask: " + compiled.status().to_string();
      return nullptr;
    }
    // At least one word, so that apply() may read word 0 for any id.
    state->words.assign(std::max<size_t>(compiled->mask_words(), 1), 0);
    if (triggers != nullptr) {
      auto lazy = LazyMatcher::create(*compiled, *triggers);
      if (!lazy.ok()) {
        last_error = "grammask: triggers: " + lazy.status().to_string();
        return nullptr;
      }
      state->lazy.emplace(std::move(lazy).value());
    } else {
      state->matcher.emplace(*compiled);
    }
    llama_sampler* sampler = make_sampler(std::move(state));
    if (sampler == nullptr) last_error = "grammask: llama_sampler_init failed";
    return sampler;
  } catch (const std::bad_alloc&) {
    last_error = "grammask: out of memory";
  } catch (const std::exception& e) {
    last_error = std::string("grammask: ") + e.what();
  }
  return nullptr;
}

llama_sampler* no_op_sampler(const grammask_llama_params& params) {
  last_error.clear();
  try {
    auto state = std::make_unique<SamplerState>();
    state->params = params;
    return make_sampler(std::move(state));
  } catch (const std::exception&) {
    last_error = "grammask: out of memory";
    return nullptr;
  }
}

// Copies llama.cpp's trigger tokens; false (with last_error) on a negative id.
bool add_trigger_tokens(const llama_token* tokens, size_t n, grammask::LazyTriggers& triggers) {
  for (size_t i = 0; i < n; ++i) {
    if (tokens[i] < 0) {
      last_error = "grammask: trigger token " + std::to_string(tokens[i]) + " is negative";
      return false;
    }
    triggers.tokens.push_back(static_cast<uint32_t>(tokens[i]));
  }
  return true;
}

auto gbnf_compiler(const char* grammar_str, const char* grammar_root) {
  std::string text = grammar_str;
  std::string root = is_empty(grammar_root) ? "root" : grammar_root;
  return [text = std::move(text), root = std::move(root)](const Vocabulary& vocabulary) {
    grammask::CompileOptions options;
    options.root = root;
    return CompiledGrammar::from_gbnf(text, vocabulary, options);
  };
}

}  // namespace

extern "C" {

grammask_llama_params grammask_llama_default_params(void) {
  grammask_llama_params params;
  params.special_tokens_as_text = false;
  params.small_array_max = kDefaultSmallArrayMax;
  params.json_whitespace = 0;
  params.json_any_order = false;
  return params;
}

llama_sampler* grammask_llama_init_grammar(const llama_vocab* vocab, const char* grammar_str,
                                           const char* grammar_root) {
  return grammask_llama_init_grammar_params(vocab, grammar_str, grammar_root, nullptr);
}

llama_sampler* grammask_llama_init_grammar_params(const llama_vocab* vocab, const char* grammar_str,
                                                  const char* grammar_root,
                                                  const grammask_llama_params* params) {
  const grammask_llama_params resolved = params_or_default(params);
  if (is_empty(grammar_str)) return no_op_sampler(resolved);
  try {
    return init_sampler(vocab, resolved, gbnf_compiler(grammar_str, grammar_root), nullptr);
  } catch (const std::exception&) {
    last_error = "grammask: out of memory";
    return nullptr;
  }
}

llama_sampler* grammask_llama_init_json_schema(const llama_vocab* vocab, const char* schema_json,
                                               const grammask_llama_params* params) {
  const grammask_llama_params resolved = params_or_default(params);
  if (schema_json == nullptr) {
    last_error = "grammask: no schema (schema_json is NULL)";
    return nullptr;
  }
  grammask::JsonSchemaOptions options;
  switch (resolved.json_whitespace) {
    case 1:
      options.whitespace = grammask::JsonSchemaOptions::Whitespace::kCompact;
      break;
    case 2:
      options.whitespace = grammask::JsonSchemaOptions::Whitespace::kIndented;
      break;
    default:
      options.whitespace = grammask::JsonSchemaOptions::Whitespace::kFlexible;
      break;
  }
  if (resolved.json_any_order) {
    options.property_order = grammask::JsonSchemaOptions::PropertyOrder::kAny;
  }
  const std::string schema = schema_json;
  return init_sampler(
      vocab, resolved,
      [&](const Vocabulary& vocabulary) -> grammask::Result<CompiledGrammar> {
        auto grammar = grammask::json_schema_to_grammar(schema, options);
        if (!grammar.ok()) return grammar.status();
        return CompiledGrammar::compile(*grammar, vocabulary);
      },
      nullptr);
}

llama_sampler* grammask_llama_init_structural_tag(const llama_vocab* vocab, const char* tag_json,
                                                  const grammask_llama_params* params) {
  if (tag_json == nullptr) {
    last_error = "grammask: no structural tag (tag_json is NULL)";
    return nullptr;
  }
  const std::string tag = tag_json;
  return init_sampler(
      vocab, params_or_default(params),
      [&](const Vocabulary& vocabulary) {
        return grammask::compile_structural_tag(tag, vocabulary);
      },
      nullptr);
}

llama_sampler* grammask_llama_init_grammar_lazy(const llama_vocab* vocab, const char* grammar_str,
                                                const char* grammar_root,
                                                const char** trigger_words,
                                                size_t num_trigger_words,
                                                const llama_token* trigger_tokens,
                                                size_t num_trigger_tokens) {
  const grammask_llama_params params = grammask_llama_default_params();
  if (is_empty(grammar_str)) return no_op_sampler(params);
  try {
    grammask::LazyTriggers triggers;
    for (size_t i = 0; i < num_trigger_words; ++i) {
      triggers.words.emplace_back(trigger_words[i] != nullptr ? trigger_words[i] : "");
    }
    if (!add_trigger_tokens(trigger_tokens, num_trigger_tokens, triggers)) return nullptr;
    return init_sampler(vocab, params, gbnf_compiler(grammar_str, grammar_root), &triggers);
  } catch (const std::exception&) {
    last_error = "grammask: out of memory";
    return nullptr;
  }
}

llama_sampler* grammask_llama_init_grammar_lazy_patterns(
    const llama_vocab* vocab, const char* grammar_str, const char* grammar_root,
    const char** trigger_patterns, size_t num_trigger_patterns, const llama_token* trigger_tokens,
    size_t num_trigger_tokens, const grammask_llama_params* params) {
  const grammask_llama_params resolved = params_or_default(params);
  if (is_empty(grammar_str)) return no_op_sampler(resolved);
  try {
    grammask::LazyTriggers triggers;
    for (size_t i = 0; i < num_trigger_patterns; ++i) {
      triggers.full_patterns.emplace_back(trigger_patterns[i] != nullptr ? trigger_patterns[i]
                                                                         : "");
    }
    if (!add_trigger_tokens(trigger_tokens, num_trigger_tokens, triggers)) return nullptr;
    return init_sampler(vocab, resolved, gbnf_compiler(grammar_str, grammar_root), &triggers);
  } catch (const std::exception&) {
    last_error = "grammask: out of memory";
    return nullptr;
  }
}

const char* grammask_llama_last_error(void) {
  return last_error.c_str();
}

const char* grammask_llama_sampler_error(const llama_sampler* sampler) {
  if (sampler == nullptr || sampler->iface != &sampler_interface) return nullptr;
  const SamplerState& state = *state_of(sampler);
  return state.error.empty() ? nullptr : state.error.c_str();
}

bool grammask_llama_is_accepting(const llama_sampler* sampler) {
  if (sampler == nullptr || sampler->iface != &sampler_interface) return false;
  const SamplerState& state = *state_of(sampler);
  if (state.matcher) return state.matcher->is_accepting();
  if (state.lazy) return !state.lazy->is_triggered() || state.lazy->is_accepting();
  return true;
}

void grammask_llama_clear_vocab_cache(void) {
  vocabulary_cache().clear();
}

}  // extern "C"
