// qwenrt-cli entry point: dispatches to the registered subcommands (see cli_command.h).
#include <cstdio>
#include <cstring>

#include "cli_command.h"

int main(int argc, char** argv) {
  auto& commands = qwenrt::cli::Commands();
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fprintf(argc < 2 ? stderr : stdout, "usage: qwenrt-cli <command> [options]\n");
    for (const auto& [name, command] : commands) std::fprintf(stderr, "  %s\n", command.usage);
    return argc < 2 ? 2 : 0;
  }
  auto it = commands.find(argv[1]);
  if (it == commands.end()) {
    std::fprintf(stderr, "qwenrt-cli: unknown command '%s' (try --help)\n", argv[1]);
    return 2;
  }
  return it->second.run(argc - 1, argv + 1);
}
