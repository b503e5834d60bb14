// Helpers shared by the model tests: fixture paths, token files, logits files, and a forward
// driver that prefills a token sequence from position 0.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/forward.h"
#include "model/model.h"
#include "test_util.h"

namespace qwenrt::test {

inline std::vector<int32_t> ReadTokens(const std::string& rel) {
  std::ifstream f(DataPath(rel));
  std::vector<int32_t> ids;
  for (int64_t x; f >> x;) ids.push_back(static_cast<int32_t>(x));
  return ids;
}

inline std::vector<float> ReadF32(const std::string& rel) {
  std::ifstream f(DataPath(rel), std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

inline std::shared_ptr<const Model> LoadFixture(const std::string& name,
                                                bool pack_weights = false) {
  ModelLoadOptions options;
  options.pack_weights = pack_weights;
  auto m = Model::Load(DataPath(name + ".gguf"), options);
  if (!m.ok()) throw std::runtime_error(m.status().ToString());
  return *m;
}

// Fresh state for `model`, fed `tokens` in pieces of the given sizes (the last size repeats);
// returns all logits [T, V].
struct Runner {
  std::shared_ptr<const Model> model;
  BackendKind kind;
  std::unique_ptr<ThreadPool> pool = std::make_unique<ThreadPool>(2);
  std::unique_ptr<ForwardContext> ctx;
  std::unique_ptr<KvCache> kv;
  std::unique_ptr<RecurrentState> rec;

  KvCacheOptions kv_options;  // storage type and page size of the caches Reset makes

  Runner(std::shared_ptr<const Model> m, BackendKind k, int64_t max_ubatch = 512,
         BackendOptions backend = {}, KvCacheOptions kv_opts = {})
      : model(std::move(m)), kind(k), kv_options(kv_opts) {
    ForwardContext::Options o;
    o.max_ubatch = max_ubatch;
    o.backend = backend;
    ctx = std::move(ForwardContext::Create(*model, kind, pool.get(), o).value());
    Reset();
  }
  void Reset() {
    kv = std::make_unique<KvCache>(
        std::move(KvCache::Create(model->config(), 0, 0, kv_options).value()));
    rec = std::make_unique<RecurrentState>(
        std::move(RecurrentState::Create(model->config()).value()));
  }
  std::vector<float> Run(const std::vector<int32_t>& tokens, std::vector<int64_t> pieces = {}) {
    const int64_t V = model->config().n_vocab, T = static_cast<int64_t>(tokens.size());
    std::vector<float> logits(static_cast<size_t>(T * V));
    if (pieces.empty()) pieces = {T};
    for (int64_t b = 0, i = 0; b < T; ++i) {
      const int64_t n = std::min(T - b, pieces[std::min<size_t>(i, pieces.size() - 1)]);
      Status st =
          Forward(*ctx, *kv, *rec, std::span(tokens.data() + b, n), true, logits.data() + b * V);
      if (!st.ok()) throw std::runtime_error(st.ToString());
      b += n;
    }
    return logits;
  }
};

struct Distance {
  double max_rel = 0;        // max |a - e| / max |e|
  double mean_over_std = 0;  // mean |a - e| / std(e)
  double top1 = 0;           // fraction of rows with the same argmax
};

inline Distance Compare(const std::vector<float>& a, const std::vector<float>& e, int64_t V) {
  Distance d;
  double mx = 0, md = 0, sum_d = 0, sum = 0, sum2 = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    mx = std::max(mx, std::abs(double(e[i])));
    md = std::max(md, std::abs(double(a[i]) - e[i]));
    sum_d += std::abs(double(a[i]) - e[i]);
    sum += e[i];
    sum2 += double(e[i]) * e[i];
  }
  const double n = static_cast<double>(e.size());
  const double mean = sum / n, sd = std::sqrt(std::max(0.0, sum2 / n - mean * mean));
  d.max_rel = md / mx;
  d.mean_over_std = sum_d / n / sd;
  const int64_t rows = static_cast<int64_t>(e.size()) / V;
  int64_t same = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* pa = a.data() + r * V;
    const float* pe = e.data() + r * V;
    same += std::max_element(pa, pa + V) - pa == std::max_element(pe, pe + V) - pe;
  }
  d.top1 = static_cast<double>(same) / static_cast<double>(rows);
  return d;
}

}  // namespace qwenrt::test
