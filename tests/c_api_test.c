/* The C API from C11: vocabularies, grammars from GBNF, JSON Schema and a
 * structural tag, matcher calls, errors with messages, batches, forced
 * bytes and logits; a real vocabulary when GRAMMASK_SHARED_DIR is set. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammask/grammask_c.h"

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

#define CHECK_OK(call)                                                                        \
  do {                                                                                        \
    gm_status status_ = (call);                                                               \
    if (status_ != GM_OK) {                                                                   \
      fprintf(stderr, "%s:%d: %s failed (%d): %s\n", __FILE__, __LINE__, #call, (int)status_, \
              gm_last_error());                                                               \
      ++failures;                                                                             \
    }                                                                                         \
  } while (0)

static int bit(const uint32_t* words, uint32_t id) {
  return (int)((words[id / 32] >> (id % 32)) & 1u);
}

/* 0 "</s>" (stop, control), 1 "<|call|>" (control), then text tokens. */
static const char* const kTokens[] = {"</s>", "<|call|>", "{", "}", "\"", "a",
                                      "b",    ":",        "1", " ", "ab", "x"};
enum { kN = sizeof kTokens / sizeof kTokens[0] };

static gm_vocabulary* small_vocabulary(void) {
  size_t lengths[kN];
  uint8_t kinds[kN];
  for (size_t i = 0; i < kN; ++i) {
    lengths[i] = strlen(kTokens[i]);
    kinds[i] = i < 2 ? GM_TOKEN_CONTROL : GM_TOKEN_NORMAL;
  }
  const uint32_t stops[] = {0};
  gm_vocabulary* vocab = NULL;
  CHECK_OK(gm_vocabulary_from_tokens(kTokens, lengths, kinds, kN, stops, 1, &vocab));
  return vocab;
}

static void test_gbnf(gm_vocabulary* vocab) {
  const char* gbnf = "root ::= \"a\"+ \"b\"";
  gm_grammar* grammar = NULL;
  CHECK_OK(gm_grammar_from_gbnf(vocab, gbnf, strlen(gbnf), &grammar));
  CHECK(gm_grammar_mask_words(grammar) == 1);
  CHECK(gm_vocabulary_memory_bytes(vocab) > 0 && gm_vocabulary_memory_bytes(NULL) == 0);
  CHECK(gm_grammar_memory_bytes(grammar) >= gm_grammar_cache_bytes(grammar));
  CHECK(gm_grammar_memory_bytes(grammar) > 0 && gm_grammar_memory_bytes(NULL) == 0);
  gm_matcher* m = NULL;
  CHECK_OK(gm_matcher_new(grammar, &m));
  CHECK(gm_matcher_memory_bytes(m) > 0 && gm_matcher_memory_bytes(NULL) == 0);
  gm_grammar_free(grammar); /* the matcher keeps it alive */
  uint32_t words[1];
  CHECK_OK(gm_matcher_fill_mask(m, words, 1));
  CHECK(bit(words, 5) && bit(words, 10) && !bit(words, 6) && !bit(words, 0));
  CHECK(gm_matcher_is_token_allowed(m, 5));
  CHECK(!gm_matcher_is_token_allowed(m, 6));
  CHECK(gm_matcher_accept_token(m, 6) == GM_INVALID_ARGUMENT);
  CHECK(strlen(gm_last_error()) > 0);
  CHECK_OK(gm_matcher_accept_token(m, 5));
  gm_matcher* fork = NULL;
  CHECK_OK(gm_matcher_clone(m, &fork));
  CHECK_OK(gm_matcher_accept_bytes(m, "ab", 2));
  CHECK(gm_matcher_is_accepting(m));
  CHECK(gm_matcher_num_tokens(m) == 2);
  CHECK_OK(gm_matcher_accept_token(m, 0));
  CHECK(gm_matcher_is_terminated(m));
  CHECK_OK(gm_matcher_rollback(m, 2));
  CHECK(!gm_matcher_is_accepting(m));
  CHECK(gm_matcher_rollback(m, 5) == GM_INVALID_ARGUMENT);
  CHECK(gm_matcher_num_tokens(fork) == 1 && !gm_matcher_is_accepting(fork));
  gm_matcher_reset(m);
  CHECK(gm_matcher_num_tokens(m) == 0);
  CHECK(gm_matcher_fill_mask(m, words, 0) == GM_INVALID_ARGUMENT);

  /* Batches: two matchers at different states, on a pool and inline. */
  uint32_t rows[2];
  gm_matcher* batch[2] = {m, fork};
  gm_thread_pool* pool = NULL;
  CHECK_OK(gm_thread_pool_new(2, &pool));
  CHECK_OK(gm_fill_masks(batch, 2, rows, 1, pool));
  CHECK(bit(&rows[0], 5) && !bit(&rows[0], 6));
  CHECK(bit(&rows[1], 5) && bit(&rows[1], 6));
  rows[0] = rows[1] = 0;
  CHECK_OK(gm_fill_masks(batch, 2, rows, 1, NULL));
  CHECK(bit(&rows[1], 6));
  gm_thread_pool_free(pool);

  /* Logits. */
  float logits[kN];
  for (size_t i = 0; i < kN; ++i) logits[i] = 1.0f;
  CHECK_OK(gm_matcher_fill_mask(m, words, 1));
  gm_apply_mask(logits, kN, words);
  CHECK(logits[5] == 1.0f && isinf(logits[6]) && logits[6] < 0);
  gm_matcher_free(m);
  gm_matcher_free(fork);
}

