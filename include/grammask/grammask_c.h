/* grammask's C API: the library behind opaque handles, for engines in C,
 * Rust, Go, C# or Python (ctypes/cffi). C11; no C++ types and no exceptions
 * cross it. Every buffer is the caller's: grammask reads or writes it during
 * the call only.
 *
 *   gm_vocabulary* vocab;  gm_grammar* grammar;  gm_matcher* matcher;
 *   if (gm_vocabulary_from_file("model.gguf", &vocab) != GM_OK) fail(gm_last_error());
 *   gm_grammar_from_gbnf(vocab, gbnf, strlen(gbnf), NULL, &grammar);
 *   gm_matcher_new(grammar, &matcher);
 *   uint32_t* mask = malloc(4 * gm_grammar_mask_words(grammar));
 *   gm_matcher_fill_mask(matcher, mask, gm_grammar_mask_words(grammar));
 *   gm_apply_mask(logits, n_logits, mask);
 *   gm_matcher_accept_token(matcher, token);
 *
 * Errors: a function that can fail returns a gm_status; GM_OK is 0. On
 * failure gm_last_error() gives the message (with line:column or a JSON
 * pointer where the input has one) until the next failing call on the same
 * thread. Output handles are set only on success. Passing NULL where a
 * handle or buffer is required fails with GM_INVALID_ARGUMENT.
 *
 * Threads: handles follow the C++ classes. A gm_vocabulary and a gm_grammar
 * may be used from any number of threads at once (they are immutable); a
 * gm_matcher by one thread at a time. A grammar keeps its vocabulary alive
 * and a matcher its grammar: handles may be freed in any order.
 */
#ifndef GRAMMASK_GRAMMASK_C_H_
#define GRAMMASK_GRAMMASK_C_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gm_status {
  GM_OK = 0,
  GM_SYNTAX = 1,           /* malformed grammar, schema, tag or file */
  GM_INVALID_ARGUMENT = 2, /* a value out of range, a NULL handle, a refused token */
  GM_LIMIT_EXCEEDED = 3,   /* a resource bound was passed (the message names it) */
  GM_IO = 4,               /* a file could not be read */
  GM_UNSUPPORTED = 5,      /* valid input grammask cannot enforce exactly */
  GM_INVALID_STATE = 6,    /* not allowed in the object's state (e.g. after termination) */
  GM_OUT_OF_MEMORY = 7
} gm_status;

/* The message of the last failure on this thread ("" if none). */
const char* gm_last_error(void);

typedef struct gm_vocabulary gm_vocabulary;
typedef struct gm_grammar gm_grammar;
typedef struct gm_matcher gm_matcher;
typedef struct gm_thread_pool gm_thread_pool;

/* ---- Vocabularies ------------------------------------------------------ */

/* A GGUF file (by its ".gguf" name) or a Hugging Face tokenizer.json. */
gm_status gm_vocabulary_from_file(const char* path, gm_vocabulary** out);
gm_status gm_vocabulary_from_gguf(const void* bytes, size_t size, gm_vocabulary** out);
gm_status gm_vocabulary_from_tokenizer_json(const char* json, size_t size, gm_vocabulary** out);

/* What a token stands for; the values of grammask::TokenKind. */
typedef enum gm_token_kind {
  GM_TOKEN_NORMAL = 0,       /* ordinary text */
  GM_TOKEN_BYTE = 1,         /* one raw byte (SentencePiece <0xHH>) */
  GM_TOKEN_USER_DEFINED = 2, /* text added by the tokenizer's author */
  GM_TOKEN_CONTROL = 3,      /* special: never matches grammar text */
  GM_TOKEN_UNKNOWN = 4,
  GM_TOKEN_UNUSED = 5 /* never allowed */
} gm_token_kind;

/* Token i spells bytes[i][0 .. lengths[i]) and is of kinds[i] (NULL: every
 * token GM_TOKEN_NORMAL); stop_ids end generation. */
gm_status gm_vocabulary_from_tokens(const char* const* bytes, const size_t* lengths,
                                    const uint8_t* kinds, size_t n_tokens, const uint32_t* stop_ids,
                                    size_t n_stop_ids, gm_vocabulary** out);
