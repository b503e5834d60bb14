// Packing in place (ModelLoadOptions::pack_weights, model/weight_pages.h): a mapped file's pages
// that hold only packed matrices are given back at load, so resident weights stay about the file's
// size. The packed rows must be exactly those of a load that keeps the file in memory (same logits,
// bit for bit), the file's rows must stay readable (the reference backend reads them from the file
// again), the accounting and the process's own VmRSS must agree that the weights are held once,
// and a damaged file must still be refused with its error.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "model/packed_weights.h"
#include "model_test_util.h"
#include "ops/packed.h"
#include "quick_mode.h"
#include "qwenrt/qwenrt.h"
#include "session/memory_estimate.h"
#include "testing/synth_model.h"

namespace qwenrt {
namespace {

using test::DataPath;
using test::Runner;

// An odd synthetic shape: 768-wide (3 super-blocks), 8 value heads (alpha / beta matrices of 8
// rows: not a whole 16-row group), F = 1792 (7 super-blocks); three recurrent layers and one
// attention layer.
// About 14 MB, so that most of its pages hold only packed matrices.
std::string OddSynthModel() {
  static const std::string path = [] {
    SynthOptions o;
    REQUIRE(FindSynthShape("tiny", &o.shape));
    o.shape.name = "odd";
    o.shape.n_embd = 768;
    o.shape.n_layer = 4;
    o.shape.n_head = 4;
    o.shape.ssm_hk = 2;
    o.shape.ssm_hv = 8;
    o.shape.n_ff = testing::QuickMode() ? 768 : 1792;
    o.vocab_from = DataPath("tiny-s1-q4km.gguf");
    o.seed = 7;
    const std::string p = "/tmp/qwenrt_packed_in_place_" + std::to_string(getpid()) + ".gguf";
    ThreadPool pool(2);
    const Status st = WriteSynthModel(o, p, pool);
    INFO(st.ToString());
    REQUIRE(st.ok());
    return p;
  }();
  return path;
}

struct RemoveOnExit {
  ~RemoveOnExit() {
    std::remove(("/tmp/qwenrt_packed_in_place_" + std::to_string(getpid()) + ".gguf").c_str());
    std::remove(("/tmp/qwenrt_packed_in_place_" + std::to_string(getpid()) + "_cut.gguf").c_str());
  }
} remove_on_exit;

std::shared_ptr<const Model> Load(const std::string& path, bool pack, bool read_file = false) {
  ModelLoadOptions o;
  o.pack_weights = pack;
  o.read_file = read_file;
  auto m = Model::Load(path, o);
  INFO(m.status().ToString());
  REQUIRE(m.ok());
  return *m;
}

size_t TensorBytes(const Model& m) {
  size_t n = 0;
  for (const gguf::TensorInfo& t : m.gguf().tensors()) n += t.nbytes;
  return n;
}

long VmRssBytes() {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6)) * 1024;
  }
  return -1;
}

std::vector<int32_t> Tokens(const Model& m, int n) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(static_cast<int32_t>((i * 37 + 11) % m.config().n_vocab));
  return t;
}

