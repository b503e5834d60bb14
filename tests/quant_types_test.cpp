// The weight types beyond Q4_K_M's on real files written by the peer's quantizer
// (tests/data/quant/, see its README.md):
//  - every quantized tensor of every file dequantizes bit for bit as gguf-py's reference
//  dequantizers
//    do (dequant-refs.txt, written by scripts/quant_fixture_refs.py);
//  - golden logits: the reference backend reproduces the committed *.seqB.ref.f32 (our own exact
//    path), which is cross-checked against the unquantized parent's exact logits; the CPU fast path
//    (Q8_0 / Q8_K activations) stays within the fixtures' fast-path bar of it; CPU prefill equals
//    token-by-token decode bit for bit for every type's multi-token kernels;
//  - hostile variants of a real file: an out-of-range type id, a row that is not a whole number of
//    blocks.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "model_test_util.h"
#include "ops/quant.h"
#include "qwenrt/gguf.hpp"

namespace qwenrt::test {
namespace {

// Same hash as scripts/quant_fixture_refs.py: sum_i bits_i * (2i + 1) mod 2^64.
uint64_t TensorHash(const std::vector<float>& v) {
  uint64_t h = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &v[i], 4);
    h += static_cast<uint64_t>(bits) * (2 * static_cast<uint64_t>(i) + 1);
  }
  return h;
}

struct RefLine {
  std::string file, tensor, type;
  int64_t n = 0;
  uint64_t hash = 0;
  uint32_t first[8] = {};
};

std::vector<RefLine> ReadRefs() {
  std::ifstream in(DataPath("quant/dequant-refs.txt"));
  REQUIRE(in.good());
  std::vector<RefLine> refs;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    RefLine r;
    std::string hash;
    ls >> r.file >> r.tensor >> r.type >> r.n >> hash;
    r.hash = std::stoull(hash, nullptr, 16);
    for (uint32_t& f : r.first) {
      std::string x;
      ls >> x;
      f = static_cast<uint32_t>(std::stoul(x, nullptr, 16));
    }
    REQUIRE(!ls.fail());
    refs.push_back(r);
  }
  return refs;
}

TEST_CASE("every quantized fixture tensor dequantizes bit for bit as gguf-py", "[ref][golden]") {
  const auto refs = ReadRefs();
  REQUIRE(refs.size() > 200);
  std::string open_name;
  std::optional<gguf::File> file;
  std::set<std::string> types_seen;
  for (const RefLine& r : refs) {
    if (r.file != open_name) {
      gguf::Error err;
      file = gguf::File::Open(DataPath("quant/" + r.file), &err);
      INFO(err.message);
      REQUIRE(file.has_value());
      open_name = r.file;
    }
    CAPTURE(r.file, r.tensor, r.type);
    const gguf::TensorInfo* t = file->FindTensor(r.tensor);
    REQUIRE(t != nullptr);
    REQUIRE(gguf::TypeName(t->type) == r.type);
    REQUIRE(t->nelements() == r.n);
    std::vector<float> v(static_cast<size_t>(r.n));
    const int64_t cols = t->ne[0];
    for (uint64_t row = 0; row < t->nrows(); ++row) {
      REQUIRE(
          ref::DequantizeRow(t->type, t->data + row * t->row_bytes(), v.data() + row * cols, cols));
    }
    for (int i = 0; i < 8; ++i) {
      uint32_t bits;
      std::memcpy(&bits, &v[static_cast<size_t>(i)], 4);
      CHECK(bits == r.first[i]);
    }
    CHECK(TensorHash(v) == r.hash);
    types_seen.insert(r.type);
  }
  // Every new type is covered by a real file (and the mixed file's K-quants / Q8_0).
  for (const char* t : {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "IQ4_NL", "MXFP4", "Q2_K", "Q3_K", "IQ4_XS",
                        "Q5_K", "Q6_K", "Q8_0"}) {
    CAPTURE(t);
    CHECK(types_seen.count(t) == 1);
  }
}

