// JSON Schema `format` values as anchored ECMA-262 patterns.
#ifndef GRAMMASK_SRC_SCHEMA_FORMATS_H_
#define GRAMMASK_SRC_SCHEMA_FORMATS_H_

#include <string>
#include <string_view>

namespace grammask::internal {

struct FormatLookup {
  bool known = false;     // a format the spec defines
  bool supported = true;  // known and enforceable (pattern is set)
  std::string pattern;    // anchored ECMA-262 pattern accepting only valid values
  // Set when `pattern` is an exact subset of the format (e.g. the ASCII
  // part of idn-hostname): never accepts an invalid value, rejects some
  // valid ones. The note says which subset.
  std::string narrowed;
  // Set when the RFC's size limits, left out of `pattern` (they make its
  // automaton larger), bound the length of the values: `pattern` with them.
  // Under a length bound it is used instead, which then often costs nothing
  // (a bound it already keeps is dropped).
  std::string bounded;
};

FormatLookup format_pattern(std::string_view format);

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_SCHEMA_FORMATS_H_
