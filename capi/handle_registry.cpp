// Live-handle bookkeeping behind the handle checks of the C ABI.
#include "handle_registry.h"

#include <mutex>
#include <unordered_map>

namespace qwenrt::capi {
namespace {

struct Registry {
  std::mutex mu;
  std::unordered_map<const void*, HandleKind> live;  // guarded by mu
};

Registry& TheRegistry() {
  static Registry* registry = new Registry();  // never destroyed: frees may run during exit
  return *registry;
}

}  // namespace

const char* HandleKindName(HandleKind kind) {
  switch (kind) {
    case HandleKind::kModel:
      return "qwenrt_model";
    case HandleKind::kSession:
      return "qwenrt_session";
    case HandleKind::kConstraint:
      return "qwenrt_constraint";
    case HandleKind::kEngine:
      return "qwenrt_engine";
  }
  return "handle";
}

void RegisterHandle(const void* handle, HandleKind kind) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.live[handle] = kind;
}

bool UnregisterHandle(const void* handle, HandleKind kind) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.live.find(handle);
  if (it == r.live.end() || it->second != kind) return false;
  r.live.erase(it);
  return true;
}

namespace {

// CheckHandle's test; `r.mu` held.
Status CheckLocked(Registry& r, const void* handle, HandleKind kind, const char* what) {
  auto it = r.live.find(handle);
  if (it == r.live.end()) {
    return InvalidArgument("{} is not a live {} (already freed, or never created by qwenrt)", what,
                           HandleKindName(kind));
  }
  if (it->second != kind) {
    return InvalidArgument("{} is a {}, not a {}", what, HandleKindName(it->second),
                           HandleKindName(kind));
  }
  return OkStatus();
}

}  // namespace

Status CheckHandle(const void* handle, HandleKind kind, const char* what) {
  return WithLiveHandle(handle, kind, what, [] { return OkStatus(); });
}

Status WithLiveHandle(const void* handle, HandleKind kind, const char* what,
                      const std::function<Status()>& fn) {
  if (handle == nullptr) return InvalidArgument("{} is NULL", what);
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  QWENRT_RETURN_IF_ERROR(CheckLocked(r, handle, kind, what));
  return fn();
}

bool UnregisterHandleThen(const void* handle, HandleKind kind, const std::function<void()>& fn) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.live.find(handle);
  if (it == r.live.end() || it->second != kind) return false;
  r.live.erase(it);
  fn();
  return true;
}

void WithRegistryLock(const std::function<void()>& fn) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  fn();
}

}  // namespace qwenrt::capi
