// FlatIdMap: 64-bit keys to int32 ids in one open-addressing table (linear probing, power-of-two
// capacity, grown at half load). The matcher interns millions of stack nodes while it walks a
// token trie; std::unordered_map allocates a node per insert, which showed as a quarter of the
// mask time in malloc and free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace qwenrt {

class FlatIdMap {
 public:
  // The id stored for `key`; when absent, `id` is stored and *inserted set.
  int32_t Emplace(uint64_t key, int32_t id, bool* inserted) {
    if (2 * (size_ + 1) > slots_.size()) Grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = Hash(key) & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.id < 0) {
        s = {key, id};
        ++size_;
        *inserted = true;
        return id;
      }
      if (s.key == key) {
        *inserted = false;
        return s.id;
      }
    }
  }

  void Clear() {
    slots_.assign(slots_.size(), Slot{});
    size_ = 0;
  }

 private:
  struct Slot {
    uint64_t key = 0;
    int32_t id = -1;  // -1: empty
  };

  static size_t Hash(uint64_t k) {  // a 64-bit mixer (murmur3's finaliser)
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return static_cast<size_t>(k);
  }

  void Grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 1024 : 2 * old.size(), Slot{});
    size_ = 0;
    bool inserted = false;
    for (const Slot& s : old) {
      if (s.id >= 0) Emplace(s.key, s.id, &inserted);
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace qwenrt