static void test_errors(gm_vocabulary* vocab) {
  gm_grammar* grammar = NULL;
  const char* bad = "root ::= (\"a\"";
  CHECK(gm_grammar_from_gbnf(vocab, bad, strlen(bad), &grammar) == GM_SYNTAX);
  CHECK(grammar == NULL);
  CHECK(strstr(gm_last_error(), "1:") != NULL);
  const char* schema =
      "{\"type\": \"array\", \"uniqueItems\": true, \"items\": {\"type\": \"object\"}}";
  CHECK(gm_grammar_from_json_schema(vocab, schema, strlen(schema), NULL, &grammar) ==
        GM_UNSUPPORTED);
  CHECK(strstr(gm_last_error(), "uniqueItems") != NULL);
  const char* tag = "{\"type\": \"token\", \"token\": \"<|nope|>\"}";
  CHECK(gm_grammar_from_structural_tag(vocab, tag, strlen(tag), NULL, &grammar) ==
        GM_INVALID_ARGUMENT);
  CHECK(strstr(gm_last_error(), "/token") != NULL);
  CHECK(gm_grammar_from_gbnf(NULL, "", 0, &grammar) == GM_INVALID_ARGUMENT);
  CHECK(gm_matcher_new(NULL, NULL) == GM_INVALID_ARGUMENT);
  gm_vocabulary* none = NULL;
  CHECK(gm_vocabulary_from_file("/nonexistent/vocab.gguf", &none) == GM_IO);
  CHECK(none == NULL);
  CHECK(gm_vocabulary_from_gguf("GGUF", 4, &none) != GM_OK);
  const uint8_t bad_kind[1] = {9};
  const char* one[1] = {"a"};
  const size_t one_length[1] = {1};
  CHECK(gm_vocabulary_from_tokens(one, one_length, bad_kind, 1, NULL, 0, &none) ==
        GM_INVALID_ARGUMENT);
  /* NULL handles are harmless where nothing is returned. */
  gm_matcher_free(NULL);
  gm_grammar_free(NULL);
  gm_vocabulary_free(NULL);
  gm_matcher_reset(NULL);
  CHECK(!gm_matcher_is_accepting(NULL));
}

