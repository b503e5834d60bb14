// A one-line progress bar on stderr for long prefills, shared by chat_repl and qwenrt-cli. It
// draws only when stderr is a terminal (a redirected log gets no carriage returns) and only once
// the work has run for a second (short prompts stay silent), and erases itself when done.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace qwenrt_examples {

class ProgressBar {
 public:
  // Starts timing a new piece of work; call before each call that may report.
  void Start(const char* label) {
    label_ = label;
    t0_ = std::chrono::steady_clock::now();
    shown_ = false;
  }

  // `done` of `total` units finished.
  void Update(int64_t done, int64_t total) {
    if (!tty_ || total <= 0) return;
    if (!shown_ && std::chrono::steady_clock::now() - t0_ < std::chrono::seconds(1)) return;
    shown_ = true;
    constexpr int kWidth = 30;
    const int fill = static_cast<int>(done * kWidth / total);
    std::fprintf(stderr, "\r%s [%.*s%*s] %lld/%lld", label_, fill, "##############################",
                 kWidth - fill, "", static_cast<long long>(done), static_cast<long long>(total));
    if (done >= total) Clear();
    std::fflush(stderr);
  }

  // Erases the bar (after a cancel or an error the last report was not done == total).
  void Clear() {
    if (shown_) std::fputs("\r\033[K", stderr);
    shown_ = false;
  }

 private:
  bool tty_ = isatty(STDERR_FILENO) != 0;
  bool shown_ = false;
  const char* label_ = "";
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace qwenrt_examples
