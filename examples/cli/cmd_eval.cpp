// `qwenrt-cli eval`: prefill a token file from position 0 and write every position's logits as raw
// little-endian float32 (n_tokens x n_vocab), the format of tests/data/logits, so any run can be
// compared with any reference.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "../common/progress_bar.h"
#include "cli_command.h"
#include "model/forward.h"
#include "model/model.h"

namespace {

int Fail(const std::string& msg) {
  std::fprintf(stderr, "qwenrt-cli eval: %s\n", msg.c_str());
  return 1;
}

bool ParseInt(const char* s, int64_t lo, int64_t* out) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo) return false;
  *out = v;
  return true;
}

int RunEval(int argc, char** argv) {
  std::string model_path, tokens_path, out_path, backend = "cpu";
  int64_t threads = std::max(1u, std::thread::hardware_concurrency()), ubatch = 512;
  int64_t chunk_min = qwenrt::BackendOptions().gdn_chunk_min_tokens;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return Fail("missing value after '" + a + "'");
    const char* v = argv[++i];
    if (a == "--model") {
      model_path = v;
    } else if (a == "--tokens") {
      tokens_path = v;
    } else if (a == "--out") {
      out_path = v;
    } else if (a == "--backend") {
      backend = v;
    } else if (a == "--threads") {
      if (!ParseInt(v, 1, &threads)) return Fail(std::string("bad --threads value '") + v + "'");
    } else if (a == "--gdn-chunk-min") {
      if (!ParseInt(v, 1, &chunk_min))
        return Fail(std::string("bad --gdn-chunk-min value '") + v + "'");
    } else if (a == "--ubatch") {
      if (!ParseInt(v, 1, &ubatch)) return Fail(std::string("bad --ubatch value '") + v + "'");
    } else {
      return Fail("unknown option '" + a + "'");
    }
  }
  if (model_path.empty() || tokens_path.empty() || out_path.empty()) {
    return Fail("--model, --tokens and --out are required");
  }
  qwenrt::BackendKind kind;
  if (backend == "ref") {
    kind = qwenrt::BackendKind::kRef;
  } else if (backend == "cpu") {
    kind = qwenrt::BackendKind::kCpu;
  } else if (backend == "cuda") {
    kind = qwenrt::BackendKind::kCuda;
  } else {
    return Fail("unknown backend '" + backend + "' (ref, cpu or cuda)");
  }

  std::ifstream tf(tokens_path);
  if (!tf) return Fail("cannot open token file '" + tokens_path + "'");
  std::vector<int32_t> tokens;
  std::string word;
  while (tf >> word) {
    int64_t id;
    if (!ParseInt(word.c_str(), 0, &id) || id > INT32_MAX) {
      return Fail("token file '" + tokens_path + "': '" + word + "' is not a token id");
    }
    tokens.push_back(static_cast<int32_t>(id));
  }
  if (tokens.empty()) return Fail("token file '" + tokens_path + "' holds no token ids");

  auto model = qwenrt::Model::Load(model_path);
  if (!model.ok()) return Fail(model.status().ToString());
  const qwenrt::ModelConfig& c = (*model)->config();
  qwenrt::ThreadPool pool(static_cast<int>(threads));
  qwenrt::ForwardContext::Options opts;
  opts.max_ubatch = ubatch;
  opts.backend.gdn_chunk_min_tokens = chunk_min;
  auto ctx = qwenrt::ForwardContext::Create(**model, kind, &pool, opts);
  if (!ctx.ok()) return Fail(ctx.status().ToString());
  auto kv = qwenrt::KvCache::Create(c, static_cast<int64_t>(tokens.size()));
  if (!kv.ok()) return Fail(kv.status().ToString());
  auto rec = qwenrt::RecurrentState::Create(c);
  if (!rec.ok()) return Fail(rec.status().ToString());

  std::vector<float> logits;
  try {
    logits.resize(tokens.size() * static_cast<size_t>(c.n_vocab));
  } catch (const std::bad_alloc&) {
    return Fail("out of memory for the logits");
  }
  const auto t0 = std::chrono::steady_clock::now();
  qwenrt_examples::ProgressBar bar;  // a long file takes minutes on a CPU
  bar.Start("eval");
  for (size_t b = 0; b < tokens.size(); b += static_cast<size_t>(ubatch)) {
    const size_t n = std::min(tokens.size() - b, static_cast<size_t>(ubatch));
    const qwenrt::Status st = qwenrt::Forward(**ctx, *kv, *rec, std::span(tokens.data() + b, n),
                                              true, logits.data() + b * c.n_vocab);
    if (!st.ok()) {
      bar.Clear();
      return Fail(st.ToString());
    }
    bar.Update(static_cast<int64_t>(b + n), static_cast<int64_t>(tokens.size()));
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::FILE* f = std::fopen(out_path.c_str(), "wb");
  if (f == nullptr) return Fail("cannot write '" + out_path + "': " + std::strerror(errno));
  const size_t written = std::fwrite(logits.data(), sizeof(float), logits.size(), f);
  if (std::fclose(f) != 0 || written != logits.size())
    return Fail("error writing '" + out_path + "'");
  std::fprintf(stderr,
               "eval: %zu tokens, backend %s, %lld threads, ubatch %lld: %.3f s (%.1f tokens/s)\n",
               tokens.size(), backend.c_str(), static_cast<long long>(threads),
               static_cast<long long>(ubatch), secs, tokens.size() / secs);
  return 0;
}

const bool kRegistered = qwenrt::cli::RegisterCommand(
    "eval",
    {"eval --model M.gguf --tokens T.txt --out O.f32 [--backend ref|cpu] [--threads N] [--ubatch N]"
     " [--gdn-chunk-min N]",
     RunEval});

}  // namespace
