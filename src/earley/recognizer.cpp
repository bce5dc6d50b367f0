// The public Recognizer: a thin owner of one Earley engine.
#include "grammask/recognizer.h"

#include <memory>
#include <utility>

#include "automata/lowering.h"
#include "earley/earley_engine.h"

namespace grammask {

using internal::EarleyEngine;

Result<Recognizer> Recognizer::create(const Grammar& grammar, std::string_view root,
                                      const RecognizerOptions& options) {
  auto lowered = internal::ByteGrammar::lower(grammar, root, options);
  if (!lowered.ok()) return lowered.status();
  return Recognizer(std::make_unique<EarleyEngine>(std::move(lowered).value()));
}

Recognizer::Recognizer(std::unique_ptr<EarleyEngine> engine) : engine_(std::move(engine)) {}
Recognizer::Recognizer(Recognizer&&) noexcept = default;
Recognizer& Recognizer::operator=(Recognizer&&) noexcept = default;
Recognizer::Recognizer(const Recognizer& other)
    : engine_(other.engine_ ? std::make_unique<EarleyEngine>(*other.engine_) : nullptr) {}
Recognizer& Recognizer::operator=(const Recognizer& other) {
  if (this != &other)
    engine_ = other.engine_ ? std::make_unique<EarleyEngine>(*other.engine_) : nullptr;
  return *this;
}
Recognizer::~Recognizer() = default;

// A moved-from Recognizer (engine_ null) refuses every byte and reports
// an empty, non-accepting input.
bool Recognizer::push_byte(uint8_t byte) {
  return engine_ && engine_->push_byte(byte);
}

size_t Recognizer::push_bytes(std::string_view bytes) {
  size_t n = 0;
  if (!engine_) return 0;
  while (n < bytes.size() && engine_->push_byte(static_cast<uint8_t>(bytes[n]))) ++n;
  return n;
}

bool Recognizer::work_limit_hit() const noexcept {
  return engine_ && engine_->work_limit_hit();
}
bool Recognizer::can_continue() const noexcept {
  return engine_ && !engine_->scan().empty();
}
bool Recognizer::is_accepting() const noexcept {
  return engine_ && engine_->is_accepting();
}
bool Recognizer::allows_byte(uint8_t byte) const noexcept {
  return engine_ && engine_->scan().test(byte);
}
size_t Recognizer::size() const noexcept {
  return engine_ ? engine_->size() : 0;
}
void Recognizer::truncate(size_t length) noexcept {
  if (engine_) engine_->truncate(length);
}

}  // namespace grammask
