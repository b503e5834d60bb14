// Status / StatusOr basics: codes, messages and the propagation macros.
#include "base/status.h"

#include <catch2/catch.hpp>
#include <new>
#include <stdexcept>
#include <vector>

#include "base/guard_alloc.h"

namespace qwenrt {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgument("{} is odd", x);
  return x / 2;
}

Status Quarter(int x, int* out) {
  QWENRT_ASSIGN_OR_RETURN(int h, Half(x));
  QWENRT_ASSIGN_OR_RETURN(*out, Half(h));
  return OkStatus();
}

TEST_CASE("Status carries code and message", "[status]") {
  Status s = BadFormat("tensor '{}' missing", "output_norm.weight");
  CHECK_FALSE(s.ok());
  CHECK(s.code() == StatusCode::kBadFormat);
  CHECK(s.ToString() == "BAD_FORMAT: tensor 'output_norm.weight' missing");
  CHECK(OkStatus().ToString() == "OK");
}

TEST_CASE("ASSIGN_OR_RETURN propagates the first error", "[status]") {
  int q = 0;
  CHECK(Quarter(8, &q).ok());
  CHECK(q == 2);
  Status s = Quarter(6, &q);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message() == "3 is odd");
}

TEST_CASE("GuardAlloc turns bad_alloc into OutOfMemory and passes everything else through",
          "[status]") {
  // A body returning nothing: OK, or OutOfMemory with the message formatted at the failure.
  std::vector<int> v;
  CHECK(GuardAlloc([&] { v.assign(3, 7); }, "cannot grow to {} ints", 3).ok());
  CHECK(v.size() == 3);
  int n = 1;
  Status s = GuardAlloc(
      [&] {
        n = 5;
        throw std::bad_alloc();
      },
      "cannot grow to {} ints", n);
  CHECK(s.code() == StatusCode::kOutOfMemory);
  CHECK(s.message() == "cannot grow to 5 ints");
  CHECK(GuardAlloc([] {}, "a message without arguments").ok());

  // A body returning StatusOr: its value, its own error, or OutOfMemory.
  StatusOr<int> ok = GuardAlloc([]() -> StatusOr<int> { return 42; }, "unused");
  REQUIRE(ok.ok());
  CHECK(*ok == 42);
  StatusOr<int> own = GuardAlloc([]() -> StatusOr<int> { return Half(3); }, "unused");
  CHECK(own.status().code() == StatusCode::kInvalidArgument);
  CHECK(own.status().message() == "3 is odd");
  StatusOr<int> oom =
      GuardAlloc([]() -> StatusOr<int> { throw std::bad_alloc(); }, "out of memory for {}", "x");
  CHECK(oom.status().code() == StatusCode::kOutOfMemory);
  CHECK(oom.status().message() == "out of memory for x");

  // A body returning Status; exceptions other than bad_alloc are not its business.
  CHECK(GuardAlloc([] { return InvalidArgument("bad"); }, "unused").code() ==
        StatusCode::kInvalidArgument);
  CHECK_THROWS_AS(GuardAlloc([]() -> Status { throw std::runtime_error("boom"); }, "unused"),
                  std::runtime_error);
}

}  // namespace
}  // namespace qwenrt