size_t gm_vocabulary_size(const gm_vocabulary* vocabulary);
/* Heap bytes (Vocabulary::memory_bytes); 0 for NULL. */
size_t gm_vocabulary_memory_bytes(const gm_vocabulary* vocabulary);
void gm_vocabulary_free(gm_vocabulary* vocabulary);

/* ---- Compiled grammars ------------------------------------------------- */

/* Options of the JSON Schema converter (grammask::JsonSchemaOptions); fill
 * with gm_json_schema_options_init, then change fields. */
typedef struct gm_json_schema_options {
  int whitespace;                    /* 0 compact, 1 flexible (default), 2 indented */
  uint32_t max_whitespace_run;       /* flexible: longest blank run (20; +4/level after \n) */
  uint32_t indent;                   /* indented: spaces per level (2) */
  int any_property_order;            /* 0: schema order (default); 1: any order */
  int additional_properties_default; /* value of a missing additionalProperties (1) */
  int assert_formats;                /* `format` asserts (1) */
  int lenient;                       /* drop what cannot be enforced instead of failing (0) */
} gm_json_schema_options;
void gm_json_schema_options_init(gm_json_schema_options* options);

/* GBNF text (start rule "root"), a JSON Schema, or a structural tag
 * (XGrammar's JSON format) compiled against `vocabulary`. `options` may be
 * NULL for the defaults. */
gm_status gm_grammar_from_gbnf(const gm_vocabulary* vocabulary, const char* gbnf, size_t size,
                               gm_grammar** out);
gm_status gm_grammar_from_json_schema(const gm_vocabulary* vocabulary, const char* schema,
                                      size_t size, const gm_json_schema_options* options,
                                      gm_grammar** out);
gm_status gm_grammar_from_structural_tag(const gm_vocabulary* vocabulary, const char* tag,
                                         size_t size, const gm_json_schema_options* options,
                                         gm_grammar** out);
/* Words a mask must have: ceil(vocabulary size / 32). */
size_t gm_grammar_mask_words(const gm_grammar* grammar);
/* Heap bytes without the vocabulary, and the part that is cached walks
 * (CompiledGrammar::memory_bytes, cache_bytes); 0 for NULL. */
size_t gm_grammar_memory_bytes(const gm_grammar* grammar);
size_t gm_grammar_cache_bytes(const gm_grammar* grammar);
void gm_grammar_free(gm_grammar* grammar);

/* ---- Matchers ---------------------------------------------------------- */

gm_status gm_matcher_new(const gm_grammar* grammar, gm_matcher** out);
/* An independent copy (a fork for beam search). */
gm_status gm_matcher_clone(const gm_matcher* matcher, gm_matcher** out);
void gm_matcher_free(gm_matcher* matcher);

/* Bit i%32 of words[i/32] set iff token i may come next. */
gm_status gm_matcher_fill_mask(gm_matcher* matcher, uint32_t* words, size_t n_words);
gm_status gm_matcher_accept_token(gm_matcher* matcher, uint32_t token);
gm_status gm_matcher_accept_bytes(gm_matcher* matcher, const char* bytes, size_t size);
bool gm_matcher_is_token_allowed(const gm_matcher* matcher, uint32_t token);
/* Undoes the last n accepted tokens (accept_bytes counts as one). */
gm_status gm_matcher_rollback(gm_matcher* matcher, size_t n_tokens);
void gm_matcher_reset(gm_matcher* matcher);
size_t gm_matcher_num_tokens(const gm_matcher* matcher);
/* Heap bytes without the grammar (Matcher::memory_bytes); 0 for NULL. */
size_t gm_matcher_memory_bytes(const gm_matcher* matcher);
bool gm_matcher_is_accepting(const gm_matcher* matcher);
bool gm_matcher_is_terminated(const gm_matcher* matcher);
/* The forced continuation (jump-forward bytes), at most `max_bytes` of it:
 * writes min(length, capacity) bytes to `buffer` and sets *length to the
 * whole length, so a call with a small buffer tells the size to allocate. */
gm_status gm_matcher_forced_bytes(const gm_matcher* matcher, size_t max_bytes, char* buffer,
                                  size_t capacity, size_t* length);

