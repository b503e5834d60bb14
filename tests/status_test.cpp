// Status / StatusOr basics: codes, messages and the propagation macros.
#include "base/status.h"

#include <catch2/catch.hpp>

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

}  // namespace
}  // namespace qwenrt
