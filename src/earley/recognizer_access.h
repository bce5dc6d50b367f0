// Access to a Recognizer's Earley engine for tests (internal): the public
// header keeps the engine private.
#ifndef GRAMMASK_SRC_EARLEY_RECOGNIZER_ACCESS_H_
#define GRAMMASK_SRC_EARLEY_RECOGNIZER_ACCESS_H_

#include "earley/earley_engine.h"
#include "grammask/recognizer.h"

namespace grammask::internal {

struct RecognizerAccess {
  static const EarleyEngine& engine(const Recognizer& recognizer) noexcept {
    return *recognizer.engine_;
  }
};

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_EARLEY_RECOGNIZER_ACCESS_H_