/* Jump-forward tokens (Matcher::forced_tokens). `tokenize` is the engine's
 * tokenizer: it writes the ids of text[0 .. size) to tokens (at most
 * capacity of them) and returns how many the whole text has; it is called
 * again with room for all when capacity was short. Writes at most
 * `capacity` ids to `out` and sets *n_tokens to how many there are. */
typedef size_t (*gm_tokenize_fn)(void* user_data, const char* text, size_t size, uint32_t* tokens,
                                 size_t capacity);
gm_status gm_matcher_forced_tokens(const gm_matcher* matcher, gm_tokenize_fn tokenize,
                                   void* user_data, size_t max_bytes, uint32_t* out,
                                   size_t capacity, size_t* n_tokens);

/* Speculative decoding (Matcher::accept_draft, fill_draft_masks): accept
 * draft tokens until one is refused, returning how many were accepted; or
 * fill the n_tokens + 1 verifier masks, rows of row_words words, leaving
 * the state as it was. */
size_t gm_matcher_accept_draft(gm_matcher* matcher, const uint32_t* tokens, size_t n_tokens);
gm_status gm_matcher_fill_draft_masks(gm_matcher* matcher, const uint32_t* draft, size_t n_tokens,
                                      uint32_t* words, size_t row_words);

/* ---- Lazy grammars ----------------------------------------------------- */

/* Free text until a trigger fires, then the grammar (grammask::LazyMatcher,
 * llama.cpp's trigger semantics: docs/lazy-grammars.md). Strings are
 * NUL-terminated; any list may be empty (NULL with a count of 0). */
typedef struct gm_lazy_triggers {
  const char* const* words; /* fire when the output contains one */
  size_t n_words;
  const char* const* patterns; /* ECMA-262: fire when the output contains a match */
  size_t n_patterns;
  const char* const* full_patterns; /* fire when the whole output matches */
  size_t n_full_patterns;
  const uint32_t* tokens; /* fire when sampled */
  size_t n_tokens;
} gm_lazy_triggers;

typedef struct gm_lazy_matcher gm_lazy_matcher;
gm_status gm_lazy_matcher_new(const gm_grammar* grammar, const gm_lazy_triggers* triggers,
                              gm_lazy_matcher** out);
gm_status gm_lazy_matcher_clone(const gm_lazy_matcher* matcher, gm_lazy_matcher** out);
void gm_lazy_matcher_free(gm_lazy_matcher* matcher);
gm_status gm_lazy_matcher_fill_mask(gm_lazy_matcher* matcher, uint32_t* words, size_t n_words);
gm_status gm_lazy_matcher_accept_token(gm_lazy_matcher* matcher, uint32_t token);
/* Not const: the check uses the matcher's scratch state. */
bool gm_lazy_matcher_is_token_allowed(gm_lazy_matcher* matcher, uint32_t token);
gm_status gm_lazy_matcher_rollback(gm_lazy_matcher* matcher, size_t n_tokens);
void gm_lazy_matcher_reset(gm_lazy_matcher* matcher);
bool gm_lazy_matcher_is_triggered(const gm_lazy_matcher* matcher);
bool gm_lazy_matcher_is_accepting(const gm_lazy_matcher* matcher);
bool gm_lazy_matcher_is_terminated(const gm_lazy_matcher* matcher);
size_t gm_lazy_matcher_num_tokens(const gm_lazy_matcher* matcher);

/* ---- Batches and logits ------------------------------------------------ */

/* A pool of `threads` threads (0: hardware concurrency), reused by calls. */
gm_status gm_thread_pool_new(size_t threads, gm_thread_pool** out);
void gm_thread_pool_free(gm_thread_pool* pool);
/* Row i of `words` (rows of row_words words) receives matchers[i]'s mask,
 * each matcher on one thread of `pool` (NULL: the calling thread only). */
gm_status gm_fill_masks(gm_matcher* const* matchers, size_t n_matchers, uint32_t* words,
                        size_t row_words, gm_thread_pool* pool);

/* Sets logits[i] to -infinity where bit i of words is clear (SIMD). */
void gm_apply_mask(float* logits, size_t n_logits, const uint32_t* words);

#ifdef __cplusplus
}
#endif

#endif /* GRAMMASK_GRAMMASK_C_H_ */
