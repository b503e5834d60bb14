// `qwenrt-cli estimate`: the memory sessions of a model will hold at a context, before any is
// created (docs/memory.md), printed term by term in MiB. Goes through the C ABI only
// (qwenrt_model_estimate_memory), so what it prints is what a host of libqwenrt gets.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli_command.h"
#include "qwenrt/qwenrt.h"

namespace qwenrt::cli {
namespace {

constexpr const char* kUsage =
    "estimate --model M.gguf [--ctx N] [--kv-type f16|f32|q8_0] [--sessions N] [--threads N]";

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

int RunEstimate(int argc, char** argv) {
  std::string model_path;
  qwenrt_memory_estimate_params ep{};
  ep.struct_size = sizeof ep;
  if (qwenrt_memory_estimate_params_init(&ep) != QWENRT_OK) return Fail(qwenrt_last_error());
  std::string kv_name = "f16";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if ((arg == "--model" || arg == "-m") && has_value) {
      model_path = argv[++i];
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
  qwenrt_model_free(model);
  if (!ok) return Fail(error);

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
  return 0;
}

const bool kRegistered = RegisterCommand("estimate", Command{kUsage, RunEstimate});

}  // namespace
}  // namespace qwenrt::cli
