// End-to-end speed of the forward pass on a synthetic model with the real Qwen3.5-0.8B shapes
// (random Q4_K_M weights; the speed does not depend on the values), in llama.cpp's terms:
//   pp<N>: prefill N tokens from an empty state (N = 512, 128), one Forward call, last logits only;
//   tg64:  decode 64 tokens one at a time after a 16-token prompt (the prompt is not timed).
// Counters: tokens/s. Backend cpu (threads = QWENRT_BENCH_THREADS or nproc); ref once for pp128
// to give a cpu/ref ratio; cuda (pp512, pp128, tg64 after 16 and after 2048 tokens) when a device
// is present. Select with --benchmark_filter (e.g. 'cuda'). The model is QWENRT_BENCH_MODEL, else
// /tmp/qwenrt-bench-0.8b.gguf, written once (about a minute) when it is missing.
//
//   ./build/bench/forward_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/thread_pool.h"
#include "bench_threads.h"
#include "model/forward.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/recurrent_state.h"
#include "testing/synth_model.h"

namespace qwenrt {
namespace {

// QWENRT_BENCH_SPIN: the pool's spin in µs (0 = the plain condvar pool), for A/B runs.
ThreadPool& Pool() {
  static ThreadPool pool(BenchThreads(), std::getenv("QWENRT_BENCH_SPIN")
                                             ? std::atoi(std::getenv("QWENRT_BENCH_SPIN"))
                                             : ThreadPool::kAutoSpin);
  return pool;
}

// Loaded once for all benchmarks; nullptr (with a message) when it cannot be made or loaded.
const Model* BenchModel() {
  static std::shared_ptr<const Model> model = [] {
    const char* env = std::getenv("QWENRT_BENCH_MODEL");
    const std::string path = env ? env : "/tmp/qwenrt-bench-0.8b.gguf";
    if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
      std::fclose(f);
    } else {
      SynthOptions opt;
      if (!FindSynthShape("0.8b", &opt.shape)) return std::shared_ptr<const Model>();
      const char* data = std::getenv("QWENRT_TEST_DATA");  // the fixtures elsewhere (device runs)
      opt.vocab_from = std::string(data ? data : QWENRT_TEST_DATA) + "/tiny-s1-q4km.gguf";
      std::fprintf(stderr, "writing %s (0.8B shape, random Q4_K_M)...\n", path.c_str());
      if (Status s = WriteSynthModel(opt, path, Pool()); !s.ok()) {
        std::fprintf(stderr, "synth failed: %s\n", s.ToString().c_str());
        return std::shared_ptr<const Model>();
      }
    }
    auto loaded = Model::Load(path);
    if (!loaded.ok()) {
      std::fprintf(stderr, "load %s failed: %s\n", path.c_str(),
                   loaded.status().ToString().c_str());
      return std::shared_ptr<const Model>();
    }
    return std::shared_ptr<const Model>(std::move(loaded).value());
  }();
  return model.get();
}

// Everything one benchmark needs, allocated before timing starts.
struct Rig {
  std::unique_ptr<ForwardContext> ctx;
  std::unique_ptr<KvCache> kv;
  std::unique_ptr<RecurrentState> rec;
  std::vector<float> logits;
  std::vector<int32_t> tokens;
};

bool MakeRig(benchmark::State& st, BackendKind kind, int64_t n_tokens, int64_t chunk_min,
             Rig* rig) {
  const Model* model = BenchModel();
  if (model == nullptr) {
    st.SkipWithError("no benchmark model");
    return false;
  }
  const ModelConfig& cfg = model->config();
  ForwardContext::Options opt;
  opt.max_ubatch = 512;
  if (chunk_min > 0) opt.backend.gdn_chunk_min_tokens = chunk_min;
  auto ctx = ForwardContext::Create(*model, kind, &Pool(), opt);
  auto kv = KvCache::Create(cfg, 4096, n_tokens);
  auto rec = RecurrentState::Create(cfg);
  if (!ctx.ok() || !kv.ok() || !rec.ok()) {
    st.SkipWithError("cannot create the forward state");
    return false;
  }
  rig->ctx = std::move(ctx).value();
  rig->kv = std::make_unique<KvCache>(std::move(kv).value());
  rig->rec = std::make_unique<RecurrentState>(std::move(rec).value());
  rig->logits.resize(static_cast<size_t>(cfg.n_vocab));
  // Deterministic ids spread over the ordinary-text part of the vocabulary.
  uint32_t x = 12345;
  for (int64_t i = 0; i < n_tokens; ++i) {
    x = x * 1664525u + 1013904223u;
    rig->tokens.push_back(static_cast<int32_t>((x >> 8) % 150000u));
  }
  return true;
}

// Args: {n_tokens, gdn_chunk_min_tokens (0: default chunked; huge: recurrent only)}.
template <BackendKind kKind>
void BM_Prefill(benchmark::State& st) {
  Rig rig;
  if (!MakeRig(st, kKind, st.range(0), st.range(1), &rig)) return;
  for (auto _ : st) {
    st.PauseTiming();
    rig.kv->Truncate(0);
    rig.rec->Reset();
    st.ResumeTiming();
    Status s = Forward(*rig.ctx, *rig.kv, *rig.rec, rig.tokens, false, rig.logits.data());
    if (!s.ok()) {
      st.SkipWithError(s.ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(rig.logits.data());
  }
  st.counters["tokens/s"] = benchmark::Counter(double(st.range(0)) * double(st.iterations()),
                                               benchmark::Counter::kIsRate);
  st.counters["threads"] =
      kKind == BackendKind::kCpu ? Pool().size() : 1;  // ref, cuda: one host thread
}

// Args: {n_prompt, n_decode}.
template <BackendKind kKind>
void BM_Decode(benchmark::State& st) {
  const int64_t n_prompt = st.range(0), n_decode = st.range(1);
  Rig rig;
  if (!MakeRig(st, kKind, n_prompt + n_decode, 0, &rig)) return;
  const std::span<const int32_t> all(rig.tokens);
  for (auto _ : st) {
    st.PauseTiming();
    rig.kv->Truncate(0);
    rig.rec->Reset();
    Status s = Forward(*rig.ctx, *rig.kv, *rig.rec, all.first(n_prompt), false, rig.logits.data());
    st.ResumeTiming();
    for (int64_t i = 0; s.ok() && i < n_decode; ++i) {
      s = Forward(*rig.ctx, *rig.kv, *rig.rec, all.subspan(n_prompt + i, 1), false,
                  rig.logits.data());
      benchmark::DoNotOptimize(rig.logits.data());
    }
    if (!s.ok()) {
      st.SkipWithError(s.ToString().c_str());
      return;
    }
  }
  st.counters["tokens/s"] =
      benchmark::Counter(double(n_decode) * double(st.iterations()), benchmark::Counter::kIsRate);
  st.counters["threads"] = kKind == BackendKind::kCpu ? Pool().size() : 1;
  st.counters["spin_us"] = Pool().spin_micros();
}

constexpr int64_t kRecurrentOnly = INT64_MAX;

BENCHMARK_TEMPLATE(BM_Prefill, BackendKind::kCpu)
    ->Name("pp/cpu")
    ->ArgNames({"tokens", "chunk_min"})
    ->Args({512, 0})
    ->Args({128, 0})
    ->Args({512, kRecurrentOnly})  // what a split-invariant Session runs
    ->Iterations(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_Decode, BackendKind::kCpu)
    ->Name("tg/cpu")
    ->ArgNames({"prompt", "tokens"})
    ->Args({16, 64})
    ->Iterations(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_Prefill, BackendKind::kRef)
    ->Name("pp/ref")
    ->ArgNames({"tokens", "chunk_min"})
    ->Args({128, 0})
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// The GPU (skipped with an error line when there is no CUDA device): exact f32 path, weights
// decoded on the fly, split-invariant like a Session runs it.
BENCHMARK_TEMPLATE(BM_Prefill, BackendKind::kCuda)
    ->Name("pp/cuda")
    ->ArgNames({"tokens", "chunk_min"})
    ->Args({512, 0})
    ->Args({128, 0})
    ->Iterations(5)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_TEMPLATE(BM_Decode, BackendKind::kCuda)
    ->Name("tg/cuda")
    ->ArgNames({"prompt", "tokens"})
    ->Args({16, 64})
    ->Args({2048, 64})
    ->Iterations(3)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace qwenrt

BENCHMARK_MAIN();
