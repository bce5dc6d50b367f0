// Recognizer: checks text against a grammar one byte at a time, for callers
// that validate output or drive their own search (the mask engine of
// matcher.h runs the same Earley engine).
//
// It says whether the bytes so far are a prefix of some sentence of the
// grammar and whether they are a whole sentence. A checkpoint is size() and
// going back to it is truncate(). One Recognizer serves one thread at a
// time; copies are independent and share the immutable lowered grammar, so
// they may run on different threads. Token items (<[id]>, <text>, !<...>)
// are read by token id through a Matcher, never by bytes: no byte input
// gets past one here. docs/lowering.md describes the lowering and the
// Earley engine behind it.
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
  // if the root is unknown or grammar.validate() fails, and with
  // kLimitExceeded (the message names the option) if lowering passes
  // RecognizerOptions::max_states or max_lowering_work. A Regex or LazyRegex
  // pattern that is not ECMA-262 (kSyntax), cannot be enforced exactly or
  // matches no text (kUnsupported), or passes the pattern parser's limits
  // (kLimitExceeded) fails at the terminal's position. Cost: the lowering
  // work, at most options.max_lowering_work in each of at most four
  // attempts (docs/lowering.md), plus time linear in the automata built.
  static Result<Recognizer> create(const Grammar& grammar, std::string_view root = "root",
                                   const RecognizerOptions& options = {});

  // A moved-from Recognizer holds no input and no grammar: it refuses every
  // byte (push_byte false, push_bytes 0), reports size() 0 and is neither
  // accepting nor able to continue; truncate and reset do nothing, and a
  // copy of it is moved-from too. Assigning a Recognizer makes it usable.
  Recognizer(Recognizer&&) noexcept;
  Recognizer& operator=(Recognizer&&) noexcept;
  // Copying copies the Earley sets: O(their size), allocates.
  Recognizer(const Recognizer&);  // a fork: independent state, shared grammar
  Recognizer& operator=(const Recognizer&);
  ~Recognizer();

  // Appends one byte if the input stays a valid prefix (some continuation is
  // in the language) and returns true; otherwise returns false and changes
  // nothing. A byte that ends inside a UTF-8 sequence is accepted when some
  // completion of the code point is allowed. Also returns false, with
  // work_limit_hit(), when the byte would cost more than
  // RecognizerOptions::max_work_per_byte. Cost: linear in the Earley set it
  // builds, within that bound; may allocate.
  bool push_byte(uint8_t byte);

  // True if the last refused push_byte() was refused because it would have
  // exceeded RecognizerOptions::max_work_per_byte, not because the byte is
  // invalid (the state is unchanged either way). Cleared by the next push.
  bool work_limit_hit() const noexcept;

  // Pushes bytes until one is refused (for either reason push_byte gives);
  // returns how many were accepted.
  size_t push_bytes(std::string_view bytes);

  // True if the grammar allows some byte next. O(1).
  bool can_continue() const noexcept;
  // True if the bytes pushed so far form a sentence of the language. O(1).
  bool is_accepting() const noexcept;
  // True if the grammar allows `byte` next: push_byte(byte) then succeeds
  // unless it passes max_work_per_byte. O(1).
  bool allows_byte(uint8_t byte) const noexcept;

  // Number of bytes pushed since creation or reset().
  size_t size() const noexcept;
  // Pops bytes until size() == length (a no-op if length >= size()). O(1), no
  // allocation.
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
