// A program that uses grammask the way a consumer would: through the installed
// (or add_subdirectory'd) headers and library only. Exit status 0 on success.
#include <cstdio>

#include "grammask/gbnf.h"

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
  std::printf("grammask consumer: ok (%s)\n", bad.status().to_string().c_str());
  return 0;
}
