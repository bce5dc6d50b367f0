#include "regex/code_point_set.h"

#include <algorithm>

namespace grammask::internal {
namespace {

constexpr uint32_t kSurrogateFirst = 0xD800;
constexpr uint32_t kSurrogateLast = 0xDFFF;

// True when `ranges` already is a CodePointSet (sorted, disjoint, not
// adjacent, within range, no surrogates): normalize_set would return it
// unchanged. Ranges that end right below the surrogates and begin right
// after them stay apart in a normalized set too.
bool is_normalized(const CodePointSet& ranges) {
  for (size_t i = 0; i < ranges.size(); ++i) {
    const CodePointRange& range = ranges[i];
    if (range.first > range.last || range.last > kMaxCodePoint) return false;
    if (range.first <= kSurrogateLast && range.last >= kSurrogateFirst) return false;
    if (i > 0 && range.first <= ranges[i - 1].last + 1) return false;
  }
  return true;
}

}  // namespace

CodePointSet normalize_set(CodePointSet ranges) {
  // Most sets handed in are normalized already (pieces of automaton edges):
  // they are returned without the three copies below.
  if (is_normalized(ranges)) return ranges;
  CodePointSet cleaned;
  for (CodePointRange range : ranges) {
    if (range.first > range.last) continue;
    range.last = std::min(range.last, kMaxCodePoint);
    if (range.first > kMaxCodePoint) continue;
    // Cut out surrogates.
    if (range.first <= kSurrogateLast && range.last >= kSurrogateFirst) {
      if (range.first < kSurrogateFirst) cleaned.push_back({range.first, kSurrogateFirst - 1});
      if (range.last > kSurrogateLast) cleaned.push_back({kSurrogateLast + 1, range.last});
      continue;
    }
    cleaned.push_back(range);
  }
  std::sort(cleaned.begin(), cleaned.end(),
            [](const CodePointRange& a, const CodePointRange& b) { return a.first < b.first; });
  CodePointSet merged;
  for (const CodePointRange& range : cleaned) {
    if (!merged.empty() && range.first <= merged.back().last + 1) {
      merged.back().last = std::max(merged.back().last, range.last);
    } else if (!merged.empty() && merged.back().last == kSurrogateFirst - 1 &&
               range.first == kSurrogateLast + 1) {
      merged.back().last = range.last;  // adjacent across the surrogate gap
    } else {
      merged.push_back(range);
    }
  }
  // Re-split any range that now spans the surrogate gap: keep the invariant
  // that members are never surrogates.
  CodePointSet result;
  for (const CodePointRange& range : merged) {
    if (range.first < kSurrogateFirst && range.last > kSurrogateLast) {
      result.push_back({range.first, kSurrogateFirst - 1});
      result.push_back({kSurrogateLast + 1, range.last});
    } else {
      result.push_back(range);
    }
  }
  return result;
}

CodePointSet complement_set(const CodePointSet& set) {
  CodePointSet result;
  uint32_t next = 0;
  for (const CodePointRange& range : set) {
    if (range.first > next) result.push_back({next, range.first - 1});
    next = range.last + 1;
  }
  if (next <= kMaxCodePoint) result.push_back({next, kMaxCodePoint});
  return normalize_set(std::move(result));
}

CodePointSet intersect_sets(const CodePointSet& a, const CodePointSet& b) {
  CodePointSet result;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    uint32_t first = std::max(a[i].first, b[j].first);
    uint32_t last = std::min(a[i].last, b[j].last);
    if (first <= last) result.push_back({first, last});
    if (a[i].last < b[j].last)
      ++i;
    else
      ++j;
  }
  return normalize_set(std::move(result));
}

bool set_contains(const CodePointSet& set, uint32_t code_point) {
  for (const CodePointRange& range : set)
    if (code_point >= range.first && code_point <= range.last) return true;
  return false;
}

CodePointSet union_sets(CodePointSet a, const CodePointSet& b) {
  a.insert(a.end(), b.begin(), b.end());
  return normalize_set(std::move(a));
}

}  // namespace grammask::internal