static void test_schema_and_tag(gm_vocabulary* vocab) {
  gm_json_schema_options options;
  gm_json_schema_options_init(&options);
  options.whitespace = 0; /* compact */
  const char* schema =
      "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}}, "
      "\"required\": [\"a\"], \"additionalProperties\": false}";
  gm_grammar* grammar = NULL;
  CHECK_OK(gm_grammar_from_json_schema(vocab, schema, strlen(schema), &options, &grammar));
  gm_matcher* m = NULL;
  CHECK_OK(gm_matcher_new(grammar, &m));
  /* {"a": forced after "{" */
  CHECK_OK(gm_matcher_accept_token(m, 2));
  char buffer[16];
  size_t length = 0;
  CHECK_OK(gm_matcher_forced_bytes(m, 64, buffer, sizeof buffer, &length));
  CHECK(length == 4 && memcmp(buffer, "\"a\":", 4) == 0);
  CHECK_OK(gm_matcher_forced_bytes(m, 64, buffer, 2, &length)); /* small buffer: the length */
  CHECK(length == 4);
  CHECK_OK(gm_matcher_accept_bytes(m, "\"a\":1}", 6));
  CHECK(gm_matcher_is_accepting(m));
  gm_matcher_free(m);
  gm_grammar_free(grammar);

  const char* tag =
      "{\"type\": \"structural_tag\", \"format\": {\"type\": \"tag\", \"begin\": {\"type\": "
      "\"token\", \"token\": \"<|call|>\"}, \"content\": {\"type\": \"const_string\", \"value\": "
      "\"ab\"}, \"end\": \"x\"}}";
  CHECK_OK(gm_grammar_from_structural_tag(vocab, tag, strlen(tag), NULL, &grammar));
  CHECK_OK(gm_matcher_new(grammar, &m));
  uint32_t words[1];
  CHECK_OK(gm_matcher_fill_mask(m, words, 1));
  CHECK(words[0] == (1u << 1)); /* only <|call|> */
  CHECK_OK(gm_matcher_accept_token(m, 1));
  CHECK_OK(gm_matcher_accept_token(m, 10));
  CHECK_OK(gm_matcher_accept_token(m, 11));
  CHECK(gm_matcher_is_accepting(m));
  gm_matcher_free(m);
  gm_grammar_free(grammar);
}

/* A tokenizer for the small vocabulary: one token per byte it knows. */
static size_t by_byte(void* user_data, const char* text, size_t size, uint32_t* tokens,
                      size_t capacity) {
  (void)user_data;
  size_t n = 0;
  for (size_t i = 0; i < size; ++i, ++n) {
    uint32_t id = 0;
    for (uint32_t t = 2; t < kN; ++t)
      if (strlen(kTokens[t]) == 1 && kTokens[t][0] == text[i]) id = t;
    if (n < capacity) tokens[n] = id;
  }
  return n;
}

static void test_draft_and_forward(gm_vocabulary* vocab) {
  const char* gbnf = "root ::= \"{\\\"a\\\":\" [0-9] \"}\"";
  gm_grammar* grammar = NULL;
  CHECK_OK(gm_grammar_from_gbnf(vocab, gbnf, strlen(gbnf), &grammar));
  gm_matcher* m = NULL;
  CHECK_OK(gm_matcher_new(grammar, &m));
  uint32_t forced[8];
  size_t n = 0;
  CHECK_OK(gm_matcher_forced_tokens(m, by_byte, NULL, 64, forced, 8, &n));
  /* {"a": as { " a " : -- the last, ":", extends no token */
  CHECK(n == 5 && forced[0] == 2 && forced[1] == 4 && forced[2] == 5 && forced[4] == 7);
  CHECK_OK(gm_matcher_forced_tokens(m, by_byte, NULL, 64, forced, 1, &n)); /* short buffer */
  CHECK(n == 5 && forced[0] == 2);
  const uint32_t draft[] = {2, 4, 5, 4, 6};
  uint32_t rows[6];
  CHECK_OK(gm_matcher_fill_draft_masks(m, draft, 5, rows, 1));
  CHECK(rows[0] == (1u << 2) && rows[4] == (1u << 7) && rows[5] == 0u);
  CHECK(gm_matcher_num_tokens(m) == 0);
  CHECK(gm_matcher_accept_draft(m, draft, 5) == 4);
  CHECK(gm_matcher_num_tokens(m) == 4);
  gm_matcher_free(m);
  gm_grammar_free(grammar);
}