// name: file stem in tests/data/quant; parent: the exact logits it is cross-checked against.
struct Fixture {
  const char* name;
  const char* parent;
  double parent_mean_over_std;  // bound on golden vs parent: the quantization error of the type
};
// The parent bounds are 1.3x the distance measured when the fixtures were made (README.md). These
// are random-weight models, where quantization error is large (no structure to preserve; 2-3 bit
// types lose nearly everything), so the bounds only catch a decoder gone wrong (NaN, or a
// regression of the type's fidelity); the bit-identical dequantization above is the real check.
const Fixture kFixtures[] = {
    {"micro-q4_0", "logits/micro-s1-f32.seqB.exact.f32", 1.3 * 0.329},
    {"micro-q4_1", "logits/micro-s1-f32.seqB.exact.f32", 1.3 * 0.332},
    {"micro-q5_0", "logits/micro-s1-f32.seqB.exact.f32", 1.3 * 0.215},
    {"micro-q5_1", "logits/micro-s1-f32.seqB.exact.f32", 1.3 * 0.166},
    {"micro-iq4_nl", "logits/micro-s1-f32.seqB.exact.f32", 1.3 * 0.293},
    {"micro-mxfp4", "logits/micro-s1-f32.seqB.exact.f32", 1.3 * 0.431},
    {"tiny4-q2_k", "quant/tiny4-q4km-parent.seqB.ref.f32", 1.1 * 0.970},
    {"tiny4-q3_k", "quant/tiny4-q4km-parent.seqB.ref.f32", 1.3 * 0.742},
    {"tiny4-ud-iq4xs", "quant/tiny4-q4km-parent.seqB.ref.f32", 1.3 * 0.269},
    {"tinymoe-mxfp4moe", "logits/tinymoe-s1-q4km.seqB.exact.f32",
     1.3 * 0.205},  // MXFP4 routed experts
};

// The fixtures README's fast-path bar for dense models: mean|d|/std <= 1.25 x the peer's 0.0571
// (its worst dense figure). Top-1 agreement: the README asks for at least the peer's on the same
// file, which is not measured for these files; the logits of these requantized random models are
// flat (one flip in 40 tokens is 0.025), and the measured agreement is 0.85 to 0.975, so the bar is
// 0.8.
constexpr double kFastMeanOverStd = 1.25 * 0.0571;
constexpr double kFastTop1 = 0.8;

TEST_CASE("golden logits of every quantized fixture, reference and CPU paths",
          "[golden][ref][cpu]") {
  const auto tokens = ReadTokens("tokens/seqB.txt");
  for (const Fixture& fx : kFixtures) {
    INFO(fx.name);
    auto model = LoadFixture(std::string("quant/") + fx.name);
    const int64_t V = model->config().n_vocab;
    const auto golden = ReadF32(std::string("quant/") + fx.name + ".seqB.ref.f32");
    const auto parent = ReadF32(fx.parent);
    REQUIRE(golden.size() == tokens.size() * static_cast<size_t>(V));
    REQUIRE(parent.size() == golden.size());

    Runner ref(model, BackendKind::kRef);
    const Distance dr = Compare(ref.Run(tokens), golden, V);
    CHECK(dr.max_rel <= 1e-5);  // the same exact path that wrote the file

    const Distance dp = Compare(golden, parent, V);
    WARN(fx.name << ": golden vs parent: mean|d|/std = " << dp.mean_over_std
                 << ", max/max = " << dp.max_rel << ", top-1 = " << dp.top1);
    CHECK(dp.mean_over_std <= fx.parent_mean_over_std);

    Runner cpu(model, BackendKind::kCpu);
    const auto prefill = cpu.Run(tokens);
    const Distance dc = Compare(prefill, golden, V);
    WARN(fx.name << ": cpu vs golden: mean|d|/std = " << dc.mean_over_std
                 << ", max/max = " << dc.max_rel << ", top-1 = " << dc.top1);
    CHECK(dc.mean_over_std <= kFastMeanOverStd);
    CHECK(dc.top1 >= kFastTop1);

    // Every token count of the multi-token kernels gives the one-token result bit for bit (on the
    // recurrent form of the gated delta net: its chunked prefill form rounds differently by
    // design).
    BackendOptions recurrent;
    recurrent.gdn_chunk_min_tokens = INT64_MAX;
    Runner rec(model, BackendKind::kCpu, 512, recurrent);
    const auto at_once = rec.Run(tokens);
    rec.Reset();
    const auto decode = rec.Run(tokens, {1});
    CHECK(std::memcmp(at_once.data(), decode.data(), at_once.size() * sizeof(float)) == 0);

    // The same with the weights packed where this CPU has a fast packed kernel for their type (the
    // matrices at least 256 wide): the fast-path bounds, and prefill == decode bit for bit.
    auto packed = LoadFixture(std::string("quant/") + fx.name, /*pack_weights=*/true);
    if (packed->packed_bytes() == 0) continue;
    Runner pk(packed, BackendKind::kCpu, 512, recurrent);
    const auto packed_prefill = pk.Run(tokens);
    const Distance dk = Compare(packed_prefill, golden, V);
    WARN(fx.name << ": packed cpu vs golden: mean|d|/std = " << dk.mean_over_std
                 << ", top-1 = " << dk.top1);
    CHECK(dk.mean_over_std <= kFastMeanOverStd);
    CHECK(dk.top1 >= kFastTop1);
    pk.Reset();
    const auto packed_decode = pk.Run(tokens, {1});
    CHECK(std::memcmp(packed_prefill.data(), packed_decode.data(),
                      packed_prefill.size() * sizeof(float)) == 0);
  }
}

