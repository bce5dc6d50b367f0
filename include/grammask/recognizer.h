// The Earley recognizer over a grammar lowered to UTF-8 byte automata.
//
// Feed it bytes one at a time; it says whether the input so far is a valid
// prefix of the language and whether it is complete. Every accepted byte
// pushes one Earley set on a stack, so a checkpoint is just size() and
// rollback is a pop: this is what the token-trie walk of the mask engine
// relies on.
#ifndef GRAMMASK_RECOGNIZER_H_
#define GRAMMASK_RECOGNIZER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "grammask/grammar.h"
#include "grammask/recognizer_options.h"
#include "grammask/status.h"

namespace grammask {

namespace internal {
class EarleyEngine;
struct RecognizerAccess;
}  // namespace internal

class Recognizer {
 public:
  // Lowers `grammar` with `root` as start rule. Fails with kInvalidArgument
  // if the root is unknown, kLimitExceeded if lowering exceeds the options.
  // Cost: linear in the lowered grammar size.
  static Result<Recognizer> create(const Grammar& grammar, std::string_view root = "root",
                                   const RecognizerOptions& options = {});

  Recognizer(Recognizer&&) noexcept;
  Recognizer& operator=(Recognizer&&) noexcept;
  Recognizer(const Recognizer&);  // a fork: independent state, shared grammar
  Recognizer& operator=(const Recognizer&);
  ~Recognizer();

  // Appends one byte if the input stays a valid prefix (some continuation is
  // in the language) and returns true; otherwise returns false and changes
  // nothing. A byte that ends inside a UTF-8 sequence is accepted when some
  // completion of the code point is allowed.
  bool push_byte(uint8_t byte);

  // True if the last refused push_byte() was refused because it would have
  // exceeded RecognizerOptions::max_work_per_byte, not because the byte is
  // invalid (the state is unchanged either way). Cleared by the next push.
  bool work_limit_hit() const noexcept;

  // Pushes bytes until one is refused; returns how many were accepted.
  size_t push_bytes(std::string_view bytes);

  // True if some byte can be pushed now.
  bool can_continue() const noexcept;
  // True if the bytes pushed so far form a sentence of the language.
  bool is_accepting() const noexcept;
  // True if push_byte(byte) would succeed. O(1).
  bool allows_byte(uint8_t byte) const noexcept;

  // Number of bytes pushed since creation or reset().
  size_t size() const noexcept;
  // Pops bytes until size() == length (a no-op if length >= size()). O(popped).
  void truncate(size_t length) noexcept;
  // Back to the empty input.
  void reset() noexcept { truncate(0); }

 private:
  friend struct internal::RecognizerAccess;  // tests read the engine's sets
  explicit Recognizer(std::unique_ptr<internal::EarleyEngine> engine);
  std::unique_ptr<internal::EarleyEngine> engine_;
};

}  // namespace grammask

#endif  // GRAMMASK_RECOGNIZER_H_
