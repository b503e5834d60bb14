// The set of live C handles, so that a NULL, freed or wrong-type handle is refused with
// QWENRT_INVALID_ARGUMENT instead of being dereferenced. It is the library's only process-wide
// mutable state: bookkeeping, not configuration (the cost is one mutex lock per call, not per
// token).
#pragma once

#include <functional>

#include "base/status.h"

namespace qwenrt::capi {

enum class HandleKind { kModel, kSession, kConstraint, kEngine };

const char* HandleKindName(
    HandleKind kind);  // "qwenrt_model", "qwenrt_session", "qwenrt_constraint", "qwenrt_engine"

// Registers a new handle (may throw std::bad_alloc; callers run inside Guard).
void RegisterHandle(const void* handle, HandleKind kind);

// Forgets a handle; returns false when it was not registered (already freed or never created).
bool UnregisterHandle(const void* handle, HandleKind kind);

// OK when `handle` is a live handle of `kind`; otherwise INVALID_ARGUMENT naming `what` and why
// (NULL, freed / never created, or a handle of the other kind).
Status CheckHandle(const void* handle, HandleKind kind, const char* what);

// CheckHandle, then (when live) `fn` with the registry lock held: for bookkeeping that must not
// race a free (qwenrt_session_cancel, the session call counter). `fn` must be short and not call
// back into the registry.
Status WithLiveHandle(const void* handle, HandleKind kind, const char* what,
                      const std::function<Status()>& fn);

// Unregisters a live handle and runs `fn` under the same lock hold; false when it was not live.
bool UnregisterHandleThen(const void* handle, HandleKind kind, const std::function<void()>& fn);

// Runs `fn` with the registry lock held.
void WithRegistryLock(const std::function<void()>& fn);

}  // namespace qwenrt::capi
