// Subcommand registry of qwenrt-cli: each cmd_<name>.cpp registers one command at static-init
// time, so adding a subcommand never touches main.cpp.
#pragma once

#include <map>
#include <string>

namespace qwenrt::cli {

struct Command {
  const char* usage;                  // e.g. "eval --model M.gguf --tokens T.txt --out O.f32 ..."
  int (*run)(int argc, char** argv);  // argv[0] is the subcommand name; returns the exit code
};

inline std::map<std::string, Command>& Commands() {
  static std::map<std::string, Command> commands;
  return commands;
}

inline bool RegisterCommand(const char* name, Command command) {
  Commands()[name] = command;
  return true;
}

}  // namespace qwenrt::cli
