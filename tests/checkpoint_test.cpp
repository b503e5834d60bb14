// Checkpoint placement, prefill batch planning and the LRU store, on hand-made snapshots (no
// model).
#include "session/checkpoint.h"

#include <catch2/catch.hpp>
#include <vector>

namespace qwenrt {
namespace {

// A stand-in snapshot: `bytes()` and `Copy()` are all the store needs.
struct FakeSnapshot {
  size_t size = 0;
  int id = 0;
  size_t bytes() const { return size; }
  StatusOr<FakeSnapshot> Copy() const { return *this; }
};

std::vector<int64_t> Positions(const CheckpointStore<FakeSnapshot>& s) {
  std::vector<int64_t> out;
  for (const auto& e : s.entries()) out.push_back(e.pos);
  return out;
}

TEST_CASE("PlanCheckpointPositions places end, end-tail, requested and every-K", "[checkpoint]") {
  std::vector<int64_t> req = {5, 100, 0, 300, 100};
  CHECK(PlanCheckpointPositions(0, 200, req, 4, 0) == std::vector<int64_t>{5, 100, 196, 200});
  // Requested positions at or before the start (already in the state) or past the end are ignored.
  CHECK(PlanCheckpointPositions(100, 200, req, 4, 0) == std::vector<int64_t>{196, 200});
  // The tail checkpoint is only taken inside the prefilled range.
  CHECK(PlanCheckpointPositions(198, 200, {}, 4, 0) == std::vector<int64_t>{200});
  CHECK(PlanCheckpointPositions(0, 200, {}, 0, 64) == std::vector<int64_t>{64, 128, 192, 200});
  CHECK(PlanCheckpointPositions(64, 130, {}, 0, 64) == std::vector<int64_t>{128, 130});
  CHECK(PlanCheckpointPositions(10, 10, req, 4, 64).empty());
}

TEST_CASE("PlanPrefill cuts on absolute ubatch multiples and exactly at checkpoints",
          "[checkpoint]") {
  std::vector<int64_t> cps = {3, 70, 130};
  auto b = PlanPrefill(0, 130, 64, cps);
  REQUIRE(b.size() == 5);
  CHECK((b[0].begin == 0 && b[0].end == 3 && b[0].checkpoint));
  CHECK((b[1].begin == 3 && b[1].end == 64 && !b[1].checkpoint));
  CHECK((b[2].begin == 64 && b[2].end == 70 && b[2].checkpoint));
  CHECK((b[3].begin == 70 && b[3].end == 128 && !b[3].checkpoint));
  CHECK((b[4].begin == 128 && b[4].end == 130 && b[4].checkpoint));
  // A resumed prefill starting mid-block first fills up to the next multiple of ubatch.
  auto r = PlanPrefill(50, 200, 64, std::vector<int64_t>{200});
  REQUIRE(r.size() == 4);
  CHECK((r[0].begin == 50 && r[0].end == 64));
  CHECK((r[1].begin == 64 && r[1].end == 128));
  CHECK((r[3].begin == 192 && r[3].end == 200 && r[3].checkpoint));
  // Contiguous cover, whatever the inputs.
  for (int64_t ub : {1, 7, 512}) {
    auto c = PlanPrefill(13, 1000, ub, std::vector<int64_t>{14, 500, 996, 1000});
    int64_t pos = 13;
    int n_cp = 0;
    for (const auto& x : c) {
      CHECK(x.begin == pos);
      CHECK(x.end > x.begin);
      CHECK(x.end - x.begin <= ub);
      pos = x.end;
      n_cp += x.checkpoint;
    }
    CHECK(pos == 1000);
    CHECK(n_cp == 4);
  }
  CHECK(PlanPrefill(5, 5, 64, {}).empty());
}

TEST_CASE("CheckpointStore finds the newest at or before a position", "[checkpoint]") {
  CheckpointStore<FakeSnapshot> s(1 << 20);
  s.Put(10, 1, {100, 1});
  s.Put(50, 1, {100, 2});
  s.Put(30, 1, {100, 3});
  CHECK(Positions(s) == std::vector<int64_t>{10, 30, 50});
  CHECK(s.bytes() == 300);
  CHECK(s.FindAtOrBefore(9) == nullptr);
  REQUIRE(s.FindAtOrBefore(10) != nullptr);
  CHECK(s.FindAtOrBefore(10)->snapshot.id == 1);
  CHECK(s.FindAtOrBefore(49)->pos == 30);
  CHECK(s.FindAtOrBefore(1000)->pos == 50);
  // Replacing keeps one entry per position and fixes the byte count.
  s.Put(30, 2, {40, 4});
  CHECK(s.size() == 3);
  CHECK(s.bytes() == 240);
  CHECK(s.FindAtOrBefore(30)->snapshot.id == 4);
  s.DropAfter(30);
  CHECK(Positions(s) == std::vector<int64_t>{10, 30});
  CHECK(s.bytes() == 140);
  s.DropAfter(0);
  CHECK(s.size() == 0);
  CHECK(s.bytes() == 0);
}

TEST_CASE("CheckpointStore evicts least recently used, never the newest of a turn first",
          "[checkpoint]") {
  CheckpointStore<FakeSnapshot> s(300);
  s.Put(10, 1, {100, 1});
  s.Put(20, 1, {100, 2});  // newest of turn 1
  s.Put(30, 2, {100, 3});
  CHECK(s.bytes() == 300);
  CHECK(s.evictions() == 0);
  s.FindAtOrBefore(10);    // 10 becomes most recently used, but it is not protected
  s.Put(40, 2, {100, 4});  // over budget: victims are 10 and 30 (unprotected); 30 is the LRU
  CHECK(Positions(s) == std::vector<int64_t>{10, 20, 40});
  s.Put(50, 3, {100, 5});  // unprotected left: 10 only
  CHECK(Positions(s) == std::vector<int64_t>{20, 40, 50});
  // Only "newest of a turn" snapshots are left: the least recently used goes, but never turn 3's.
  s.set_budget(100);
  CHECK(Positions(s) == std::vector<int64_t>{50});
  s.set_budget(0);
  CHECK(Positions(s) == std::vector<int64_t>{50});
  CHECK(s.bytes() == 100);
  CHECK(s.evictions() == 4);
  // The first evicted snapshot is kept as a spare for reuse; only one.
  CHECK(s.spare_bytes() == 100);
  auto spare = s.TakeSpare();
  REQUIRE(spare.has_value());
  CHECK(spare->id == 3);
  CHECK(s.spare_bytes() == 0);
  CHECK_FALSE(s.TakeSpare().has_value());
  s.DropAfter(0);
  CHECK(s.spare_bytes() == 100);
  s.Clear();
  CHECK(s.spare_bytes() == 0);
}

TEST_CASE("CheckpointStore copy is deep and independent", "[checkpoint]") {
  CheckpointStore<FakeSnapshot> a(1000);
  a.Put(1, 1, {10, 1});
  a.Put(2, 1, {10, 2});
  auto copied = a.Copy();
  REQUIRE(copied.ok());
  CheckpointStore<FakeSnapshot> b = std::move(copied).value();
  b.DropAfter(1);
  b.Put(5, 2, {10, 9});
  CHECK(Positions(a) == std::vector<int64_t>{1, 2});
  CHECK(Positions(b) == std::vector<int64_t>{1, 5});
  CHECK(a.bytes() == 20);
  CHECK(b.bytes() == 20);
  auto info = b.List();
  REQUIRE(info.size() == 2);
  CHECK((info[1].pos == 5 && info[1].turn == 2 && info[1].bytes == 10));
}

}  // namespace
}  // namespace qwenrt
