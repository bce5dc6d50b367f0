// The C API: each handle owns the C++ object; each call converts a Status
// to a gm_status and keeps its message for gm_last_error(), and nothing
// thrown inside (std::bad_alloc) crosses the boundary.
#include "grammask/grammask_c.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grammask/bitmask.h"
#include "grammask/json_schema.h"
#include "grammask/lazy_matcher.h"
#include "grammask/matcher.h"
#include "grammask/structural_tag.h"
#include "grammask/thread_pool.h"
#include "grammask/vocabulary.h"

struct gm_vocabulary {
  grammask::Vocabulary vocabulary;
};
struct gm_grammar {
  grammask::CompiledGrammar grammar;
};
struct gm_matcher {
  grammask::CompiledGrammar grammar;  // keeps the grammar alive
  grammask::Matcher matcher;
};
struct gm_lazy_matcher {
  grammask::CompiledGrammar grammar;  // keeps the grammar alive
  grammask::LazyMatcher matcher;
};
struct gm_thread_pool {
  grammask::ThreadPool pool;
  explicit gm_thread_pool(size_t threads) : pool(threads) {}
};

namespace {

thread_local std::string last_error;

gm_status fail(gm_status code, std::string message) {
  last_error = std::move(message);
  return code;
}

gm_status status_of(const grammask::Status& status) {
  if (status.ok()) return GM_OK;
  gm_status code = GM_INVALID_ARGUMENT;
  switch (status.code()) {
    case grammask::ErrorCode::kOk:
      return GM_OK;
    case grammask::ErrorCode::kSyntax:
      code = GM_SYNTAX;
      break;
    case grammask::ErrorCode::kInvalidArgument:
      code = GM_INVALID_ARGUMENT;
      break;
    case grammask::ErrorCode::kLimitExceeded:
      code = GM_LIMIT_EXCEEDED;
      break;
    case grammask::ErrorCode::kIo:
      code = GM_IO;
      break;
    case grammask::ErrorCode::kUnsupported:
      code = GM_UNSUPPORTED;
      break;
    case grammask::ErrorCode::kInvalidState:
      code = GM_INVALID_STATE;
      break;
  }
  return fail(code, status.to_string());
}

gm_status null_argument(const char* what) {
  return fail(GM_INVALID_ARGUMENT, std::string(what) + " is NULL");
}

// Runs `body`, turning an escaping exception into a status.
template <typename Body>
gm_status guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(GM_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return fail(GM_INVALID_STATE, std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(GM_INVALID_STATE, "internal error");
  }
}

gm_status wrap_vocabulary(grammask::Result<grammask::Vocabulary> result, gm_vocabulary** out) {
  if (!result.ok()) return status_of(result.status());
  *out = new gm_vocabulary{std::move(result).value()};
  return GM_OK;
}

gm_status wrap_grammar(grammask::Result<grammask::CompiledGrammar> result, gm_grammar** out) {
  if (!result.ok()) return status_of(result.status());
  *out = new gm_grammar{std::move(result).value()};
  return GM_OK;
}

grammask::JsonSchemaOptions schema_options(const gm_json_schema_options* options) {
  gm_json_schema_options given;
  gm_json_schema_options_init(&given);
  if (options != nullptr) given = *options;
  grammask::JsonSchemaOptions out;
  using Whitespace = grammask::JsonSchemaOptions::Whitespace;
  out.whitespace = given.whitespace == 0   ? Whitespace::kCompact
                   : given.whitespace == 2 ? Whitespace::kIndented
                                           : Whitespace::kFlexible;
  out.max_whitespace_run = given.max_whitespace_run;
  out.indent = given.indent;
  out.property_order = given.any_property_order != 0
                           ? grammask::JsonSchemaOptions::PropertyOrder::kAny
                           : grammask::JsonSchemaOptions::PropertyOrder::kSchema;
  out.additional_properties_default = given.additional_properties_default != 0;
  out.assert_formats = given.assert_formats != 0;
  out.lenient = given.lenient != 0;
  return out;
}

}  // namespace

