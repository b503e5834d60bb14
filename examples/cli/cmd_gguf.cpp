// `qwenrt-cli gguf`: validates a GGUF file with the header-only reader and prints its header,
// metadata (arrays abbreviated) and tensor table; --check-tensors also scans the data for NaN/Inf
// (checklist item 27). Exit code 0 = valid, 1 = the file was rejected (the error is printed), 2 =
// usage.
#include <cinttypes>
#include <cstdio>
#include <string>

#include "cli_command.h"
#include "qwenrt/gguf.hpp"

namespace qwenrt::cli {
namespace {

constexpr const char* kUsage = "gguf --model M.gguf [--check-tensors] [--lenient] [--quiet]";

// "[a, b, c, ... (512 total)]" for arrays; Describe() for scalars.
std::string Render(const gguf::Value& v) {
  if (!v.is_array()) {
    std::string s = v.Describe();
    if (s.size() > 200) {
      s.resize(200);
      s += "...";
    }
    return s;
  }
  std::string s = v.Describe() + " [";
  const uint64_t n = v.size() < 8 ? v.size() : 8;
  for (uint64_t i = 0; i < n; ++i) {
    if (i) s += ", ";
    switch (v.element_type()) {
      case gguf::ValueType::STRING:
        s += '\'';
        s.append(v.StringAt(i).substr(0, 40));
        s += '\'';
        break;
      case gguf::ValueType::F32:
        s += std::to_string(v.At<float>(i));
        break;
      case gguf::ValueType::F64:
        s += std::to_string(v.At<double>(i));
        break;
      case gguf::ValueType::I32:
        s += std::to_string(v.At<int32_t>(i));
        break;
      case gguf::ValueType::U32:
        s += std::to_string(v.At<uint32_t>(i));
        break;
      case gguf::ValueType::BOOL:
        s += v.At<bool>(i) ? "true" : "false";
        break;
      default:
        s += "?";
        break;
    }
  }
  if (n < v.size()) s += ", ...";
  return s + "]";
}

int RunGguf(int argc, char** argv) {
  std::string path;
  bool check = false, quiet = false;
  gguf::ParseOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--model" && i + 1 < argc) {
      path = argv[++i];
    } else if (arg == "--check-tensors") {
      check = true;
    } else if (arg == "--lenient") {
      options.require_supported_types = false;
      options.require_contiguous_offsets = false;
    } else if (arg == "--quiet") {
      quiet = true;
    } else {
      std::fprintf(stderr,
                   "qwenrt-cli gguf: unknown or incomplete argument '%s'\nusage: qwenrt-cli %s\n",
                   arg.c_str(), kUsage);
      return 2;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "qwenrt-cli gguf: --model is required\nusage: qwenrt-cli %s\n", kUsage);
    return 2;
  }
  gguf::Error err;
  auto f = gguf::File::Open(path, &err, options);
  if (!f) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), err.ToString().c_str());
    return 1;
  }
  if (!quiet) {
    std::printf("GGUF v%u, %" PRIu64 " bytes, alignment %" PRIu64 ", data at %" PRIu64
                ", %zu keys, %zu tensors\n",
                f->version(), f->size(), f->alignment(), f->data_offset(), f->metadata().size(),
                f->tensors().size());
    for (const auto& kv : f->metadata())
      std::printf("  %-48s %s\n", kv.first.c_str(), Render(kv.second).c_str());
    for (const gguf::TensorInfo& t : f->tensors()) {
      std::printf("  %-40s %-5s %-22s offset %-10" PRIu64 " %" PRIu64 " bytes\n", t.name.c_str(),
                  gguf::TypeName(t.type), t.ShapeString().c_str(), t.offset, t.nbytes);
    }
  }
  if (check && !gguf::CheckAllTensorData(*f, &err)) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), err.ToString().c_str());
    return 1;
  }
  std::printf("%s: OK%s\n", path.c_str(), check ? " (tensor data checked)" : "");
  return 0;
}

const bool kRegistered = RegisterCommand("gguf", Command{kUsage, RunGguf});

}  // namespace
}  // namespace qwenrt::cli
