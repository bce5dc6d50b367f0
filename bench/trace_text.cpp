// trace_text VOCAB TEXT: prints the token ids of TEXT (a file) for the
// vocabulary VOCAB (.gguf or tokenizer.json) on one line, as the bench
// traces are written. A control token's text in TEXT ("<|eot_id|>") is that
// token; the rest is split by greedy longest match over the other tokens:
// one valid spelling of the text, not necessarily the tokenizer's own.
// Exit 1 if some byte has no token.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

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
  std::vector<uint32_t> control;
  for (uint32_t id = 0; id < vocab->size(); ++id) {
    longest = std::max(longest, vocab->token_bytes(id).size());
    if (vocab->kind(id) == grammask::TokenKind::kControl && !vocab->token_bytes(id).empty())
      control.push_back(id);
  }
  // The longest control token starting at each offset (length 0: none).
  std::vector<std::pair<size_t, uint32_t>> control_at(s.size() + 1, {0, 0});
  for (size_t at = 0; at < s.size(); ++at)
    for (uint32_t id : control) {
      const std::string_view text = vocab->token_bytes(id);
      if (text.size() > control_at[at].first && s.compare(at, text.size(), text) == 0)
        control_at[at] = {text.size(), id};
    }
  std::vector<uint32_t> ids;
  for (size_t at = 0; at < s.size();) {
    size_t taken = control_at[at].first;
    uint32_t chosen = control_at[at].second;
    // Text tokens stop where a control token starts.
    size_t room = 1;
    while (at + room < s.size() && control_at[at + room].first == 0) ++room;
    for (size_t n = std::min(longest, room); n > 0 && taken == 0; --n) {
      const auto id = vocab->find_token(std::string_view(s).substr(at, n));
      if (!id || vocab->is_special(*id) || vocab->is_stop(*id)) continue;
      taken = n;
      chosen = *id;
    }
    if (taken == 0) {
      std::cerr << "no token spells the byte at offset " << at << "\n";
      return 1;
    }
    ids.push_back(chosen);
    at += taken;
  }
  std::string line;
  for (uint32_t id : ids) line += (line.empty() ? "" : " ") + std::to_string(id);
  std::cout << line << "\n";
  return 0;
}
