// `qwenrt-cli synth`: writes a random-weight Qwen3.5 Q4_K_M GGUF at a real shape (see
// src/testing/synth_model.h), so benchmarks can run at 0.8B / 4B size without real weights.
// The tokenizer comes from a fixture GGUF; by default the one in the source tree this binary was
// built from (an absolute path compiled in), so synth works from any working directory.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "base/thread_pool.h"
#include "cli_command.h"
#include "testing/synth_model.h"

namespace qwenrt::cli {
namespace {

#ifndef QWENRT_SYNTH_DEFAULT_VOCAB
#error \
    "examples/cli/CMakeLists.txt defines QWENRT_SYNTH_DEFAULT_VOCAB (the fixture vocabulary's path)"
#endif

constexpr const char* kUsage =
    "synth --shape 0.8b|4b|tiny --out M.gguf [--seed S] [--layers N] [--threads N] [--mtp]\n"
    "        [--vocab-from V.gguf (default: " QWENRT_SYNTH_DEFAULT_VOCAB ")]";

bool ParseInt(const char* s, int64_t lo, int64_t hi, int64_t* out) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

int RunSynth(int argc, char** argv) {
  std::string shape_name, out, vocab = QWENRT_SYNTH_DEFAULT_VOCAB;
  bool vocab_given = false, mtp = false;
  int64_t seed = 1, layers = 0, threads = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--mtp") {  // a flag: one MTP (next-n) block after the trunk
      mtp = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "synth: %s needs a value\nusage: qwenrt-cli %s\n", arg.c_str(), kUsage);
      return 2;
    }
    const char* val = argv[++i];
    bool ok = true;
    if (arg == "--shape")
      shape_name = val;
    else if (arg == "--out")
      out = val;
    else if (arg == "--vocab-from")
      vocab = val, vocab_given = true;
    else if (arg == "--seed")
      ok = ParseInt(val, 0, INT64_MAX, &seed);
    else if (arg == "--layers")
      ok = ParseInt(val, 1, 512, &layers);
    else if (arg == "--threads")
      ok = ParseInt(val, 1, 1024, &threads);
    else {
      std::fprintf(stderr, "synth: unknown option %s\nusage: qwenrt-cli %s\n", arg.c_str(), kUsage);
      return 2;
    }
    if (!ok) {
      std::fprintf(stderr, "synth: bad value '%s' for %s\n", val, arg.c_str());
      return 2;
    }
  }
  SynthOptions options;
  if (shape_name.empty() || out.empty() || !FindSynthShape(shape_name, &options.shape)) {
    std::fprintf(stderr, "synth: need --shape (0.8b, 4b or tiny) and --out\nusage: qwenrt-cli %s\n",
                 kUsage);
    return 2;
  }
  if (layers > 0) options.shape.n_layer = layers;
  options.seed = static_cast<uint64_t>(seed);
  options.mtp = mtp;
  options.vocab_from = vocab;
  if (!vocab_given) {
    // The compiled-in path is gone when the binary outlived or left its source tree: say which
    // file is missing and how to choose another, rather than a bare "cannot read".
    if (FILE* f = std::fopen(vocab.c_str(), "rb")) {
      std::fclose(f);
    } else {
      std::fprintf(
          stderr,
          "synth: cannot open the default vocabulary %s (%s): it is the fixture in the "
          "source tree qwenrt-cli was built from; pass --vocab-from FILE.gguf (a GGUF with "
          "the Qwen3.5 tokenizer, e.g. tests/data/tiny-s1-q4km.gguf)\n",
          vocab.c_str(), std::strerror(errno));
      return 1;
    }
  }
  ThreadPool pool(static_cast<int>(threads));
  const auto t0 = std::chrono::steady_clock::now();
  const Status st = WriteSynthModel(options, out, pool);
  if (!st.ok()) {
    std::fprintf(stderr, "synth: %s\n", st.ToString().c_str());
    return 1;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("wrote %s (shape %s, %lld layers%s, seed %lld) in %.1f s\n", out.c_str(),
              shape_name.c_str(), static_cast<long long>(options.shape.n_layer),
              mtp ? " + 1 MTP block" : "", static_cast<long long>(seed), s);
  return 0;
}

const bool kRegistered = RegisterCommand("synth", Command{kUsage, RunSynth});

}  // namespace
}  // namespace qwenrt::cli
