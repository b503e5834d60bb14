// YaRN rope scaling against transformers' own tables (tests/data/rope/yarn_transformers.txt,
// written by scripts/gen_yarn_reference.py from ROPE_INIT_FUNCTIONS["yarn"]): the ref and CPU
// backends rotate a unit vector per pair and must reproduce transformers' cos and sin (attention
// scaling included) to float32 angle precision. The same tables without YaRN differ by far more,
// so a lost ramp or mscale fails here.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "model/backend.h"
#include "ops/rope.h"
#include "test_util.h"

using namespace qwenrt;
using qwenrt::test::DataPath;

namespace {

struct YarnCase {
  std::string name;
  int64_t R = 0, orig = 0;
  float base = 0, factor = 0, beta_fast = 0, beta_slow = 0, attn = 0;
  std::vector<int64_t> pos;
  std::vector<std::vector<float>> cos_sin;  // [pos][R]: cos_0 sin_0 cos_1 sin_1 ...
};

std::vector<YarnCase> ReadCases() {
  std::ifstream f(DataPath("rope/yarn_transformers.txt"));
  REQUIRE(f.good());
  std::vector<YarnCase> cases;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    if (line.rfind("case ", 0) == 0) {
      YarnCase c;
      std::string tag;
      in >> tag >> c.name >> c.R >> c.base >> c.factor >> c.orig >> c.beta_fast >> c.beta_slow >>
          c.attn;
      REQUIRE(!in.fail());
      cases.push_back(c);
      continue;
    }
    REQUIRE(!cases.empty());
    YarnCase& c = cases.back();
    int64_t p = 0;
    in >> p;
    std::vector<float> row(c.R);
    for (float& v : row) in >> v;
    REQUIRE(!in.fail());
    c.pos.push_back(p);
    c.cos_sin.push_back(row);
  }
  return cases;
}

// cos, sin of every pair at `pos`, read off the rotation of x = (1, ..., 1, 0, ..., 0).
std::vector<float> CosSin(Backend& be, const RopeParams& p, int64_t pos) {
  const int64_t half = p.n_dims / 2;
  std::vector<float> x(p.n_dims, 0.0f);
  for (int64_t i = 0; i < half; ++i) x[i] = 1.0f;
  be.Rope(x.data(), 1, 1, p.n_dims, pos, p);
  std::vector<float> cs(p.n_dims);
  for (int64_t i = 0; i < half; ++i) {
    cs[2 * i] = x[i];
    cs[2 * i + 1] = x[i + half];
  }
  return cs;
}

}  // namespace

TEST_CASE("YaRN rope equals transformers' yarn tables", "[ref][cpu]") {
  const auto cases = ReadCases();
  REQUIRE(cases.size() >= 3);
  ThreadPool pool(2);
  auto ref = std::move(MakeBackend(BackendKind::kRef, nullptr, {})).value();
  auto cpu = std::move(MakeBackend(BackendKind::kCpu, &pool, {})).value();
  for (const YarnCase& c : cases) {
    INFO("case " << c.name);
    RopeParams yarn{c.R, c.base, 1.0f / c.factor, nullptr, {}};
    yarn.yarn = YarnFor(c.R, c.base, c.factor, c.orig, c.beta_fast, c.beta_slow, c.attn, 1.0f);
    const RopeParams plain{c.R, c.base, 1.0f, nullptr, {}};
    double worst_plain = 0;
    for (size_t k = 0; k < c.pos.size(); ++k) {
      const int64_t pos = c.pos[k];
      INFO("position " << pos);
      // Both sides compute the angle in float32 (theta = pos * base^(-2i/R)), rounded differently:
      // the angle's error grows with it, ~ pos * a few ulps.
      const double tol = 2e-5 + 2.5e-7 * static_cast<double>(pos);
      const auto r = CosSin(*ref, yarn, pos), q = CosSin(*cpu, yarn, pos);
      CHECK(r == q);  // the CPU backend is ref bit for bit
      const auto u = CosSin(*ref, plain, pos);
      for (int64_t j = 0; j < c.R; ++j) {
        INFO("pair " << j / 2 << (j % 2 ? " sin" : " cos"));
        CHECK(std::fabs(r[j] - c.cos_sin[k][j]) <= tol);
        worst_plain = std::max(worst_plain, std::fabs(static_cast<double>(u[j] - c.cos_sin[k][j])));
      }
    }
    // Without YaRN the same rotation is far from transformers' (mscale alone is >= 7 % here).
    CHECK(worst_plain > 0.05);
  }
}
