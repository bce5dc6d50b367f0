// Sets of code points (internal): the alphabet of the regex translator, the
// code-point DFAs and the JSON Schema converter. A CodePointSet is sorted,
// disjoint, non-adjacent ranges within [0, U+10FFFF] without surrogates
// (U+D800..U+DFFF cannot occur in decoded text). Pure functions; each costs
// linear time in the ranges of its operands (normalize_set: n log n).
#ifndef GRAMMASK_SRC_REGEX_CODE_POINT_SET_H_
#define GRAMMASK_SRC_REGEX_CODE_POINT_SET_H_

#include <cstdint>
#include <vector>

#include "grammask/grammar.h"

namespace grammask::internal {

using CodePointSet = std::vector<CodePointRange>;

// The set of the code points any of `ranges` holds (any order, overlaps,
// surrogates and values past U+10FFFF allowed; those are dropped).
CodePointSet normalize_set(CodePointSet ranges);
// Every code point (surrogates excepted) not in `set`.
CodePointSet complement_set(const CodePointSet& set);
CodePointSet intersect_sets(const CodePointSet& a, const CodePointSet& b);
CodePointSet union_sets(CodePointSet a, const CodePointSet& b);
bool set_contains(const CodePointSet& set, uint32_t code_point);

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_REGEX_CODE_POINT_SET_H_