// A copy of `rel` with `patch` applied to the bytes of the tensor-info record of `tensor`
// (p points at its n_dims field); returns the copy's path.
template <typename Patch>
std::string PatchedCopy(const std::string& rel, const std::string& tensor,
                        const std::string& out_name, Patch patch) {
  std::string bytes = ReadFile(DataPath(rel));
  // The record: u64 name length, name, u32 n_dims, i64 ne[n_dims], i32 type, u64 offset.
  std::string key(8, '\0');
  const uint64_t len = tensor.size();
  std::memcpy(key.data(), &len, 8);
  key += tensor;
  const size_t at = bytes.find(key);
  REQUIRE(at != std::string::npos);
  patch(reinterpret_cast<uint8_t*>(bytes.data()) + at + key.size());
  const std::string path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") +
                           "/qwenrt-" + std::to_string(::getpid()) + "-" + out_name;
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

TEST_CASE("hostile type ids and row sizes in a real quantized file", "[hostile]") {
  const std::string rel = "quant/micro-q4_0.gguf", name = "blk.0.ffn_up.weight";
  {
    const auto path = PatchedCopy(rel, name, "bad-type.gguf", [](uint8_t* p) {
      uint32_t n_dims;
      std::memcpy(&n_dims, p, 4);
      const int32_t type = 77;  // outside [0, 43)
      std::memcpy(p + 4 + 8 * n_dims, &type, 4);
    });
    gguf::Error err;
    CHECK_FALSE(gguf::File::Open(path, &err).has_value());
    CHECK(err.code == gguf::ErrorCode::kBadTensorType);
    CHECK(err.message.find(name) != std::string::npos);
    CHECK(err.message.find("77") != std::string::npos);
    auto m = Model::Load(path);
    CHECK(m.status().code() == StatusCode::kBadFormat);
    std::remove(path.c_str());
  }
  {
    // ne0 = 48: not a multiple of Q4_0's 32-element block.
    const auto path = PatchedCopy(rel, name, "bad-row.gguf", [](uint8_t* p) {
      const int64_t ne0 = 48;
      std::memcpy(p + 4, &ne0, 8);
    });
    gguf::Error err;
    CHECK_FALSE(gguf::File::Open(path, &err).has_value());
    CHECK(err.code == gguf::ErrorCode::kBadBlockMultiple);
    CHECK(err.message.find(name) != std::string::npos);
    CHECK(err.message.find("Q4_0") != std::string::npos);
    std::remove(path.c_str());
  }
  {
    // A valid type qwenrt does not implement (TQ1_0, id 34; ne0 64 is not a multiple of its 256, so
    // also make the row 256 wide): refused by name and type, never computed.
    const auto path = PatchedCopy(rel, name, "unsupported.gguf", [](uint8_t* p) {
      uint32_t n_dims;
      std::memcpy(&n_dims, p, 4);
      const int32_t type = 34;
      std::memcpy(p + 4 + 8 * n_dims, &type, 4);
    });
    gguf::Error err;
    CHECK_FALSE(gguf::File::Open(path, &err).has_value());
    CHECK(err.code == gguf::ErrorCode::kUnsupportedType);
    CHECK(err.message.find(name) != std::string::npos);
    CHECK(err.message.find("TQ1_0") != std::string::npos);
    auto m = Model::Load(path);
    CHECK(m.status().code() == StatusCode::kUnsupported);
    std::remove(path.c_str());
  }
}

}  // namespace
}  // namespace qwenrt::test
