// Regex intersection with a length range (see regex_product.h).
#include "chat/constraint/regex_product.h"

#include <algorithm>
#include <map>
#include <set>

#include "chat/constraint/regex_ast.h"
#include "chat/constraint/regex_gbnf.h"

namespace qwenrt {
namespace {

// What one step reads: a JSON string character (raw or escaped), or one of a set of code points
// (in kJsonString mode sets hold only characters a JSON string writes raw, all of them jchars).
struct Label {
  bool json_char = false;
  CodepointRanges set;
};

CodepointRanges Intersect(const CodepointRanges& a, const CodepointRanges& b) {
  CodepointRanges out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const uint32_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (lo <= hi) out.push_back({lo, hi});
    (a[i].second < b[j].second ? i : j)++;
  }
  return out;
}

Label Meet(const Label& a, const Label& b) {
  if (a.json_char) return b;
  if (b.json_char) return a;
  return {false, Intersect(a.set, b.set)};
}

bool Empty(const Label& l) { return !l.json_char && l.set.empty(); }

Label Join(const Label& a, const Label& b) {
  if (a.json_char || b.json_char) return {true, {}};
  CodepointRanges u = a.set;
  u.insert(u.end(), b.set.begin(), b.set.end());
  return {false, NormalizeRanges(std::move(u))};
}

// Glushkov automaton: state 0 is the start, state p >= 1 is "just read position p", and every move
// into p reads label[p].
struct Glushkov {
  std::vector<Label> label{Label{}};
  std::vector<std::set<int>> next{{}};
  std::vector<bool> accept{false};
};

struct Fragment {
  bool nullable = true;
  std::set<int> first, last;
};

class GlushkovBuilder {
 public:
  GlushkovBuilder(const Regex& re, size_t max_positions, Glushkov* g)
      : re_(re), max_(max_positions), g_(g) {}

  Status Run() {
    Fragment f;
    QWENRT_RETURN_IF_ERROR(Build(re_.root, &f));
    if (links_ > kMaxLinks) return InvalidArgument("regex: too many moves to intersect");
    g_->next[0] = f.first;
    g_->accept.assign(g_->label.size(), false);
    g_->accept[0] = f.nullable;
    for (int p : f.last) g_->accept[p] = true;
    return OkStatus();
  }

 private:
  // Follow sets can grow with the square of the positions ((a?){n}): counted, and refused past
  // kMaxLinks.
  void Link(const std::set<int>& from, const std::set<int>& to) {
    links_ += from.size() * to.size();
    if (links_ > kMaxLinks) return;
    for (int p : from) g_->next[p].insert(to.begin(), to.end());
  }

  // a then b, into *a.
  void Then(Fragment* a, const Fragment& b) {
    Link(a->last, b.first);
    if (a->nullable) a->first.insert(b.first.begin(), b.first.end());
    if (b.nullable) {
      a->last.insert(b.last.begin(), b.last.end());
    } else {
      a->last = b.last;
    }
    a->nullable = a->nullable && b.nullable;
  }

  Status Build(int i, Fragment* out) {
    const RegexNode& n = re_.nodes[i];
    *out = Fragment{};
    if (links_ > kMaxLinks) return InvalidArgument("regex: too many moves to intersect");
    switch (n.kind) {
      case RegexNode::kEmpty:
        return OkStatus();
      case RegexNode::kSet:
      case RegexNode::kJsonChar: {
        if (g_->label.size() > max_)
          return InvalidArgument("regex: too many positions to intersect");
        const int p = static_cast<int>(g_->label.size());
        g_->label.push_back({n.kind == RegexNode::kJsonChar, n.set});
        g_->next.emplace_back();
        *out = Fragment{false, {p}, {p}};
        return OkStatus();
      }
      case RegexNode::kConcat:
        for (int k : n.kids) {
          Fragment f;
          QWENRT_RETURN_IF_ERROR(Build(k, &f));
          Then(out, f);
        }
        return OkStatus();
      case RegexNode::kAlt:
        out->nullable = false;
        for (int k : n.kids) {
          Fragment f;
          QWENRT_RETURN_IF_ERROR(Build(k, &f));
          out->nullable = out->nullable || f.nullable;
          out->first.insert(f.first.begin(), f.first.end());
          out->last.insert(f.last.begin(), f.last.end());
        }
        return OkStatus();
      case RegexNode::kRepeat: {
        // min copies, then either one looping copy (no upper bound: a loop reuses its positions,
        // last -> first) or max - min optional ones nested as X(X(X)?)?)? so that each copy only
        // leads to the next.
        const int64_t copies = n.max < 0 ? std::max<int64_t>(n.min, 1) : n.max;
        if (copies > static_cast<int64_t>(max_))
          return InvalidArgument("regex: repetition too large to intersect");
        const int64_t fixed = n.max < 0 ? copies - 1 : n.min;
        for (int64_t c = 0; c < fixed; ++c) {
          Fragment f;
          QWENRT_RETURN_IF_ERROR(Build(n.kids[0], &f));
          Then(out, f);
        }
        if (n.max < 0) {
          Fragment f;
          QWENRT_RETURN_IF_ERROR(Build(n.kids[0], &f));
          Link(f.last, f.first);
          if (n.min == 0) f.nullable = true;
          Then(out, f);
          return OkStatus();
        }
        // The optional tail, built outermost first: chain[i] is copy fixed + i.
        std::vector<Fragment> chain(static_cast<size_t>(copies - fixed));
        for (auto& f : chain) QWENRT_RETURN_IF_ERROR(Build(n.kids[0], &f));
        Fragment tail;  // nullable, empty
        for (size_t c = chain.size(); c-- > 0;) {
          if (links_ > kMaxLinks) return InvalidArgument("regex: too many moves to intersect");
          Fragment f = chain[c];
          Then(&f, tail);
          f.nullable = true;
          tail = std::move(f);
        }
        Then(out, tail);
        return OkStatus();
      }
    }
    return OkStatus();
  }

