// qwenrt-bench soak: the batching Engine under sustained seeded random load for a while (the soak
// loop of src/testing/soak.h: chat, constrained and tool-call turns, forks, save/load round trips,
// cancels, resets, sessions freed and created, KV type changes, checkpoint eviction, with periodic
// bit-exact checks against a fresh re-prefill). Reports turns per minute, resident memory over
// time, errors by kind and mismatches every --report-every seconds and at the end. Exit status 1 on
// any mismatch, unexpected error (anything but CANCELLED) or resident memory growth past the
// bound; 2 on bad arguments. tests/soak_test.cpp runs the same loop for a few seconds.
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "chat/chat_model.h"
#include "model/model.h"
#include "testing/soak.h"

namespace qwenrt::bench {
namespace {

const char kSoakUsage[] =
    "usage: qwenrt-bench soak [-m FILE] [--duration SECONDS] [--sessions N] [--seed S]\n"
    "                         [--check-every K] [-t THREADS] [--host-steps] [--json]\n"
    "  defaults: -m tests/data/tiny-s1-q4km.gguf --duration 600 --sessions 32 --seed 1\n"
    "            --check-every 16 -t all cores\n"
    "  --check-every K      compare an idle session with a fresh re-prefill every K actions\n"
    "                       (0: only the final sweep over every session)\n"
    "  --host-steps         the loop steps the engine itself (no worker thread): reproducible\n"
    "  --actions N          also stop after N actions (with --host-steps: the same run on any\n"
    "                       machine)\n"
    "  --max-context C      per session (default 4096; a session past C/2 is reset)\n"
    "  --warmup SECONDS     before the resident-memory baseline (default: duration/4, <= 60)\n"
    "  --rss-growth F       allowed growth of RSS minus what the sessions hold (KV, recurrent\n"
    "                       states, checkpoints), from the warm-up's end: fraction (default 0.10)\n"
    "  --rss-slack MIB      ... plus MiB (default 8)\n"
    "  --report-every SECONDS  progress lines (default 30)\n";

bool ParseNum(const std::string& s, double lo, double hi, double* out) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !(v >= lo && v <= hi)) return false;
  *out = v;
  return true;
}

struct SoakArgs {
  std::string model = std::string(QWENRT_TEST_DATA) + "/tiny-s1-q4km.gguf";
  testing::SoakParams p;
  bool json = false;
};

bool ParseArgs(int argc, char** argv, SoakArgs* a, std::string* err) {
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h") {
      *err = "help";
      return false;
    }
    if (k == "--json") {
      a->json = true;
      continue;
    }
    if (k == "--host-steps") {
      a->p.worker = false;
      continue;
    }
    if (i + 1 >= argc) {
      *err = "missing value for " + k;
      return false;
    }
    const std::string v = argv[++i];
    double x = 0;
    const auto num = [&](double lo, double hi) {
      if (ParseNum(v, lo, hi, &x)) return true;
      *err = "bad value '" + v + "' for " + k;
      return false;
    };
    if (k == "-m" || k == "--model") {
      a->model = v;
    } else if (k == "--duration") {
      if (!num(0, 1e7)) return false;
      a->p.duration_s = x;
    } else if (k == "--sessions") {
      if (!num(1, 1024)) return false;
      a->p.sessions = static_cast<int>(x);
    } else if (k == "--seed") {
      if (!num(0, 1e18)) return false;
      a->p.seed = static_cast<uint64_t>(x);
    } else if (k == "--check-every") {
      if (!num(0, 1e9)) return false;
      a->p.check_every = static_cast<int>(x);
    } else if (k == "-t" || k == "--threads") {
      if (!num(0, 1024)) return false;
      a->p.threads = static_cast<int>(x);
    } else if (k == "--actions") {
      if (!num(0, 1e15)) return false;
      a->p.max_actions = static_cast<int64_t>(x);
    } else if (k == "--max-context") {
      if (!num(64, 1 << 20)) return false;
      a->p.max_context = static_cast<int64_t>(x);
    } else if (k == "--warmup") {
      if (!num(0, 1e7)) return false;
      a->p.warmup_s = x;
    } else if (k == "--rss-growth") {
      if (!num(0, 100)) return false;
      a->p.rss_growth = x;
    } else if (k == "--rss-slack") {
      if (!num(0, 1 << 20)) return false;
      a->p.rss_slack_mib = x;
    } else if (k == "--report-every") {
      if (!num(0.1, 1e7)) return false;
      a->p.report_every_s = x;
    } else {
      *err = "unknown option " + k;
      return false;
    }
  }
  return true;
}

double Mib(int64_t kib) { return static_cast<double>(kib) / 1024.0; }

}  // namespace

