// Heap bytes of standard containers (internal), for the memory_bytes()
// figures of the public types: what the containers reserved, their nodes
// and bucket arrays, not the allocator's own overhead.
#ifndef GRAMMASK_SRC_BASE_MEMORY_BYTES_H_
#define GRAMMASK_SRC_BASE_MEMORY_BYTES_H_

#include <cstddef>
#include <string>
#include <vector>

namespace grammask::internal {

template <typename T, typename Allocator>
size_t heap_bytes(const std::vector<T, Allocator>& v) noexcept {
  return v.capacity() * sizeof(T);
}

inline size_t heap_bytes(const std::string& s) noexcept {
  // (Short strings live inside the object.)
  return s.capacity() > sizeof(std::string) - 1 ? s.capacity() + 1 : 0;
}

// An unordered map or set: a node per element (the element and a next
// pointer, with the hash cached) and the bucket array; the elements' own
// heap bytes are the caller's to add.
template <typename HashContainer>
size_t hash_container_bytes(const HashContainer& c) noexcept {
  return c.size() * (sizeof(typename HashContainer::value_type) + 2 * sizeof(void*)) +
         c.bucket_count() * sizeof(void*);
}

}  // namespace grammask::internal

#endif  // GRAMMASK_SRC_BASE_MEMORY_BYTES_H_