  static constexpr size_t kMaxLinks = 1 << 20;
  const Regex& re_;
  size_t max_;
  Glushkov* g_;
  size_t links_ = 0;
};

}  // namespace

Status RegexProductGbnf(const std::vector<std::string>& regexes, const RegexProductLimits& limits,
                        const std::function<std::string()>& new_name, std::string* rules,
                        std::string* start) {
  std::vector<Glushkov> autos(regexes.size());
  for (size_t i = 0; i < regexes.size(); ++i) {
    Regex re;
    QWENRT_RETURN_IF_ERROR(ParseRegex(regexes[i], RegexMode::kJsonString, &re));
    QWENRT_RETURN_IF_ERROR(GlushkovBuilder(re, limits.max_positions, &autos[i]).Run());
  }
  // The counter: characters read so far, up to max_len; with no upper bound it saturates at
  // min_len (beyond it every count is the same state).
  const int64_t cap = limits.max_len >= 0 ? limits.max_len : limits.min_len;
  auto bump = [&](int64_t n) { return limits.max_len >= 0 ? n + 1 : std::min(n + 1, cap); };

  // Product states: one position per automaton, then the count.
  using Key = std::vector<int64_t>;
  std::map<Key, int> ids;
  std::vector<Key> keys;
  struct Move {
    Label label;
    int to;
  };
  std::vector<std::vector<Move>> moves;
  std::vector<int> queue;
  auto id_of = [&](Key k) {
    auto [it, fresh] = ids.emplace(k, static_cast<int>(keys.size()));
    if (fresh) {
      keys.push_back(std::move(k));
      moves.emplace_back();
      queue.push_back(it->second);
    }
    return it->second;
  };
  id_of(Key(autos.size() + 1, 0));
  size_t n_moves = 0, n_meets = 0;  // n_meets: label intersections tried, moves or not
  const size_t max_meets = 8 * limits.max_transitions;
  for (size_t qi = 0; qi < queue.size(); ++qi) {
    if (keys.size() > limits.max_states || n_moves > limits.max_transitions || n_meets > max_meets)
      return InvalidArgument("regex: the intersection automaton is too large");
    const int s = queue[qi];
    const Key k = keys[s];
    const int64_t count = k.back();
    if (limits.max_len >= 0 && count >= limits.max_len) continue;
    // Every combination of next positions whose labels share a character.
    std::vector<int> pick(autos.size());
    std::function<void(size_t, Label)> walk = [&](size_t a, Label l) {
      if (a == autos.size()) {
        Key t(autos.size() + 1);
        for (size_t i = 0; i < autos.size(); ++i) t[i] = pick[i];
        t.back() = bump(count);
        const int to = id_of(std::move(t));
        moves[s].push_back({std::move(l), to});
        ++n_moves;
        return;
      }
      for (int p : autos[a].next[k[a]]) {
        if (++n_meets > max_meets || n_moves > limits.max_transitions) return;
        Label m = a == 0 ? autos[a].label[p] : Meet(l, autos[a].label[p]);
        if (Empty(m)) continue;
        pick[a] = p;
        walk(a + 1, std::move(m));
      }
    };
    walk(0, Label{true, {}});
  }
  if (n_moves > limits.max_transitions || n_meets > max_meets)
    return InvalidArgument("regex: the intersection automaton is too large");
  auto accepting = [&](int s) {
    const Key& k = keys[s];
    if (k.back() < limits.min_len) return false;
    for (size_t i = 0; i < autos.size(); ++i)
      if (!autos[i].accept[k[i]]) return false;
    return true;
  };
  // Live states: those from which an accepting one is reachable.
  std::vector<std::vector<int>> back(keys.size());
  for (size_t s = 0; s < keys.size(); ++s)
    for (const Move& m : moves[s]) back[m.to].push_back(static_cast<int>(s));
  std::vector<bool> live(keys.size(), false);
  std::vector<int> stack;
  for (size_t s = 0; s < keys.size(); ++s)
    if (accepting(static_cast<int>(s))) {
      live[s] = true;
      stack.push_back(static_cast<int>(s));
    }
  while (!stack.empty()) {
    const int s = stack.back();
    stack.pop_back();
    for (int b : back[s])
      if (!live[b]) {
        live[b] = true;
        stack.push_back(b);
      }
  }
  start->clear();
  if (!live[0]) return OkStatus();
  std::vector<std::string> name(keys.size());
  for (size_t s = 0; s < keys.size(); ++s)
    if (live[s]) name[s] = new_name();
  for (size_t s = 0; s < keys.size(); ++s) {
    if (!live[s]) continue;
    // One alternative per live target, its labels joined.
    std::map<int, Label> by_target;
    for (const Move& m : moves[s]) {
      if (!live[m.to]) continue;
      auto it = by_target.find(m.to);
      if (it == by_target.end()) {
        by_target.emplace(m.to, m.label);
      } else {
        it->second = Join(it->second, m.label);
      }
    }
    std::string body;
    for (const auto& [to, l] : by_target) {
      if (!body.empty()) body += " | ";
      body += (l.json_char ? std::string("jchar") : GbnfClass(l.set)) + " " + name[to];
    }
    if (accepting(static_cast<int>(s))) body += body.empty() ? "\"\"" : " | \"\"";
    *rules += name[s] + " ::= " + body + "\n";
  }
  *start = name[0];
  return OkStatus();
}

}  // namespace qwenrt
