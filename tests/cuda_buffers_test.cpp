// The owners of CUDA allocations (model/cuda_buffers.h) through a counting Memory instead of the
// device: DeviceArray and PinnedArray are OwnedMemory over cuda::Malloc / cuda::MallocHost, so what
// holds here holds for them, GPU or not. The leak this guards against: a second Allocate on the
// same owner (a context allocating a staging buffer twice) used to drop the first allocation.
#include "model/cuda_buffers.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <set>
#include <type_traits>
#include <utility>
#include <vector>

namespace qwenrt::test {
namespace {

// Host memory that remembers what is live, and can be told to fail the next allocation.
struct CountingMemory {
  static inline std::set<void*> live;
  static inline int64_t allocations = 0;
  static inline bool fail_next = false;
  static Status Allocate(void** p, size_t bytes) {
    if (std::exchange(fail_next, false)) return OutOfMemory("CountingMemory: told to fail");
    *p = std::malloc(bytes);
    live.insert(*p);
    ++allocations;
    return OkStatus();
  }
  static void Free(void* p) {
    if (p == nullptr) return;
    // Never a double free, never a pointer we did not hand out (CHECK: this runs in destructors).
    const bool ours = live.erase(p) == 1;
    CHECK(ours);
    if (ours) std::free(p);
  }
};
using Owned = OwnedMemory<CountingMemory>;

}  // namespace

TEST_CASE("OwnedMemory: Allocate again frees the previous allocation", "[cuda][buffers]") {
  CountingMemory::live.clear();
  {
    Owned a;
    REQUIRE(a.Allocate(64).ok());
    CHECK(a.bytes() == 64);
    REQUIRE(a.Allocate(128).ok());  // the pinned-buffer leak: the first one must be gone
    CHECK(CountingMemory::live.size() == 1);
    CHECK(CountingMemory::live.count(a.get()) == 1);
    CHECK(a.bytes() == 128);
    REQUIRE(a.Allocate(0).ok());  // an empty shape still gets a valid pointer
    CHECK(a.get() != nullptr);
    CHECK(a.bytes() == 0);
    CHECK(CountingMemory::live.size() == 1);
  }
  CHECK(CountingMemory::live.empty());  // the destructor freed the last one
}

TEST_CASE("OwnedMemory: a failed Allocate leaves the owner empty, nothing leaked",
          "[cuda][buffers]") {
  CountingMemory::live.clear();
  Owned a;
  REQUIRE(a.Allocate(32).ok());
  CountingMemory::fail_next = true;
  CHECK(a.Allocate(64).code() == StatusCode::kOutOfMemory);
  CHECK(a.get() == nullptr);
  CHECK(a.bytes() == 0);
  CHECK(CountingMemory::live.empty());
  REQUIRE(a.Allocate(16).ok());  // usable again
  a.Release();
  CHECK(CountingMemory::live.empty());
}

TEST_CASE("OwnedMemory: moves hand the allocation over; each is freed once", "[cuda][buffers]") {
  CountingMemory::live.clear();
  {
    Owned a, b;
    REQUIRE(a.Allocate(8).ok());
    REQUIRE(b.Allocate(8).ok());
    void* pa = a.get();
    b = std::move(a);  // b's old allocation now belongs to a (freed with it)
    CHECK(b.get() == pa);
    CHECK(CountingMemory::live.size() == 2);
    Owned c(std::move(b));
    CHECK(c.get() == pa);
    CHECK(b.get() == nullptr);
    std::vector<Owned> v;
    v.push_back(std::move(c));  // as CudaStateMirror's per-layer KV buffers
    v.emplace_back();
    REQUIRE(v.back().Allocate(4).ok());
    CHECK(CountingMemory::live.size() == 3);
  }
  CHECK(CountingMemory::live.empty());
}

TEST_CASE("DeviceArray and PinnedArray are OwnedMemory over the device and pinned allocators",
          "[cuda][buffers]") {
  // The compile-time half of the guarantee: the real owners are the tested template.
  STATIC_REQUIRE(std::is_base_of_v<OwnedMemory<DeviceMemory>, DeviceArray>);
  STATIC_REQUIRE(std::is_base_of_v<OwnedMemory<PinnedMemory>, PinnedArray>);
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<DeviceArray>);
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<PinnedArray>);
  STATIC_REQUIRE(!std::is_copy_constructible_v<PinnedArray>);
}

}  // namespace qwenrt::test