static void test_lazy(gm_vocabulary* vocab) {
  const char* gbnf = "root ::= \"ab\" [0-9]";
  gm_grammar* grammar = NULL;
  CHECK_OK(gm_grammar_from_gbnf(vocab, gbnf, strlen(gbnf), &grammar));
  const char* words[] = {"ab"};
  gm_lazy_triggers triggers = {words, 1, NULL, 0, NULL, 0, NULL, 0};
  gm_lazy_matcher* m = NULL;
  CHECK_OK(gm_lazy_matcher_new(grammar, &triggers, &m));
  uint32_t mask[1];
  CHECK_OK(gm_lazy_matcher_fill_mask(m, mask, 1));
  CHECK(bit(mask, 11) && bit(mask, 0));          /* free text and the stop token */
  CHECK_OK(gm_lazy_matcher_accept_token(m, 11)); /* x */
  CHECK(!gm_lazy_matcher_is_triggered(m));
  CHECK_OK(gm_lazy_matcher_accept_token(m, 10)); /* ab: fires */
  CHECK(gm_lazy_matcher_is_triggered(m));
  CHECK_OK(gm_lazy_matcher_fill_mask(m, mask, 1));
  CHECK(mask[0] == (1u << 8)); /* only the digit 1 */
  CHECK(!gm_lazy_matcher_is_token_allowed(m, 11));
  CHECK_OK(gm_lazy_matcher_accept_token(m, 8));
  CHECK(gm_lazy_matcher_is_accepting(m) && gm_lazy_matcher_num_tokens(m) == 3);
  gm_lazy_matcher* fork = NULL;
  CHECK_OK(gm_lazy_matcher_clone(m, &fork));
  CHECK_OK(gm_lazy_matcher_rollback(m, 2));
  CHECK(!gm_lazy_matcher_is_triggered(m) && gm_lazy_matcher_is_triggered(fork));
  gm_lazy_matcher_reset(fork);
  CHECK(gm_lazy_matcher_num_tokens(fork) == 0);
  const char* empty[] = {""};
  gm_lazy_triggers bad = {empty, 1, NULL, 0, NULL, 0, NULL, 0};
  gm_lazy_matcher* none = NULL;
  CHECK(gm_lazy_matcher_new(grammar, &bad, &none) == GM_INVALID_ARGUMENT && none == NULL);
  gm_lazy_matcher_free(m);
  gm_lazy_matcher_free(fork);
  gm_grammar_free(grammar);
}

static void test_shared_vocabulary(void) {
  const char* shared = getenv("GRAMMASK_SHARED_DIR");
#ifdef GRAMMASK_SHARED_DIR_DEFAULT
  if (shared == NULL || shared[0] == '\0') shared = GRAMMASK_SHARED_DIR_DEFAULT;
#endif
  if (shared == NULL || shared[0] == '\0') {
    printf("GRAMMASK_SHARED_DIR not set: skipping the GGUF vocabulary\n");
    return;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/bench/vocab/gpt2.gguf", shared);
  FILE* file = fopen(path, "rb");
  if (file == NULL) {
    printf("%s absent: skipping the GGUF vocabulary\n", path);
    return;
  }
  fseek(file, 0, SEEK_END);
  long size = ftell(file);
  fseek(file, 0, SEEK_SET);
  char* bytes = malloc((size_t)size);
  CHECK(bytes != NULL && fread(bytes, 1, (size_t)size, file) == (size_t)size);
  fclose(file);
  gm_vocabulary* from_file = NULL;
  gm_vocabulary* from_bytes = NULL;
  CHECK_OK(gm_vocabulary_from_file(path, &from_file));
  CHECK_OK(gm_vocabulary_from_gguf(bytes, (size_t)size, &from_bytes));
  free(bytes);
  CHECK(gm_vocabulary_size(from_file) == 50257 && gm_vocabulary_size(from_bytes) == 50257);
  const char* gbnf = "root ::= \"yes\" | \"no\"";
  gm_grammar* grammar = NULL;
  CHECK_OK(gm_grammar_from_gbnf(from_file, gbnf, strlen(gbnf), &grammar));
  gm_vocabulary_free(from_file); /* the grammar keeps it alive */
  gm_matcher* m = NULL;
  CHECK_OK(gm_matcher_new(grammar, &m));
  size_t n_words = gm_grammar_mask_words(grammar);
  uint32_t* words = calloc(n_words, sizeof *words);
  CHECK_OK(gm_matcher_fill_mask(m, words, n_words));
  size_t allowed = 0;
  for (uint32_t id = 0; id < 50257; ++id) allowed += (size_t)bit(words, id);
  CHECK(allowed >= 2 && allowed < 20);
  free(words);
  gm_matcher_free(m);
  gm_grammar_free(grammar);
  gm_vocabulary_free(from_bytes);
}

int main(void) {
  gm_vocabulary* vocab = small_vocabulary();
  CHECK(gm_vocabulary_size(vocab) == kN);
  test_gbnf(vocab);
  test_errors(vocab);
  test_schema_and_tag(vocab);
  test_draft_and_forward(vocab);
  test_lazy(vocab);
  test_shared_vocabulary();
  gm_vocabulary_free(vocab);
  if (failures > 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("c_api_test: all checks passed\n");
  return 0;
}
