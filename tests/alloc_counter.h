// Counts heap allocations program-wide, for the "no allocation" tests: replaces every form of
// operator new/delete that can pair with another (plain, array, nothrow), so that under
// AddressSanitizer each allocation is released by its own family. These are definitions of the
// global replacement functions: include this header in exactly one source file of a test program.
#pragma once

#include <atomic>
#include <cstdlib>
#include <new>

// Number of operator new calls so far (all forms).
static std::atomic<long> g_allocations{0};

static void* CountedAlloc(std::size_t n) noexcept {
  ++g_allocations;
  return std::malloc(n ? n : 1);
}
void* operator new(std::size_t n) {
  if (void* p = CountedAlloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = CountedAlloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return CountedAlloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return CountedAlloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
