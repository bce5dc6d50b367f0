// grammask samplers for llama.cpp: drop-in replacements for
// llama_sampler_init_grammar and llama_sampler_init_grammar_lazy, plus JSON
// Schema and structural-tag samplers.
//
// Compile grammask_llama.cpp into your program, against your llama.h, and
// link grammask::grammask and llama. The header is C and C++.
//
//   llama_sampler* chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
//   llama_sampler_chain_add(chain, llama_sampler_init_top_k(40));
//   llama_sampler* grammar = grammask_llama_init_grammar(vocab, gbnf, "root");
//   if (!grammar) fprintf(stderr, "%s\n", grammask_llama_last_error());
//   llama_sampler_chain_add(chain, grammar);
//   llama_sampler_chain_add(chain, llama_sampler_init_dist(seed));
//
// Vocabulary: built from the llama_vocab in memory (never a second read of
// the GGUF) on first use and cached per llama_vocab and token policy; the
// cache checks a fingerprint of the vocabulary's token texts and attributes,
// so a vocabulary freed and replaced at the same address is rebuilt. Token
// attributes map to grammask token kinds as docs/integration.md tabulates;
// end-of-generation tokens (llama_vocab_is_eog) are the stop tokens.
//
// Semantics follow llama.cpp's grammar sampler: an empty or NULL grammar
// gives a sampler that changes nothing; apply() sets the logit of every
// disallowed candidate to -INFINITY; accept() advances; reset() returns to
// the start; clone() forks the state (sharing the compiled grammar). The
// sampler's name is "grammask".
//
// Errors: an init function that cannot build its sampler (grammar syntax,
// unsupported schema keyword, limits) returns NULL, and
// grammask_llama_last_error() on the same thread says why, with the
// position. At run time the sampler fails closed: after an accept() of a
// token the grammar refuses, or a mask that passes its work limit, apply()
// allows only end-of-generation tokens until reset(), and
// grammask_llama_sampler_error() holds the message.
//
// Threading: one sampler per sequence, used by one thread at a time (like
// every llama.cpp sampler); samplers on different threads may share a
// vocabulary and the cache. Clones share the compiled grammar safely.

#ifndef GRAMMASK_LLAMA_H_
#define GRAMMASK_LLAMA_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "llama.h"

#ifdef __cplusplus
extern "C" {
#endif

// How the sampler reads tokens and schemas.
struct grammask_llama_params {
  // false (default): special tokens, control (<|im_start|>, <|eot_id|>) and
  // unknown (<unk>, padding), never match grammar text; grammars reach them
  // only through token items (`<|im_start|>`, `<[128009]>`). true: they
  // match their text, as in llama.cpp's grammar sampler.
  bool special_tokens_as_text;
  // apply() on an array of at most this many candidates checks each one
  // instead of computing the mask over the vocabulary (the case after
  // top-k). 0: the default (64).
  uint32_t small_array_max;
  // JSON Schema samplers: 0 flexible whitespace (bounded runs), 1 compact
  // (none), 2 indented by 2. Key order: false the schema's, true any order
  // (exact, each property at most once; see JsonSchemaOptions).
  int json_whitespace;
  bool json_any_order;
};

// The defaults listed above.
struct grammask_llama_params grammask_llama_default_params(void);

// llama_sampler_init_grammar: `grammar_str` is GBNF (grammask's dialect, a
// superset of llama.cpp's), `grammar_root` its start rule (NULL or "":
// "root"). NULL or "" grammar: a sampler that changes nothing. Returns NULL
// on error (grammask_llama_last_error). Cost: the compile, plus building the
// vocabulary on its first use (linear in the vocabulary).
struct llama_sampler* grammask_llama_init_grammar(const struct llama_vocab* vocab,
                                                  const char* grammar_str,
                                                  const char* grammar_root);
// The same with parameters (NULL: defaults).
struct llama_sampler* grammask_llama_init_grammar_params(
    const struct llama_vocab* vocab, const char* grammar_str, const char* grammar_root,
    const struct grammask_llama_params* params);

// A sampler for JSON texts valid against `schema_json` (exact, or NULL with
// the refused keyword and its JSON pointer in the error).
struct llama_sampler* grammask_llama_init_json_schema(const struct llama_vocab* vocab,
                                                      const char* schema_json,
                                                      const struct grammask_llama_params* params);

// A sampler for an XGrammar-style structural tag (docs/tool-calling.md).
struct llama_sampler* grammask_llama_init_structural_tag(
    const struct llama_vocab* vocab, const char* tag_json,
    const struct grammask_llama_params* params);

// llama_sampler_init_grammar_lazy (words and tokens, as in llama.cpp until
// patterns replaced words): nothing is constrained until the output
// contains a trigger word or a trigger token is sampled; from the trigger's
// start on, the grammar constrains the output. Unlike llama.cpp, a token
// that would fire a trigger whose text the grammar refuses is disallowed
// (docs/lazy-grammars.md).
struct llama_sampler* grammask_llama_init_grammar_lazy(
    const struct llama_vocab* vocab, const char* grammar_str, const char* grammar_root,
    const char** trigger_words, size_t num_trigger_words, const llama_token* trigger_tokens,
    size_t num_trigger_tokens);
// The later llama.cpp form: `trigger_patterns` are regexes that fire when
// the whole output so far matches (the grammar's text starts at the first
// capturing group), as llama_sampler_init_grammar_lazy_patterns does.
struct llama_sampler* grammask_llama_init_grammar_lazy_patterns(
    const struct llama_vocab* vocab, const char* grammar_str, const char* grammar_root,
    const char** trigger_patterns, size_t num_trigger_patterns, const llama_token* trigger_tokens,
    size_t num_trigger_tokens, const struct grammask_llama_params* params);

// The message of the last init failure on this thread ("" if none). Valid
// until the next init call on this thread.
const char* grammask_llama_last_error(void);

// The sampler's run-time error, or NULL while it has none (also for a
// sampler that grammask did not make). Valid until the next call on it.
const char* grammask_llama_sampler_error(const struct llama_sampler* sampler);

// True if the output so far is a complete sentence of the grammar (for a
// lazy sampler: no trigger yet, or the triggered grammar is complete).
// False for a sampler grammask did not make.
bool grammask_llama_is_accepting(const struct llama_sampler* sampler);

// Drops the cached vocabularies (each is freed once no sampler uses it).
void grammask_llama_clear_vocab_cache(void);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // GRAMMASK_LLAMA_H_
