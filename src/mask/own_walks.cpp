#include "mask/own_walks.h"

#include <utility>

namespace grammask {
namespace internal {

const PureWalk* OwnWalks::keep(uint64_t kind, const std::vector<uint64_t>& key, PureWalk&& walk) {
  const size_t bytes = walk.memory() + key.size() * sizeof(uint64_t);
  if (bytes_ + bytes > max_bytes_) {
    for (Walks& walks : walks_) walks.clear();
    bytes_ = 0;
  }
  bytes_ += bytes;
  return &walks_[kind].emplace(key, std::move(walk)).first->second;
}

}  // namespace internal
}  // namespace grammask
