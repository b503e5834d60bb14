// Corpus replay: a main() for the libFuzzer targets of tests/fuzz without libFuzzer, so the plain
// and the sanitizer ctest (gcc) run every target's LLVMFuzzerTestOneInput over its kept corpus,
// tests/fuzz/corpus/<name>/ (tests/CMakeLists.txt registers fuzz_replay_<name>). Mutation fuzzing
// is scripts/fuzz-smoke.sh (clang, libFuzzer) and scripts/fuzz-campaign.sh, which also minimises
// the corpus this replays. A crash, a sanitizer report or a failed fuzz property
// (QWENRT_FUZZ_CHECK traps) fails the test; so does a corpus with no input in it.
//   <name>_fuzz_replay FILE|DIR...
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// The files named, a directory's regular files in name order (the same order on every machine).
std::vector<std::filesystem::path> Inputs(int argc, char** argv) {
  std::vector<std::filesystem::path> out;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path p = argv[i];
    std::error_code ec;
    if (!std::filesystem::is_directory(p, ec)) {
      out.push_back(p);
      continue;
    }
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(p, ec))
      if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    out.insert(out.end(), files.begin(), files.end());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::filesystem::path> inputs = Inputs(argc, argv);
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: %s FILE|DIR...  (no input found)\n", argv[0]);
    return 2;
  }
  for (const auto& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "cannot read %s\n", path.c_str());
      return 1;
    }
    const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in),
                                     std::istreambuf_iterator<char>()};
    std::fprintf(stderr, "%s (%zu bytes)\n", path.c_str(), bytes.size());
    // libFuzzer never passes a null pointer, not even for an empty input.
    const uint8_t empty = 0;
    LLVMFuzzerTestOneInput(bytes.empty() ? &empty : bytes.data(), bytes.size());
  }
  std::printf("replayed %zu inputs\n", inputs.size());
  return 0;
}
