// Checks on structural tags shared by structural_tag_test and
// xml_style_test: whether a text is a sentence of a tag's grammar, and the
// status a tag is refused with.
#ifndef GRAMMASK_TESTS_STRUCTURAL_TAG_CHECKS_H_
#define GRAMMASK_TESTS_STRUCTURAL_TAG_CHECKS_H_

#include <gtest/gtest.h>

#include <string>

#include "grammask/recognizer.h"
#include "grammask/status.h"
#include "grammask/structural_tag.h"

namespace grammask::testing {

// Whether the text `text` is a whole sentence of the tag's grammar.
inline bool accepts(const std::string& tag, const std::string& text) {
  auto grammar = structural_tag_to_grammar(tag);
  EXPECT_TRUE(grammar.ok()) << grammar.status().to_string();
  if (!grammar.ok()) return false;
  auto recognizer = Recognizer::create(*grammar);
  EXPECT_TRUE(recognizer.ok()) << recognizer.status().to_string();
  if (!recognizer.ok()) return false;
  return recognizer->push_bytes(text) == text.size() && recognizer->is_accepting();
}

// The status the tag is refused with, or OK.
inline Status error_of(const std::string& tag, const StructuralTagOptions& options = {}) {
  auto grammar = structural_tag_to_grammar(tag, options);
  return grammar.ok() ? Status() : grammar.status();
}

}  // namespace grammask::testing

#endif  // GRAMMASK_TESTS_STRUCTURAL_TAG_CHECKS_H_
