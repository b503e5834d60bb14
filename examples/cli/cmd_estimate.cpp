// `qwenrt-cli estimate`: the memory sessions of a model will hold at a context, before any is
// created (docs/memory.md), printed term by term in MiB. Goes through the C ABI only
// (qwenrt_model_estimate_memory), so what it prints is what a host of libqwenrt gets. --allocate
// then creates the sessions and reserves their whole context (qwenrt_session_reserve, pages
// written), and prints the process's resident memory beside the estimate.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli_command.h"
#include "qwenrt/qwenrt.h"

namespace qwenrt::cli {
namespace {

constexpr const char* kUsage =
    "estimate --model M.gguf [--ctx N] [--kv-type f16|f32|q8_0] [--sessions N] [--threads N] "
    "[--allocate]";

int Fail(const std::string& message) {
  std::fprintf(stderr, "qwenrt-cli estimate: %s\nusage: qwenrt-cli %s\n", message.c_str(), kUsage);
  return 2;
}

// A whole non-negative decimal that fits an int32, else false.
bool ParseCount(const char* text, int32_t* out) {
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v < 0 || v > INT32_MAX) return false;
  *out = static_cast<int32_t>(v);
  return true;
}

// The process's resident memory in bytes (VmRSS of /proc/self/status), 0 where unknown.
uint64_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return 0;
  char line[256];
  unsigned long long kib = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "VmRSS:", 6) == 0 && std::sscanf(line + 6, "%llu", &kib) == 1) break;
  }
  std::fclose(f);
  return static_cast<uint64_t>(kib) * 1024;
}

// Creates the sessions the estimate is of and reserves their whole context, pages written.
// Prints the resident memory they added; returns false with the error printed.
bool Allocate(qwenrt_model* model, const qwenrt_memory_estimate_params& ep, int32_t n_ctx,
              const qwenrt_memory_estimate& e, uint64_t rss_model) {
  qwenrt_session_params sp{};
  sp.struct_size = sizeof sp;
  if (qwenrt_session_params_init(&sp) != QWENRT_OK) return false;
  sp.n_ctx = ep.n_ctx;
  sp.n_threads = ep.n_threads;
  sp.backend = QWENRT_BACKEND_CPU;
  sp.kv_type = ep.kv_type;
  sp.checkpoint_budget = ep.checkpoint_budget;
  std::vector<qwenrt_session*> sessions;
  bool ok = true;
  for (int32_t i = 0; ok && i < ep.n_sessions; ++i) {
    qwenrt_session* s = nullptr;
    ok = qwenrt_session_create(model, &sp, &s) == QWENRT_OK;
    if (ok) sessions.push_back(s);
    ok = ok && qwenrt_session_reserve(s, n_ctx, 1) == QWENRT_OK;
  }
  if (!ok) std::fprintf(stderr, "qwenrt-cli estimate: --allocate: %s\n", qwenrt_last_error());
  const uint64_t rss = ResidentBytes();
  if (ok) {
    const auto mib = [](uint64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); };
    const uint64_t added = rss > rss_model ? rss - rss_model : 0;
    std::printf("allocated      %d session(s) reserved for %d positions, KV pages written\n",
                ep.n_sessions, n_ctx);
    // Checkpoints are taken as a conversation goes, so a fresh session holds the rest.
    const uint64_t all_sessions = e.total - e.weights;
    const uint64_t no_checkpoints =
        all_sessions - static_cast<uint64_t>(ep.n_sessions) * e.checkpoints_per_session;
    std::printf("resident       %.2f MiB after the model load, %.2f MiB now: +%.2f MiB\n",
                mib(rss_model), mib(rss), mib(added));
    std::printf(
        "estimate       %.2f MiB for the sessions, %.2f MiB without the checkpoints "
        "(taken as a conversation goes): measured/estimate %.4f\n",
        mib(all_sessions), mib(no_checkpoints),
        static_cast<double>(added) / static_cast<double>(no_checkpoints));
  }
  for (qwenrt_session* s : sessions) qwenrt_session_free(s);
  return ok;
}

int RunEstimate(int argc, char** argv) {
  std::string model_path;
  qwenrt_memory_estimate_params ep{};
  ep.struct_size = sizeof ep;
  if (qwenrt_memory_estimate_params_init(&ep) != QWENRT_OK) return Fail(qwenrt_last_error());
  std::string kv_name = "f16";
  bool allocate = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if ((arg == "--model" || arg == "-m") && has_value) {
      model_path = argv[++i];
    } else if (arg == "--allocate") {
      allocate = true;
    } else if (arg == "--ctx" && has_value) {
      if (!ParseCount(argv[++i], &ep.n_ctx)) return Fail("--ctx needs a count >= 0");
    } else if (arg == "--sessions" && has_value) {
      if (!ParseCount(argv[++i], &ep.n_sessions) || ep.n_sessions < 1)
        return Fail("--sessions needs a count >= 1");
    } else if (arg == "--threads" && has_value) {
      if (!ParseCount(argv[++i], &ep.n_threads)) return Fail("--threads needs a count >= 0");
    } else if (arg == "--kv-type" && has_value) {
      kv_name = argv[++i];
      if (kv_name == "f16") {
        ep.kv_type = QWENRT_KV_F16;
      } else if (kv_name == "f32") {
        ep.kv_type = QWENRT_KV_F32;
      } else if (kv_name == "q8_0") {
        ep.kv_type = QWENRT_KV_Q8_0;
      } else {
        return Fail("--kv-type must be f16, f32 or q8_0");
      }
    } else {
      return Fail("unknown or incomplete argument '" + arg + "'");
    }
  }
  if (model_path.empty()) return Fail("--model is required");

  qwenrt_model* model = nullptr;
  if (qwenrt_model_load(model_path.c_str(), nullptr, &model) != QWENRT_OK)
    return Fail(model_path + ": " + qwenrt_last_error());
  qwenrt_model_info info{};
  info.struct_size = sizeof info;
  qwenrt_memory_estimate e{};
  e.struct_size = sizeof e;
  const bool ok = qwenrt_model_get_info(model, &info) == QWENRT_OK &&
                  qwenrt_model_estimate_memory(model, &ep, &e) == QWENRT_OK;
  const std::string error = ok ? "" : qwenrt_last_error();
  const uint64_t rss_model = ResidentBytes();
  if (!ok) {
    qwenrt_model_free(model);
    return Fail(error);
  }

  const auto mib = [](uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); };
  std::printf("model          %s\n", model_path.c_str());
  std::printf("context        %d positions, %s KV, %d session(s), %s threads\n",
              ep.n_ctx > 0 ? ep.n_ctx : info.n_ctx_train, kv_name.c_str(), ep.n_sessions,
              ep.n_threads > 0 ? std::to_string(ep.n_threads).c_str() : "all hardware");
  const auto row = [&](const char* label, uint64_t bytes) {
    std::printf("%-14s %10.2f MiB\n", label, mib(bytes));
  };
  row("weights", e.weights);
  row("per session", e.per_session);
  row("  KV", e.kv_per_session);
  row("  state", e.state_per_session);
  row("  checkpoints", e.checkpoints_per_session);
  row("  working", e.working_per_session);
  row("total", e.total);
  const int32_t n_ctx = ep.n_ctx > 0 ? ep.n_ctx : info.n_ctx_train;
  const bool allocated = !allocate || Allocate(model, ep, n_ctx, e, rss_model);
  qwenrt_model_free(model);
  return allocated ? 0 : 1;
}

const bool kRegistered = RegisterCommand("estimate", Command{kUsage, RunEstimate});

}  // namespace
}  // namespace qwenrt::cli
