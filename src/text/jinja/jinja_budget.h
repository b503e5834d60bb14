// The work budget of one render (TemplateLimits::max_cost), visible to every builtin. A render
// installs its Budget for the calling thread (ActiveBudget); builtins charge what they touch
// (ChargeWork) and deep recursive helpers that cannot fail (Equals, repr) poll WorkExhausted() to
// stop early. Exhaustion is sticky: once spent, every later charge fails, so a builtin that
// returned a cut-short result is always followed by the budget error at the evaluator's next
// charge, never by output built from it.
//
// Why a thread-local and not a parameter: the budget must reach Python-shaped helpers such as
// Equals inside dict lookups and std::function callables whose signatures mirror Python's; one
// render runs on one thread, and ActiveBudget restores the previous budget on exit, so nested or
// concurrent renders on other threads each see their own.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "text/jinja/jinja_limits.h"

namespace qwenrt::jinja {

// Costs in work units (about 1 ns each): bytes count 1.
inline constexpr uint64_t kCostPerItem = 8;   // one list/dict element created, copied or compared
inline constexpr uint64_t kCostPerNode = 32;  // one expression, statement, loop iteration or call

class Budget {
 public:
  explicit Budget(const TemplateLimits& limits) : limits_(limits) {}
  Budget(const Budget&) = delete;
  Budget& operator=(const Budget&) = delete;

  const TemplateLimits& limits() const { return limits_; }
  // Adds `units`; false once more than max_cost has been spent (and from then on).
  bool Charge(uint64_t units) {
    spent_ = units > UINT64_MAX - spent_ ? UINT64_MAX : spent_ + units;
    return spent_ <= limits_.max_cost;
  }
  bool exhausted() const { return spent_ > limits_.max_cost; }
  uint64_t spent() const { return spent_; }

 private:
  const TemplateLimits& limits_;
  uint64_t spent_ = 0;
};

// Installs `budget` as this thread's for its lifetime.
class ActiveBudget {
 public:
  explicit ActiveBudget(Budget* budget);
  ~ActiveBudget();
  ActiveBudget(const ActiveBudget&) = delete;
  ActiveBudget& operator=(const ActiveBudget&) = delete;

 private:
  Budget* previous_;
};

// Charges this thread's budget: OK, or the error naming max_cost. Without an active budget (a
// builtin called outside a render, as unit tests do) work is not counted.
Status ChargeWork(uint64_t units);
// ChargeWork for helpers that cannot fail: false once the budget is spent (they stop early; their
// caller's next ChargeWork fails).
bool SpendWork(uint64_t units);
// True once this thread's budget is spent.
bool WorkExhausted();
// The limits of this thread's render, or the defaults outside one.
const TemplateLimits& ActiveLimits();

// The error of an exhausted budget: InvalidArgument naming the limit.
Status CostError(uint64_t max_cost);
// Size errors of builtins, naming the limit ("string result too large (N bytes; max_value_bytes
// is M)").
Status StringTooLarge(uint64_t bytes);
Status ListTooLarge(uint64_t items);
// Checks a result size before it is built; `a * b` may overflow (it saturates).
Status CheckStringSize(uint64_t bytes);
Status CheckListSize(uint64_t items);
uint64_t SaturatingMul(uint64_t a, uint64_t b);

}  // namespace qwenrt::jinja