extern "C" {

const char* gm_last_error(void) {
  return last_error.c_str();
}

gm_status gm_vocabulary_from_file(const char* path, gm_vocabulary** out) {
  if (path == nullptr) return null_argument("path");
  if (out == nullptr) return null_argument("out");
  return guarded([&] {
    const std::string_view name(path);
    const bool gguf = name.size() >= 5 && name.substr(name.size() - 5) == ".gguf";
    return wrap_vocabulary(gguf ? grammask::Vocabulary::from_gguf_file(path)
                                : grammask::Vocabulary::from_tokenizer_json_file(path),
                           out);
  });
}

gm_status gm_vocabulary_from_gguf(const void* bytes, size_t size, gm_vocabulary** out) {
  if (bytes == nullptr && size > 0) return null_argument("bytes");
  if (out == nullptr) return null_argument("out");
  return guarded([&] {
    return wrap_vocabulary(
        grammask::Vocabulary::from_gguf(std::string_view(static_cast<const char*>(bytes), size)),
        out);
  });
}

gm_status gm_vocabulary_from_tokenizer_json(const char* json, size_t size, gm_vocabulary** out) {
  if (json == nullptr && size > 0) return null_argument("json");
  if (out == nullptr) return null_argument("out");
  return guarded([&] {
    return wrap_vocabulary(grammask::Vocabulary::from_tokenizer_json(std::string_view(json, size)),
                           out);
  });
}

gm_status gm_vocabulary_from_tokens(const char* const* bytes, const size_t* lengths,
                                    const uint8_t* kinds, size_t n_tokens, const uint32_t* stop_ids,
                                    size_t n_stop_ids, gm_vocabulary** out) {
  if (n_tokens > 0 && (bytes == nullptr || lengths == nullptr))
    return null_argument("bytes or lengths");
  if (n_stop_ids > 0 && stop_ids == nullptr) return null_argument("stop_ids");
  if (out == nullptr) return null_argument("out");
  return guarded([&] {
    grammask::DecodedVocabulary decoded;
    for (size_t i = 0; i < n_tokens; ++i) {
      const uint8_t kind = kinds != nullptr ? kinds[i] : uint8_t{GM_TOKEN_NORMAL};
      if (kind > GM_TOKEN_UNUSED) {
        return fail(GM_INVALID_ARGUMENT, "token " + std::to_string(i) + ": kind " +
                                             std::to_string(kind) + " is not a gm_token_kind");
      }
      if (bytes[i] == nullptr && lengths[i] > 0)
        return fail(GM_INVALID_ARGUMENT, "token " + std::to_string(i) + ": bytes are NULL");
      decoded.add_token(std::string_view(bytes[i], lengths[i]),
                        static_cast<grammask::TokenKind>(kind));
    }
    decoded.stop_ids.assign(stop_ids, stop_ids + n_stop_ids);
    return wrap_vocabulary(grammask::Vocabulary::from_decoded(std::move(decoded)), out);
  });
}

size_t gm_vocabulary_size(const gm_vocabulary* vocabulary) {
  return vocabulary != nullptr ? vocabulary->vocabulary.size() : 0;
}

size_t gm_vocabulary_memory_bytes(const gm_vocabulary* vocabulary) {
  return vocabulary != nullptr ? vocabulary->vocabulary.memory_bytes() : 0;
}

void gm_vocabulary_free(gm_vocabulary* vocabulary) {
  delete vocabulary;
}

void gm_json_schema_options_init(gm_json_schema_options* options) {
  if (options == nullptr) return;
  const grammask::JsonSchemaOptions defaults;
  options->whitespace = 1;
  options->max_whitespace_run = defaults.max_whitespace_run;
  options->indent = defaults.indent;
  options->any_property_order = 0;
  options->additional_properties_default = defaults.additional_properties_default ? 1 : 0;
  options->assert_formats = defaults.assert_formats ? 1 : 0;
  options->lenient = defaults.lenient ? 1 : 0;
}

gm_status gm_grammar_from_gbnf(const gm_vocabulary* vocabulary, const char* gbnf, size_t size,
                               gm_grammar** out) {
  if (vocabulary == nullptr) return null_argument("vocabulary");
  if (gbnf == nullptr && size > 0) return null_argument("gbnf");
  if (out == nullptr) return null_argument("out");
  return guarded([&] {
    return wrap_grammar(
        grammask::CompiledGrammar::from_gbnf(std::string_view(gbnf, size), vocabulary->vocabulary),
        out);
  });
}

gm_status gm_grammar_from_json_schema(const gm_vocabulary* vocabulary, const char* schema,
                                      size_t size, const gm_json_schema_options* options,
                                      gm_grammar** out) {
  if (vocabulary == nullptr) return null_argument("vocabulary");
  if (schema == nullptr && size > 0) return null_argument("schema");
  if (out == nullptr) return null_argument("out");
  return guarded([&] {
    auto grammar =
        grammask::json_schema_to_grammar(std::string_view(schema, size), schema_options(options));
    if (!grammar.ok()) return status_of(grammar.status());
    return wrap_grammar(grammask::CompiledGrammar::compile(*grammar, vocabulary->vocabulary), out);
  });
}

gm_status gm_grammar_from_structural_tag(const gm_vocabulary* vocabulary, const char* tag,
                                         size_t size, const gm_json_schema_options* options,
                                         gm_grammar** out) {
  if (vocabulary == nullptr) return null_argument("vocabulary");
  if (tag == nullptr && size > 0) return null_argument("tag");
  if (out == nullptr) return null_argument("out");
  return guarded([&] {
    grammask::StructuralTagOptions tag_options;
    tag_options.json_schema = schema_options(options);
    return wrap_grammar(grammask::compile_structural_tag(std::string_view(tag, size),
                                                         vocabulary->vocabulary, {}, tag_options),
                        out);
  });
}

size_t gm_grammar_mask_words(const gm_grammar* grammar) {
  return grammar != nullptr ? grammar->grammar.mask_words() : 0;
}

size_t gm_grammar_memory_bytes(const gm_grammar* grammar) {
  return grammar != nullptr ? grammar->grammar.memory_bytes() : 0;
}

size_t gm_grammar_cache_bytes(const gm_grammar* grammar) {
  return grammar != nullptr ? grammar->grammar.cache_bytes() : 0;
}

void gm_grammar_free(gm_grammar* grammar) {
  delete grammar;
}

gm_status gm_matcher_new(const gm_grammar* grammar, gm_matcher** out) {
  if (grammar == nullptr) return null_argument("grammar");
  if (out == nullptr) return null_argument("out");
  return guarded([&] {
    *out = new gm_matcher{grammar->grammar, grammask::Matcher(grammar->grammar)};
    return GM_OK;
  });
}

gm_status gm_matcher_clone(const gm_matcher* matcher, gm_matcher** out) {
  if (matcher == nullptr) return null_argument("matcher");
  if (out == nullptr) return null_argument("out");
  return guarded([&] {
    *out = new gm_matcher{matcher->grammar, matcher->matcher};
    return GM_OK;
  });
}

void gm_matcher_free(gm_matcher* matcher) {
  delete matcher;
}

gm_status gm_matcher_fill_mask(gm_matcher* matcher, uint32_t* words, size_t n_words) {
  if (matcher == nullptr) return null_argument("matcher");
  return guarded([&] { return status_of(matcher->matcher.fill_mask(words, n_words)); });
}

gm_status gm_matcher_accept_token(gm_matcher* matcher, uint32_t token) {
  if (matcher == nullptr) return null_argument("matcher");
  return guarded([&] { return status_of(matcher->matcher.accept_token(token)); });
}

gm_status gm_matcher_accept_bytes(gm_matcher* matcher, const char* bytes, size_t size) {
  if (matcher == nullptr) return null_argument("matcher");
  if (bytes == nullptr && size > 0) return null_argument("bytes");
  return guarded(
      [&] { return status_of(matcher->matcher.accept_bytes(std::string_view(bytes, size))); });
}

bool gm_matcher_is_token_allowed(const gm_matcher* matcher, uint32_t token) {
  if (matcher == nullptr) return false;
  try {
    return matcher->matcher.is_token_allowed(token);
  } catch (...) {
    return false;
  }
}

gm_status gm_matcher_rollback(gm_matcher* matcher, size_t n_tokens) {
  if (matcher == nullptr) return null_argument("matcher");
  return guarded([&] { return status_of(matcher->matcher.rollback(n_tokens)); });
}

void gm_matcher_reset(gm_matcher* matcher) {
  if (matcher != nullptr) matcher->matcher.reset();
}

size_t gm_matcher_num_tokens(const gm_matcher* matcher) {
  return matcher != nullptr ? matcher->matcher.num_tokens() : 0;
}

size_t gm_matcher_memory_bytes(const gm_matcher* matcher) {
  return matcher != nullptr ? matcher->matcher.memory_bytes() : 0;
}

bool gm_matcher_is_accepting(const gm_matcher* matcher) {
  return matcher != nullptr && matcher->matcher.is_accepting();
}

bool gm_matcher_is_terminated(const gm_matcher* matcher) {
  return matcher != nullptr && matcher->matcher.is_terminated();
}

gm_status gm_matcher_forced_bytes(const gm_matcher* matcher, size_t max_bytes, char* buffer,
                                  size_t capacity, size_t* length) {
  if (matcher == nullptr) return null_argument("matcher");
  if (buffer == nullptr && capacity > 0) return null_argument("buffer");
  if (length == nullptr) return null_argument("length");
  return guarded([&] {
    const std::string forced = matcher->matcher.forced_bytes(max_bytes);
    if (capacity > 0) std::memcpy(buffer, forced.data(), std::min(capacity, forced.size()));
    *length = forced.size();
    return GM_OK;
  });
}

gm_status gm_matcher_forced_tokens(const gm_matcher* matcher, gm_tokenize_fn tokenize,
                                   void* user_data, size_t max_bytes, uint32_t* out,
                                   size_t capacity, size_t* n_tokens) {
  if (matcher == nullptr) return null_argument("matcher");
  if (tokenize == nullptr) return null_argument("tokenize");
  if (out == nullptr && capacity > 0) return null_argument("out");
  if (n_tokens == nullptr) return null_argument("n_tokens");
  return guarded([&] {
    auto split = [&](std::string_view text) {
      std::vector<uint32_t> ids(text.size() + 1);
      size_t n = tokenize(user_data, text.data(), text.size(), ids.data(), ids.size());
      if (n > ids.size()) {
        ids.resize(n);
        n = std::min(n, tokenize(user_data, text.data(), text.size(), ids.data(), ids.size()));
      }
      ids.resize(n);
      return ids;
    };
    const std::vector<uint32_t> tokens = matcher->matcher.forced_tokens(split, max_bytes);
    if (capacity > 0) std::copy_n(tokens.begin(), std::min(capacity, tokens.size()), out);
    *n_tokens = tokens.size();
    return GM_OK;
  });
}

size_t gm_matcher_accept_draft(gm_matcher* matcher, const uint32_t* tokens, size_t n_tokens) {
  if (matcher == nullptr || tokens == nullptr) return 0;
  try {
    return matcher->matcher.accept_draft(tokens, n_tokens);
  } catch (...) {
    return 0;
  }
}

gm_status gm_matcher_fill_draft_masks(gm_matcher* matcher, const uint32_t* draft, size_t n_tokens,
                                      uint32_t* words, size_t row_words) {
  if (matcher == nullptr) return null_argument("matcher");
  return guarded([&] {
    return status_of(matcher->matcher.fill_draft_masks(draft, n_tokens, words, row_words));
  });
}

gm_status gm_lazy_matcher_new(const gm_grammar* grammar, const gm_lazy_triggers* triggers,
                              gm_lazy_matcher** out) {
  if (grammar == nullptr) return null_argument("grammar");
  if (triggers == nullptr) return null_argument("triggers");
  if (out == nullptr) return null_argument("out");
  return guarded([&] {
    grammask::LazyTriggers lazy;
    auto strings = [](const char* const* list, size_t n, const char* what,
                      std::vector<std::string>& to) {
      if (n > 0 && list == nullptr) return null_argument(what);
      for (size_t i = 0; i < n; ++i) {
        if (list[i] == nullptr)
          return fail(GM_INVALID_ARGUMENT,
                      std::string(what) + "[" + std::to_string(i) + "] is NULL");
        to.emplace_back(list[i]);
      }
      return GM_OK;
    };
    gm_status s = strings(triggers->words, triggers->n_words, "words", lazy.words);
    if (s == GM_OK)
      s = strings(triggers->patterns, triggers->n_patterns, "patterns", lazy.patterns);
    if (s == GM_OK) {
      s = strings(triggers->full_patterns, triggers->n_full_patterns, "full_patterns",
                  lazy.full_patterns);
    }
    if (s != GM_OK) return s;
    if (triggers->n_tokens > 0 && triggers->tokens == nullptr) return null_argument("tokens");
    lazy.tokens.assign(triggers->tokens, triggers->tokens + triggers->n_tokens);
    auto created = grammask::LazyMatcher::create(grammar->grammar, lazy);
    if (!created.ok()) return status_of(created.status());
    *out = new gm_lazy_matcher{grammar->grammar, std::move(created).value()};
    return GM_OK;
  });
}

gm_status gm_lazy_matcher_clone(const gm_lazy_matcher* matcher, gm_lazy_matcher** out) {
  if (matcher == nullptr) return null_argument("matcher");
  if (out == nullptr) return null_argument("out");
  return guarded([&] {
    *out = new gm_lazy_matcher{matcher->grammar, matcher->matcher};
    return GM_OK;
  });
}

void gm_lazy_matcher_free(gm_lazy_matcher* matcher) {
  delete matcher;
}

gm_status gm_lazy_matcher_fill_mask(gm_lazy_matcher* matcher, uint32_t* words, size_t n_words) {
  if (matcher == nullptr) return null_argument("matcher");
  return guarded([&] { return status_of(matcher->matcher.fill_mask(words, n_words)); });
}

gm_status gm_lazy_matcher_accept_token(gm_lazy_matcher* matcher, uint32_t token) {
  if (matcher == nullptr) return null_argument("matcher");
  return guarded([&] { return status_of(matcher->matcher.accept_token(token)); });
}

bool gm_lazy_matcher_is_token_allowed(gm_lazy_matcher* matcher, uint32_t token) {
  if (matcher == nullptr) return false;
  try {
    return matcher->matcher.is_token_allowed(token);
  } catch (...) {
    return false;
  }
}

gm_status gm_lazy_matcher_rollback(gm_lazy_matcher* matcher, size_t n_tokens) {
  if (matcher == nullptr) return null_argument("matcher");
  return guarded([&] { return status_of(matcher->matcher.rollback(n_tokens)); });
}

void gm_lazy_matcher_reset(gm_lazy_matcher* matcher) {
  if (matcher != nullptr) matcher->matcher.reset();
}

bool gm_lazy_matcher_is_triggered(const gm_lazy_matcher* matcher) {
  return matcher != nullptr && matcher->matcher.is_triggered();
}

bool gm_lazy_matcher_is_accepting(const gm_lazy_matcher* matcher) {
  return matcher != nullptr && matcher->matcher.is_accepting();
}

bool gm_lazy_matcher_is_terminated(const gm_lazy_matcher* matcher) {
  return matcher != nullptr && matcher->matcher.is_terminated();
}

size_t gm_lazy_matcher_num_tokens(const gm_lazy_matcher* matcher) {
  return matcher != nullptr ? matcher->matcher.num_tokens() : 0;
}

gm_status gm_thread_pool_new(size_t threads, gm_thread_pool** out) {
  if (out == nullptr) return null_argument("out");
  return guarded([&] {
    *out = new gm_thread_pool(threads);
    return GM_OK;
  });
}

void gm_thread_pool_free(gm_thread_pool* pool) {
  delete pool;
}

gm_status gm_fill_masks(gm_matcher* const* matchers, size_t n_matchers, uint32_t* words,
                        size_t row_words, gm_thread_pool* pool) {
  if (n_matchers == 0) return GM_OK;
  if (matchers == nullptr) return null_argument("matchers");
  if (words == nullptr) return null_argument("words");
  return guarded([&] {
    std::vector<grammask::Matcher*> inner(n_matchers);
    for (size_t i = 0; i < n_matchers; ++i) {
      if (matchers[i] == nullptr)
        return fail(GM_INVALID_ARGUMENT, "matchers[" + std::to_string(i) + "] is NULL");
      inner[i] = &matchers[i]->matcher;
    }
    if (pool == nullptr)
      return status_of(grammask::fill_masks(inner.data(), n_matchers, words, row_words, 1));
    return status_of(grammask::fill_masks(inner.data(), n_matchers, words, row_words, pool->pool));
  });
}

void gm_apply_mask(float* logits, size_t n_logits, const uint32_t* words) {
  if (logits == nullptr || words == nullptr) return;
  grammask::apply_mask(logits, n_logits, words);
}

}  // extern "C"
