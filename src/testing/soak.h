// The soak loop: the batching Engine under sustained, seeded random load, shared by
// `qwenrt-bench soak` (bench/tool_soak.cpp, minutes) and tests/soak_test.cpp (seconds), so both run
// the same library code path. N ChatSession slots on one model and one Engine; each action of the
// schedule picks a slot and does one of: a chat turn, a constrained turn (JSON Schema or regex), a
// tool-call turn (tool_choice required / auto / function), a raw-token turn, a fork into another
// slot, a save/load round trip (same session or a fresh one), a reset, freeing the session and
// creating a new one, a KV storage type change, a new checkpoint budget. Turns get a cancel point
// drawn at submit (some cancelled while queued, in prefill or in decode). Checkpoint budgets are a
// few recurrent states, so the checkpoint store evicts all the time.
// Checks: every `check_every` actions, and for every idle session at the end, an idle session's
// last logits must equal, bit for bit (memcmp), those of a fresh session that prefills its exact
// transcript alone; a save/load round trip must give back the same transcript and logits. Sessions
// whose KV rows went through a lossy conversion (to or from q8_0) are not compared.
// Errors: a status other than OK or CANCELLED from any operation is a failure (kept by kind,
// "op CODE"). Memory: VmRSS sampled every second for the reports. The bound is checked at two quiet
// points (no turn running, the allocator's free pages handed back with malloc_trim): at the end of
// the warm-up (new turns wait until the running ones end) and at the end. RSS minus what the
// sessions hold (KV pages, recurrent states, checkpoints; shared ones divided among holders) may
// grow by rss_growth (fraction) + rss_slack_mib: the sessions may legitimately hold more after
// minutes of longer conversations; a leak grows the rest.
// Not a timed test: turns per minute depend on the (shared) machine.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "chat/chat_model.h"

namespace qwenrt::testing {

// One progress sample (every SoakParams::report_every_s and at the end).
struct SoakSample {
  double t_s = 0;
  int64_t rss_kib = 0;
  int64_t held_kib = 0;  // what the sessions hold (KV, recurrent states, checkpoints)
  int64_t turns = 0;     // turns ended so far (OK or cancelled)
  double turns_per_min = 0;
  int64_t checks = 0, mismatches = 0, unexpected_errors = 0;
};

struct SoakParams {
  std::shared_ptr<const ChatModel> model;
  double duration_s = 600;
  int sessions = 32;
  uint64_t seed = 1;
  int check_every = 16;  // one state check every K actions; 0 = only the final sweep
  int threads = 0;       // engine and session thread pools; 0 = hardware concurrency
  bool worker = true;    // the engine's own thread steps (else the loop calls Step: reproducible)
  // Also stop after this many actions (0: no limit). With worker = false the run is then the same
  // on any machine: the schedule, the cancel points (loop ticks) and the results.
  int64_t max_actions = 0;
  // Per session. A session past half of it is reset; a conversation that would not fit starts
  // over (the tool definitions alone render to ~1000 tokens with the fixtures' small vocabulary).
  int64_t max_context = 4096;
  double report_every_s = 30;
  double warmup_s = -1;  // -1: a quarter of the duration, at most 60 s
  double rss_growth = 0.10;
  double rss_slack_mib = 8;
  std::function<void(const SoakSample&)> on_report;  // may be null
  // Tests only: the reference prefill gets a different last token, so every check must report a
  // mismatch (shows that the checks can fail).
  bool perturb_reference_for_testing = false;
};

struct SoakResult {
  double seconds = 0;
  int64_t actions = 0;
  std::map<std::string, int64_t> actions_by_kind;  // "chat", "fork", ...
  int64_t turns_ok = 0, turns_cancelled = 0;
  std::map<std::string, int64_t> errors;  // "op CODE" -> count, CANCELLED included
  int64_t unexpected_errors = 0;
  int64_t checks = 0, checks_skipped = 0;  // skipped: lossy KV conversion, or no logits
  int64_t mismatches = 0;
  std::vector<std::string> failures;  // the first few unexpected errors and mismatches, in words
  std::vector<SoakSample> samples;    // progress reports, the last one at the end
  int64_t rss_baseline_kib = 0;       // at the end of the warm-up (0: the run ended before)
  int64_t rss_final_kib = 0, rss_peak_kib = 0, rss_bound_kib = 0;
  // What the sessions held at the baseline and at the end (rss_final_kib: measured then too).
  int64_t held_baseline_kib = 0, held_final_kib = 0;
  bool rss_ok = true;

  bool ok() const { return mismatches == 0 && unexpected_errors == 0 && rss_ok; }
};

// Runs the loop for params.duration_s, then drains the turns and checks every idle session.
// Errors: InvalidArgument (null model, sessions < 1), and setup failures (Engine::Create); what
// goes wrong during the run is in the result.
StatusOr<SoakResult> RunSoak(const SoakParams& params);

// VmRSS of this process (KiB, from /proc/self/status); 0 where it cannot be read.
int64_t ResidentKib();

}  // namespace qwenrt::testing
