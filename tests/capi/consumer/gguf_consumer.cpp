// Uses the installed header-only GGUF reader (qwenrt/gguf.hpp) on its own: counts the tensors.
#include <cstdio>
#include <qwenrt/gguf.hpp>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  qwenrt::gguf::Error err;
  auto file = qwenrt::gguf::File::Open(argv[1], &err);
  if (!file) {
    std::fprintf(stderr, "gguf_consumer: %s\n", err.message.c_str());
    return 1;
  }
  std::printf("gguf_consumer OK: %zu tensors\n", file->tensors().size());
  return file->tensors().empty() ? 1 : 0;
}
