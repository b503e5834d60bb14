// The soak loop of `qwenrt-bench soak` (src/testing/soak.h), shortened: 8 sessions, a fixed seed, a
// few seconds each with the engine's worker thread and with the loop stepping the engine itself.
// Every operation's status must be OK or CANCELLED and every idle session's last logits must equal
// a fresh re-prefill of its transcript bit for bit. The 10-minute run is `qwenrt-bench soak`
// (docs/batching.md).
#include "testing/soak.h"

#include <catch2/catch.hpp>
#include <string>

#include "chat/chat_model.h"
#include "model/model.h"
#include "quick_mode.h"
#include "test_util.h"

using namespace qwenrt;

namespace {

std::shared_ptr<const ChatModel> TinyChatModel() {
  static std::shared_ptr<const ChatModel> cm = [] {
    auto m = Model::Load(std::string(QWENRT_TEST_DATA) + "/tiny-s1-q4km.gguf");
    REQUIRE(m.ok());
    auto r = ChatModel::Create(*m);
    REQUIRE(r.ok());
    return *r;
  }();
  return cm;
}

testing::SoakParams Short(double seconds) {
  testing::SoakParams p;
  p.model = TinyChatModel();
  p.duration_s = testing::QuickMode() ? seconds / 2 : seconds;
  p.sessions = 8;
  p.seed = 7;
  p.check_every = 4;
  p.threads = 2;
  p.max_context = 1024;    // short transcripts: the final sweep re-prefills every session
  p.report_every_s = 1e9;  // no progress lines
  p.warmup_s = 1e9;        // too short for the memory bound: the bench run checks it
  return p;
}

void CheckClean(const testing::SoakResult& r) {
  for (const std::string& f : r.failures) UNSCOPED_INFO(f);
  for (const auto& [k, n] : r.errors) UNSCOPED_INFO(k << ": " << n);
  CHECK(r.unexpected_errors == 0);
  CHECK(r.mismatches == 0);
  CHECK(r.ok());
  // The run did something: turns ended and idle sessions were compared.
  CHECK(r.turns_ok > 0);
  CHECK(r.checks > 0);
  CHECK(r.actions_by_kind.count("chat") == 1);
}

}  // namespace

TEST_CASE("Soak: the engine worker under random load: no unexpected error, no mismatch",
          "[cpu][engine][soak]") {
  auto r = testing::RunSoak(Short(5));
  REQUIRE(r.ok());
  CheckClean(*r);
}

TEST_CASE("Soak: the loop stepping the engine itself (reproducible schedule): clean",
          "[cpu][engine][soak]") {
  testing::SoakParams p = Short(120);  // a cap: the run is 60 actions, the same on any machine
  p.worker = false;
  p.max_actions = testing::QuickMode() ? 30 : 60;
  auto r = testing::RunSoak(p);
  REQUIRE(r.ok());
  CheckClean(*r);
  // Cancel points are drawn at submit: some turns end cancelled, as expected errors.
  CHECK(r->turns_cancelled > 0);
  CHECK(r->errors.count("turn CANCELLED") == 1);
}

TEST_CASE("Soak: a reference that differs is reported as a mismatch", "[cpu][engine][soak]") {
  testing::SoakParams p = Short(0.5);
  p.worker = false;
  p.check_every = 1;
  p.perturb_reference_for_testing = true;
  auto r = testing::RunSoak(p);
  REQUIRE(r.ok());
  CHECK(r->checks > 0);
  CHECK(r->mismatches == r->checks);
  CHECK_FALSE(r->ok());
  REQUIRE_FALSE(r->failures.empty());
  CHECK(r->failures[0].find("differ from a fresh prefill") != std::string::npos);
}

TEST_CASE("Soak: bad parameters are refused", "[soak]") {
  testing::SoakParams p;
  CHECK(testing::RunSoak(p).status().code() == StatusCode::kInvalidArgument);
  p.model = TinyChatModel();
  p.sessions = 0;
  CHECK(testing::RunSoak(p).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("Soak: resident memory past the bound fails the run", "[cpu][engine][soak]") {
  testing::SoakParams p = Short(60);
  p.worker = false;
  p.max_actions = 5;
  p.warmup_s = 0;
  p.rss_growth = -0.5;  // a bound of half the baseline: any run is past it
  p.rss_slack_mib = 0;
  auto r = testing::RunSoak(p);
  REQUIRE(r.ok());
  CHECK(r->rss_baseline_kib > 0);
  CHECK(r->mismatches == 0);
  CHECK_FALSE(r->rss_ok);
  CHECK_FALSE(r->ok());
  REQUIRE_FALSE(r->failures.empty());
  CHECK(r->failures.back().find("resident memory grew") != std::string::npos);
}