int RunSoak(int argc, char** argv) {
  SoakArgs a;
  std::string err;
  if (!ParseArgs(argc, argv, &a, &err)) {
    if (err == "help") {
      std::fputs(kSoakUsage, stdout);
      return 0;
    }
    std::fprintf(stderr, "qwenrt-bench: %s\n%s", err.c_str(), kSoakUsage);
    return 2;
  }
  auto fail = [](const Status& st) {
    std::fprintf(stderr, "qwenrt-bench soak: %s\n", st.ToString().c_str());
    return 1;
  };
  auto loaded = Model::Load(a.model);
  if (!loaded.ok()) return fail(loaded.status());
  auto cm = ChatModel::Create(*loaded);
  if (!cm.ok()) return fail(cm.status());
  a.p.model = *cm;
  // Progress goes to stderr under --json (stdout is the document), else to stdout.
  std::FILE* progress = a.json ? stderr : stdout;
  std::fprintf(progress,
               "soak: %s, %d sessions, %.0f s, seed %llu, check every %d actions, %s, %d threads\n",
               a.model.c_str(), a.p.sessions, a.p.duration_s,
               static_cast<unsigned long long>(a.p.seed), a.p.check_every,
               a.p.worker ? "engine worker" : "host steps", a.p.threads);
  a.p.on_report = [progress](const testing::SoakSample& x) {
    std::fprintf(progress,
                 "[%6.1f s] turns %lld (%.0f/min), rss %.1f MiB (sessions hold %.1f), checks %lld, "
                 "mismatches %lld, unexpected errors %lld\n",
                 x.t_s, static_cast<long long>(x.turns), x.turns_per_min, Mib(x.rss_kib),
                 Mib(x.held_kib), static_cast<long long>(x.checks),
                 static_cast<long long>(x.mismatches), static_cast<long long>(x.unexpected_errors));
    std::fflush(progress);
  };
  auto r = testing::RunSoak(a.p);
  if (!r.ok()) return fail(r.status());
  const double minutes = r->seconds / 60.0;
  const int64_t turns = r->turns_ok + r->turns_cancelled;
  if (a.json) {
    nlohmann::ordered_json out = {
        {"model", a.model},
        {"sessions", a.p.sessions},
        {"seed", a.p.seed},
        {"duration_s", r->seconds},
        {"worker", a.p.worker},
        {"threads", a.p.threads},
        {"actions", r->actions},
        {"actions_by_kind", r->actions_by_kind},
        {"turns_ok", r->turns_ok},
        {"turns_cancelled", r->turns_cancelled},
        {"turns_per_min", minutes > 0 ? static_cast<double>(turns) / minutes : 0.0},
        {"errors", r->errors},
        {"unexpected_errors", r->unexpected_errors},
        {"checks", r->checks},
        {"checks_skipped", r->checks_skipped},
        {"mismatches", r->mismatches},
        {"rss_baseline_kib", r->rss_baseline_kib},
        {"rss_final_kib", r->rss_final_kib},
        {"rss_peak_kib", r->rss_peak_kib},
        {"rss_bound_kib", r->rss_bound_kib},
        {"held_baseline_kib", r->held_baseline_kib},
        {"held_final_kib", r->held_final_kib},
        {"rss_ok", r->rss_ok},
        {"failures", r->failures},
        {"samples", nlohmann::ordered_json::array()},
        {"ok", r->ok()}};
    for (const auto& x : r->samples) {
      out["samples"].push_back({{"t_s", x.t_s},
                                {"rss_kib", x.rss_kib},
                                {"held_kib", x.held_kib},
                                {"turns", x.turns},
                                {"turns_per_min", x.turns_per_min},
                                {"checks", x.checks},
                                {"mismatches", x.mismatches},
                                {"unexpected_errors", x.unexpected_errors}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return r->ok() ? 0 : 1;
  }
  std::printf("soak: %.1f s, %lld actions, %lld turns (%lld ok, %lld cancelled): %.0f turns/min\n",
              r->seconds, static_cast<long long>(r->actions), static_cast<long long>(turns),
              static_cast<long long>(r->turns_ok), static_cast<long long>(r->turns_cancelled),
              minutes > 0 ? static_cast<double>(turns) / minutes : 0.0);
  std::printf("actions:");
  for (const auto& [k, n] : r->actions_by_kind) std::printf(" %s %lld", k.c_str(), (long long)n);
  std::printf("\nerrors by kind:");
  if (r->errors.empty()) std::printf(" none");
  for (const auto& [k, n] : r->errors) std::printf(" [%s] %lld", k.c_str(), (long long)n);
  std::printf("\nunexpected errors %lld; checks %lld (skipped %lld), mismatches %lld\n",
              static_cast<long long>(r->unexpected_errors), static_cast<long long>(r->checks),
              static_cast<long long>(r->checks_skipped), static_cast<long long>(r->mismatches));
  if (r->rss_baseline_kib > 0) {
    std::printf(
        "rss: %.1f MiB after warm-up (sessions hold %.1f), %.1f MiB at the end (sessions hold "
        "%.1f), peak %.1f MiB; bound %.1f MiB: %s\n",
        Mib(r->rss_baseline_kib), Mib(r->held_baseline_kib), Mib(r->rss_final_kib),
        Mib(r->held_final_kib), Mib(r->rss_peak_kib), Mib(r->rss_bound_kib),
        r->rss_ok ? "ok" : "GREW");
  } else {
    std::printf("rss: %.1f MiB at the end (the run ended within the warm-up: no growth check)\n",
                Mib(r->rss_final_kib));
  }
  for (const std::string& f : r->failures) std::printf("FAILURE: %s\n", f.c_str());
  std::printf("%s\n", r->ok() ? "soak: OK" : "soak: FAILED");
  return r->ok() ? 0 : 1;
}

}  // namespace qwenrt::bench