bool Same(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_CASE("packed in place: the packed load's logits, and the file's rows still readable",
          "[packed_in_place]") {
  if (!cpu::PackedKernelsFast()) {
    WARN("no fast packed kernel on this CPU: nothing is packed");
    return;
  }
  const int n_tokens = testing::QuickMode() ? 6 : 12;
  for (const std::string& path :
       {DataPath("tiny-s1-q4km.gguf"), DataPath("tinymoe-s1-q4km.gguf"), OddSynthModel()}) {
    CAPTURE(path);
    auto in_place = Load(path, true);                    // mapped: pages released
    auto beside = Load(path, true, /*read_file=*/true);  // read: nothing can be released
    auto unpacked = Load(path, false);
    REQUIRE(in_place->packed_bytes() > 0);
    CHECK(in_place->packed_bytes() == beside->packed_bytes());
    CHECK(beside->released_bytes() == 0);
    CHECK(unpacked->packed_bytes() == 0);
    CHECK(unpacked->released_bytes() == 0);
    CHECK(in_place->released_bytes() % static_cast<size_t>(::sysconf(_SC_PAGESIZE)) == 0);
    CHECK(in_place->released_bytes() <= in_place->packed_bytes());
    const auto tokens = Tokens(*in_place, n_tokens);

    // The CPU matmul reads only the packed rows: bit for bit those of the load that kept the file.
    Runner a(in_place, BackendKind::kCpu), b(beside, BackendKind::kCpu);
    const auto la = a.Run(tokens);
    CHECK(Same(la, b.Run(tokens)));
    a.Reset();
    CHECK(Same(la, a.Run(tokens, {1})));  // prefill == token by token, as for any packed load

    // The reference backend reads the file's rows, released or not: it loads them again.
    Runner ra(in_place, BackendKind::kRef), ru(unpacked, BackendKind::kRef);
    CHECK(Same(ra.Run(tokens), ru.Run(tokens)));

    // Packing off still works: the file-layout kernels, close to the packed ones.
    Runner u(unpacked, BackendKind::kCpu);
    const test::Distance d = test::Compare(u.Run(tokens), la, in_place->config().n_vocab);
    CHECK(d.mean_over_std < 0.02);
  }
}

TEST_CASE("packed in place: resident weights are about the file's size", "[packed_in_place]") {
  if (!cpu::PackedKernelsFast()) {
    WARN("no fast packed kernel on this CPU: nothing is packed");
    return;
  }
  const std::string path = OddSynthModel();
  const size_t file_bytes = std::filesystem::file_size(path);

  const long rss0 = VmRssBytes();
  auto in_place = Load(path, true);
  const long rss_in_place = VmRssBytes() - rss0;
  const size_t tensors = TensorBytes(*in_place);
  CAPTURE(file_bytes, tensors, in_place->packed_bytes(), in_place->released_bytes(), rss_in_place);
  // Most of the file is packed matrices; their pages are gone, their packed rows in their place.
  CHECK(in_place->released_bytes() > tensors / 2);
  CHECK(in_place->resident_weight_bytes() ==
        tensors - in_place->released_bytes() + in_place->packed_bytes());
  CHECK(in_place->resident_weight_bytes() <= file_bytes + file_bytes / 20);
  CHECK(in_place->resident_weight_bytes() >= tensors * 9 / 10);
  // The process agrees: the load grew it by about the packed rows, not by file + packed rows.
  CHECK(rss_in_place > 0);
  CHECK(static_cast<size_t>(rss_in_place) <= in_place->resident_weight_bytes() + file_bytes / 5);

  // The estimate reports the same resident weights.
  auto e = EstimateMemory(*in_place, MemoryEstimateParams{});
  REQUIRE(e.ok());
  CHECK(e->weights == in_place->resident_weight_bytes());

  // A file read into memory keeps both, and says so; an unpacked load holds the file's bytes.
  auto beside = Load(path, true, /*read_file=*/true);
  CHECK(beside->resident_weight_bytes() == tensors + beside->packed_bytes());
  auto unpacked = Load(path, false);
  CHECK(unpacked->resident_weight_bytes() == tensors);
}

TEST_CASE("packed in place: a float model packs and releases nothing; check_tensors before",
          "[packed_in_place]") {
  auto f32 = Load(DataPath("micro-s1-f32.gguf"), true);
  CHECK(f32->packed_bytes() == 0);
  CHECK(f32->released_bytes() == 0);
  CHECK(f32->resident_weight_bytes() == TensorBytes(*f32));
  // The deep tensor check reads every tensor's file rows: it runs before packing releases them,
  // and the packed load is the same.
  if (!cpu::PackedKernelsFast()) return;
  ModelLoadOptions o;
  o.pack_weights = true;
  o.check_tensors = true;
  auto checked = Model::Load(OddSynthModel(), o);
  REQUIRE(checked.ok());
  auto plain = Load(OddSynthModel(), true);
  CHECK((*checked)->released_bytes() == plain->released_bytes());
  CHECK((*checked)->packed_bytes() == plain->packed_bytes());
}

TEST_CASE("packed in place: the default is on exactly where packing is faster",
          "[packed_in_place]") {
  const bool vnni = std::string(cpu::PackedKernelIsa()) == "avx512vnni";
  CHECK(PackWeightsByDefault() == vnni);
  CHECK(ModelLoadOptions{}.pack_weights == vnni);
  qwenrt_model_params p;
  p.struct_size = sizeof p;
  REQUIRE(qwenrt_model_params_init(&p) == QWENRT_OK);
  CHECK(p.pack_weights == vnni);
}

TEST_CASE("packed in place: a damaged file is still refused with its error", "[packed_in_place]") {
  const std::string path = OddSynthModel();
  const std::string cut = "/tmp/qwenrt_packed_in_place_" + std::to_string(getpid()) + "_cut.gguf";
  std::filesystem::copy_file(path, cut, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(cut, std::filesystem::file_size(path) - 4096);
  for (bool read_file : {false, true}) {
    ModelLoadOptions o;
    o.pack_weights = true;
    o.read_file = read_file;
    auto m = Model::Load(cut, o);
    REQUIRE_FALSE(m.ok());
    CHECK(m.status().code() == StatusCode::kBadFormat);
    CHECK(m.status().message().find("beyond the end of the file") != std::string::npos);
  }
}

TEST_CASE("gguf::File::ReleasePages only drops mapped, page-aligned ranges", "[packed_in_place]") {
  const std::string path = OddSynthModel();
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  gguf::Error err;
  auto mapped = gguf::File::Open(path, &err);
  auto read = gguf::File::Open(path, &err, gguf::ParseOptions(), gguf::OpenMode::kRead);
  REQUIRE(mapped.has_value());
  REQUIRE(read.has_value());
  const uint8_t* m0 = mapped->bytes();
  std::vector<uint8_t> before(m0 + page, m0 + 3 * page);
  CHECK(mapped->ReleasePages(m0 + page, 2 * page));
  CHECK(std::memcmp(before.data(), m0 + page, 2 * page) == 0);       // read again from the file
  CHECK_FALSE(mapped->ReleasePages(m0 + 1, page));                   // not page-aligned
  CHECK_FALSE(mapped->ReleasePages(m0, mapped->size() + 2 * page));  // past the mapping
  CHECK_FALSE(mapped->ReleasePages(before.data(), page));            // not its bytes
  // A read file's bytes could not be read again: never released.
  const uint8_t* r0 = read->bytes();
  const uint8_t* aligned = r0 + (page - reinterpret_cast<uintptr_t>(r0) % page) % page;
  std::vector<uint8_t> heap(aligned, aligned + page);
  CHECK_FALSE(read->ReleasePages(aligned, page));
  CHECK(std::memcmp(heap.data(), aligned, page) == 0);
}

}  // namespace
}  // namespace qwenrt
