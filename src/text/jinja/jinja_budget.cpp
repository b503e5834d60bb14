// The per-thread work budget of a render (see jinja_budget.h).
#include "text/jinja/jinja_budget.h"

namespace qwenrt::jinja {
namespace {

thread_local Budget* g_budget = nullptr;

const TemplateLimits& DefaultLimits() {
  static const TemplateLimits limits;
  return limits;
}

}  // namespace

ActiveBudget::ActiveBudget(Budget* budget) : previous_(g_budget) { g_budget = budget; }
ActiveBudget::~ActiveBudget() { g_budget = previous_; }

Status CostError(uint64_t max_cost) {
  return InvalidArgument("template exceeded its work limit (max_cost = {} units)", max_cost);
}

Status ChargeWork(uint64_t units) {
  if (g_budget == nullptr || g_budget->Charge(units)) return OkStatus();
  return CostError(g_budget->limits().max_cost);
}

bool SpendWork(uint64_t units) { return g_budget == nullptr || g_budget->Charge(units); }

bool WorkExhausted() { return g_budget != nullptr && g_budget->exhausted(); }

const TemplateLimits& ActiveLimits() { return g_budget ? g_budget->limits() : DefaultLimits(); }

Status StringTooLarge(uint64_t bytes) {
  return InvalidArgument("string result too large ({} bytes; max_value_bytes is {})", bytes,
                         ActiveLimits().max_value_bytes);
}

Status ListTooLarge(uint64_t items) {
  return InvalidArgument("list result too large ({} items; max_list_items is {})", items,
                         ActiveLimits().max_list_items);
}

Status CheckStringSize(uint64_t bytes) {
  return bytes > ActiveLimits().max_value_bytes ? StringTooLarge(bytes) : OkStatus();
}

Status CheckListSize(uint64_t items) {
  return items > ActiveLimits().max_list_items ? ListTooLarge(items) : OkStatus();
}

uint64_t SaturatingMul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

}  // namespace qwenrt::jinja
