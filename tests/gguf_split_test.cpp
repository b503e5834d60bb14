// Split GGUF files as llama-gguf-split writes them
// (tests/data/quant/micro-q4_0-split-0000k-of-00003.gguf, a 3-part split of micro-q4_0.gguf):
// opening the first part finds the others, the model gives the unsplit file's logits bit for bit,
// and a missing, renamed or mismatched part is a specific error.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "model_test_util.h"
#include "qwenrt/gguf.hpp"

namespace qwenrt::test {
namespace {

namespace fs = std::filesystem;

std::string Part(int k) {
  return DataPath("quant/micro-q4_0-split-0000" + std::to_string(k) + "-of-00003.gguf");
}

// A fresh directory under the temp dir, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("qwenrt-split-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string Put(const std::string& from, const std::string& name) const {
    fs::copy_file(from, path / name, fs::copy_options::overwrite_existing);
    return (path / name).string();
  }
  static inline int counter = 0;
};

TEST_CASE("a split file opens from its first part and holds every tensor", "[gguf][split]") {
  gguf::Error err;
  auto split = gguf::File::Open(Part(1), &err);
  INFO(err.message);
  REQUIRE(split.has_value());
  auto whole = gguf::File::Open(DataPath("quant/micro-q4_0.gguf"), &err);
  REQUIRE(whole.has_value());
  CHECK(split->split_count() == 3);
  CHECK(split->split_parts().size() == 2);
  CHECK(whole->split_count() == 1);
  REQUIRE(split->tensors().size() == whole->tensors().size());
  for (const gguf::TensorInfo& t : whole->tensors()) {
    CAPTURE(t.name);
    const gguf::TensorInfo* s = split->FindTensor(t.name);
    REQUIRE(s != nullptr);
    CHECK(s->type == t.type);
    REQUIRE(s->nbytes == t.nbytes);
    CHECK(std::memcmp(s->data, t.data, t.nbytes) == 0);
  }
}

TEST_CASE("a split model gives the unsplit model's logits bit for bit", "[split][golden]") {
  const auto tokens = ReadTokens("tokens/seqB.txt");
  auto split = Model::Load(Part(1));
  INFO(split.status().ToString());
  REQUIRE(split.ok());
  auto whole = LoadFixture("quant/micro-q4_0");
  CHECK((*split)->fingerprint() == whole->fingerprint());
  for (BackendKind kind : {BackendKind::kRef, BackendKind::kCpu}) {
    Runner a(*split, kind), b(whole, kind);
    const auto la = a.Run(tokens), lb = b.Run(tokens);
    CHECK(std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("missing, renamed and mismatched split parts are specific errors", "[split][hostile]") {
  SECTION("a missing part") {
    TempDir d;
    const std::string first = d.Put(Part(1), "m-00001-of-00003.gguf");
    d.Put(Part(3), "m-00003-of-00003.gguf");
    gguf::Error err;
    CHECK_FALSE(gguf::File::Open(first, &err).has_value());
    CHECK(err.code == gguf::ErrorCode::kSplitPart);
    CHECK(err.message.find("part 2 of 3 is missing") != std::string::npos);
    CHECK(err.message.find("m-00002-of-00003.gguf") != std::string::npos);
    auto m = Model::Load(first);
    CHECK(m.status().code() == StatusCode::kBadFormat);
    CHECK(m.status().message().find("SPLIT_PART") != std::string::npos);
  }
  SECTION("a part that says it is another part") {
    TempDir d;
    const std::string first = d.Put(Part(1), "m-00001-of-00003.gguf");
    d.Put(Part(3), "m-00002-of-00003.gguf");
    d.Put(Part(3), "m-00003-of-00003.gguf");
    gguf::Error err;
    CHECK_FALSE(gguf::File::Open(first, &err).has_value());
    CHECK(err.code == gguf::ErrorCode::kSplitPart);
    CHECK(err.message.find("says it is part 3 of 3, expected part 2 of 3") != std::string::npos);
  }
  SECTION("a part of another split") {
    TempDir d;
    const std::string first = d.Put(Part(1), "m-00001-of-00003.gguf");
    d.Put(Part(2), "m-00002-of-00003.gguf");
    d.Put(DataPath("quant/micro-q4_0.gguf"),
          "m-00003-of-00003.gguf");  // a whole file: split.count 1
    gguf::Error err;
    CHECK_FALSE(gguf::File::Open(first, &err).has_value());
    CHECK(err.code == gguf::ErrorCode::kSplitPart);
    CHECK(err.message.find("expected part 3 of 3") != std::string::npos);
  }
  SECTION("a first part whose name does not say where the others are") {
    TempDir d;
    const std::string first = d.Put(Part(1), "renamed.gguf");
    gguf::Error err;
    CHECK_FALSE(gguf::File::Open(first, &err).has_value());
    CHECK(err.code == gguf::ErrorCode::kSplitPart);
    CHECK(err.message.find("-00001-of-00003.gguf") != std::string::npos);
  }
  SECTION("opening a later part") {
    gguf::Error err;
    CHECK_FALSE(gguf::File::Open(Part(2), &err).has_value());
    CHECK(err.code == gguf::ErrorCode::kSplitFile);
    CHECK(err.message.find("part 2 of a 3-part split") != std::string::npos);
  }
  SECTION("a first part from memory") {
    const std::string bytes = ReadFile(Part(1));
    gguf::Error err;
    CHECK_FALSE(gguf::File::FromMemory(bytes.data(), bytes.size(), false, &err).has_value());
    CHECK(err.code == gguf::ErrorCode::kSplitFile);
    auto m = Model::LoadFromMemory(bytes.data(), bytes.size());
    CHECK(m.status().code() == StatusCode::kUnsupported);
  }
}

}  // namespace
}  // namespace qwenrt::test
