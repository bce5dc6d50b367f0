/* The C API as a C11 consumer sees it, through the installed (or
 * add_subdirectory'd) header and library: compile a grammar, fill a mask. */
#include <string.h>

#include "grammask/grammask_c.h"

int c_api_consumer_check(void) {
  const char* tokens[] = {"a", "b"};
  const size_t lengths[] = {1, 1};
  gm_vocabulary* vocab = NULL;
  if (gm_vocabulary_from_tokens(tokens, lengths, NULL, 2, NULL, 0, &vocab) != GM_OK) return 1;
  const char* gbnf = "root ::= \"a\"";
  gm_grammar* grammar = NULL;
  gm_matcher* matcher = NULL;
  uint32_t mask = 0;
  int failed = gm_grammar_from_gbnf(vocab, gbnf, strlen(gbnf), &grammar) != GM_OK ||
               gm_matcher_new(grammar, &matcher) != GM_OK ||
               gm_matcher_fill_mask(matcher, &mask, 1) != GM_OK || mask != 1u;
  gm_matcher_free(matcher);
  gm_grammar_free(grammar);
  gm_vocabulary_free(vocab);
  return failed;
}
