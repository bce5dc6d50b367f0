// trace_text VOCAB TEXT: prints the token ids of TEXT (a file) for the
// vocabulary VOCAB (.gguf or tokenizer.json) on one line, as the bench
// traces are written. The split is greedy longest match over every token,
// control tokens included (so "<|python_tag|>" in the text is that token
// where the vocabulary has it): one valid spelling of the text, not
// necessarily the tokenizer's own. Exit 1 if some byte has no token.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "grammask/vocabulary.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: trace_text VOCAB TEXT\n";
    return 2;
  }
  const std::string path = argv[1];
  const bool gguf = path.size() >= 5 && path.compare(path.size() - 5, 5, ".gguf") == 0;
  auto vocab = gguf ? grammask::Vocabulary::from_gguf_file(path)
                    : grammask::Vocabulary::from_tokenizer_json_file(path);
  if (!vocab.ok()) {
    std::cerr << path << ": " << vocab.status().to_string() << "\n";
    return 2;
  }
  std::ifstream in(argv[2], std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  size_t longest = 0;
  for (uint32_t id = 0; id < vocab->size(); ++id)
    longest = std::max(longest, vocab->token_bytes(id).size());
  std::string line;
  for (size_t at = 0; at < s.size();) {
    size_t taken = 0;
    for (size_t n = std::min(longest, s.size() - at); n > 0 && taken == 0; --n) {
      const auto id = vocab->find_token(std::string_view(s).substr(at, n));
      if (!id || vocab->is_stop(*id) || vocab->kind(*id) == grammask::TokenKind::kUnused) continue;
      line += (line.empty() ? "" : " ") + std::to_string(*id);
      taken = n;
    }
    if (taken == 0) {
      std::cerr << "no token spells the byte at offset " << at << "\n";
      return 1;
    }
    at += taken;
  }
  std::cout << line << "\n";
  return 0;
}
