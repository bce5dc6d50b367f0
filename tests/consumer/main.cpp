// A program that uses grammask the way a consumer would: through the installed
// (or add_subdirectory'd) headers and library only. Exit status 0 on success.
#include <cstdio>

#include "grammask/gbnf.h"

extern "C" int c_api_consumer_check(void);  // c_api.c, compiled as C11

int main() {
  const auto good = grammask::parse_gbnf("root ::= \"a\" [0-9]+ item?\nitem ::= \"!\"\n");
  if (!good.ok()) {
    std::fprintf(stderr, "valid grammar refused: %s\n", good.status().to_string().c_str());
    return 1;
  }
  const auto bad = grammask::parse_gbnf("root ::= undefined-rule\n");
  if (bad.ok()) {
    std::fprintf(stderr, "a grammar with an undefined rule was accepted\n");
    return 1;
  }
  if (c_api_consumer_check() != 0) {
    std::fprintf(stderr, "the C API failed\n");
    return 1;
  }
  std::printf("grammask consumer: ok (%s)\n", bad.status().to_string().c_str());
  return 0;
}
