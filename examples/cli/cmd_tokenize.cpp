// `qwenrt-cli tokenize`: tokenizes the cases of a `__ggml_vocab_test__`-separated file with the
// tokenizer of a GGUF and prints one line of space-separated ids per case (the format of
// tests/data/tokenizer/*.out). With --decode the input holds id lines and the decoded texts are
// printed in the .inp format instead.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_command.h"
#include "qwenrt/gguf.hpp"
#include "text/tokenizer.h"

namespace qwenrt::cli {
namespace {

constexpr const char* kUsage =
    "tokenize --model M.gguf --texts X.inp [--special] [--no-nfc] [--decode]";

int Fail(const std::string& message) {
  std::fprintf(stderr, "qwenrt-cli tokenize: %s\nusage: qwenrt-cli %s\n", message.c_str(), kUsage);
  return 2;
}

int RunTokenize(int argc, char** argv) {
  std::string model_path, texts_path;
  bool special = false, nfc = true, decode = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--model" || arg == "--texts") && i + 1 < argc) {
      (arg == "--model" ? model_path : texts_path) = argv[++i];
    } else if (arg == "--special") {
      special = true;
    } else if (arg == "--no-nfc") {
      nfc = false;
    } else if (arg == "--decode") {
      decode = true;
    } else {
      return Fail("unknown or incomplete argument '" + arg + "'");
    }
  }
  if (model_path.empty() || texts_path.empty()) return Fail("--model and --texts are required");

  gguf::Error err;
  auto file = gguf::File::Open(model_path, &err);
  if (!file) return Fail(model_path + ": " + err.ToString());
  TokenizerOptions options;
  options.nfc = nfc;
  auto tokenizer = Tokenizer::FromGguf(*file, options);
  if (!tokenizer.ok()) return Fail(model_path + ": " + tokenizer.status().ToString());

  std::ifstream in(texts_path, std::ios::binary);
  if (!in) return Fail("cannot read " + texts_path);
  std::stringstream contents;
  contents << in.rdbuf();

  std::string out;
  if (decode) {
    std::string line;
    while (std::getline(contents, line)) {
      std::istringstream ls(line);
      std::vector<int32_t> ids;
      long long id;
      while (ls >> id) {
        if (id < 0 || id >= (*tokenizer)->n_vocab())
          return Fail("id out of range: " + std::to_string(id));
        ids.push_back(static_cast<int32_t>(id));
      }
      out += (*tokenizer)->Decode(ids, special);
      out += "\n__ggml_vocab_test__\n";
    }
  } else {
    std::vector<int32_t> ids;
    for (const std::string& text : SplitVocabTestFile(contents.str())) {
      ids.clear();
      (*tokenizer)->Encode(text, special ? SpecialTokens::kAll : SpecialTokens::kUserDefined, &ids);
      for (size_t i = 0; i < ids.size(); ++i) {
        if (i) out += ' ';
        out += std::to_string(ids[i]);
      }
      out += '\n';
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

const bool kRegistered = RegisterCommand("tokenize", Command{kUsage, RunTokenize});

}  // namespace
}  // namespace qwenrt::cli
