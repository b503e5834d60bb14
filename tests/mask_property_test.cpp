// Mask == Accept, proven by walking: for a grammar and a vocabulary, instances are walked token by
// token (the tokens of given texts, or tokens drawn from the mask with a fixed seed) and at every
// step the mask is compared, for EVERY token of the vocabulary, with what a second matcher (one
// that never computes a mask, so none of the mask's shortcuts) does with that token's bytes:
// mask[t] == Accept(t). Grammars: the public MaskBench schemas (a seeded sample in CI,
// QWENRT_MASK_PROPERTY_FULL=1 for all 5,842), random schemas (length bounds met inside multi-byte
// and multi-character tokens, patterns, nesting), random GBNF and regexes with bounded repeats.
// Vocabularies: the real Qwen3.5 one (248k tokens: multi-character, multi-byte and cut UTF-8
// tokens) and the 512-token fixture.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "chat/constraint/grammar.h"
#include "chat/constraint/matcher.h"
#include "chat/constraint/token_trie.h"
#include "quick_mode.h"
#include "test_util.h"
#include "text/json.h"
#include "text/tokenizer.h"
#include "vocab_fixtures.h"

namespace qwenrt {
namespace {

const std::string kData = QWENRT_TEST_DATA;

bool FullRun() {
  const char* v = std::getenv("QWENRT_MASK_PROPERTY_FULL");
  return v != nullptr && std::string(v) == "1";
}

struct Vocab {
  std::unique_ptr<Tokenizer> tok;
  std::shared_ptr<const TokenTrie> trie;
};

const Vocab& LoadVocab(const gguf::File& file) {
  TokenizerOptions o;
  o.nfc = false;
  auto t = Tokenizer::FromGguf(file, o);
  if (!t.ok()) FAIL(t.status().ToString());
  auto trie = TokenTrie::Build(**t);
  if (!trie.ok()) FAIL(trie.status().ToString());
  return *new Vocab{std::move(*t), *trie};  // one per program, alive until exit
}

const Vocab& RealVocab() {
  static const Vocab& v = LoadVocab(test::RealVocabGguf());
  return v;
}

const Vocab& FixtureVocab() {
  static const Vocab& v = LoadVocab(test::FixtureGguf());
  return v;
}

// What the walks found, over every grammar of a test case.
struct Tally {
  int64_t grammars = 0;
  int64_t masks = 0;           // masks computed along the walks
  int64_t masks_compared = 0;  // distinct (state, mask) pairs compared token by token
  int64_t tokens = 0;          // tokens compared
  int64_t disagreements = 0;
  int64_t budget_failures = 0;        // masks of a matcher over its budget (empty; not compared)
  std::vector<std::string> examples;  // the first few, for the failure message

  std::string Summary() const {
    return fmt::format(
        "{} grammars, {} masks ({} distinct compared, {} over a budget), {} tokens compared, {} "
        "disagreements",
        grammars, masks, masks_compared, budget_failures, tokens, disagreements);
  }
};

std::string Printable(std::string_view bytes) {
  std::string s;
  for (char c : bytes) {
    const auto b = static_cast<uint8_t>(c);
    if (b >= 0x20 && b < 0x7F && c != '\\')
      s += c;
    else
      s += fmt::format("\\x{:02X}", b);
  }
  return s;
}

// Walks instances of one grammar. `mask_` is the matcher under test (its masks), `probe_` the
// reference (Accept only). Both persist over the walks of the grammar, reset between them, as a
// host reuses a matcher across generations: memoised state from one walk must not leak into the
// masks of another.
class Walker {
 public:
  Walker(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenTrie> trie, Tally* tally,
         std::string name)
      : trie_(trie), mask_(g, trie), probe_(g, trie), tally_(tally), name_(std::move(name)) {
    ++tally_->grammars;
  }

  // Follows `tokens` while the mask allows them (an invalid instance stops where it is refused).
  void Follow(const std::vector<int32_t>& tokens) {
    Start();
    for (int32_t t : tokens) {
      Compare();
      if (!Allowed(t)) return;
      Take(t);
    }
    Compare();
  }

  // Draws up to max_steps tokens from the mask: uniformly, among the tokens of at most 2 bytes
  // (byte tokens cut characters), or the longest of 64 drawn (long tokens cross length bounds).
  void Sample(std::mt19937* rng, int max_steps) {
    Start();
    for (int step = 0; step < max_steps; ++step) {
      Compare();
      allowed_.clear();
      for (int32_t t = 0; t < trie_->n_vocab(); ++t) {
        if (Allowed(t)) allowed_.push_back(t);
      }
      if (allowed_.empty()) return;
      if (mask_.CanEnd() && (*rng)() % 8 == 0) return;
      const auto len = [&](int32_t t) { return trie_->TokenBytes(t).size(); };
      const int how = static_cast<int>((*rng)() % 4);
      int32_t pick = allowed_[(*rng)() % allowed_.size()];
      if (how == 1) {  // a token of at most 2 bytes, where there is one
        std::vector<int32_t> shorts;
        for (int32_t t : allowed_) {
          if (len(t) <= 2) shorts.push_back(t);
        }
        if (!shorts.empty()) pick = shorts[(*rng)() % shorts.size()];
      } else if (how > 1) {  // the longest of 64 drawn
        for (int i = 0; i < 64; ++i) {
          const int32_t t = allowed_[(*rng)() % allowed_.size()];
          if (len(t) > len(pick)) pick = t;
        }
      }
      Take(pick);
    }
    Compare();
  }

 private:
  void Start() {
    mask_.Reset();
    probe_.Reset();
    prefix_.clear();
  }
  bool Allowed(int32_t t) const { return (bits_[t >> 5] >> (t & 31)) & 1; }
  void Take(int32_t t) {
    REQUIRE(mask_.Accept(t));
    REQUIRE(probe_.Accept(t));
    prefix_ += trie_->TokenBytes(t);
  }

  // mask_'s mask against probe_.Accept on every token.
  void Compare() {
    mask_.FillMask(&bits_);
    ++tally_->masks;
    if (mask_.failed()) {
      // Over a budget (Matcher::Limits): the mask is empty and generation stops with Internal
      // ("the matcher exceeded its memory limits"). Sound, not exact: counted apart.
      ++tally_->budget_failures;
      CHECK(std::all_of(bits_.begin(), bits_.end(), [](uint32_t w) { return w == 0; }));
      return;
    }
    uint64_t h = 1469598103934665603ull ^ static_cast<uint32_t>(mask_.state());
    for (uint32_t w : bits_) h = (h ^ w) * 1099511628211ull;
    if (mask_.compactions() != compactions_) {
      seen_.clear();
      compactions_ = mask_.compactions();
    }
    if (!seen_.insert(h).second) return;  // this state gave this very mask before: compared
    ++tally_->masks_compared;
    const int32_t at = probe_.state();
    const int64_t probe_compactions = probe_.compactions();
    for (int32_t t = 0; t < trie_->n_vocab(); ++t) {
      const bool accepted = probe_.Accept(t);
      if (accepted) {
        if (probe_.compactions() == probe_compactions) {
          probe_.Rewind(at);
        } else {  // the probe renumbered its states: replay the prefix
          probe_.Reset();
          REQUIRE(probe_.AcceptBytes(prefix_));
        }
      }
      ++tally_->tokens;
      if (accepted == Allowed(t)) continue;
      ++tally_->disagreements;
      if (tally_->examples.size() < 8) {
        tally_->examples.push_back(
            fmt::format("{}: after '{}' token {} '{}': mask {}, Accept {}", name_,
                        Printable(prefix_), t, Printable(trie_->TokenBytes(t)),
                        Allowed(t) ? "allows" : "refuses", accepted ? "takes it" : "refuses"));
      }
    }
  }

  std::shared_ptr<const TokenTrie> trie_;
  Matcher mask_, probe_;
  Tally* tally_;
  std::string name_;
  std::string prefix_;
  std::vector<uint32_t> bits_;
  std::vector<int32_t> allowed_;
  std::unordered_set<uint64_t> seen_;
  int64_t compactions_ = 0;
};

void Report(const Tally& tally) {
  std::printf("mask_property: %s\n", tally.Summary().c_str());
  std::fflush(stdout);
  INFO(tally.Summary());
  for (const std::string& e : tally.examples) UNSCOPED_INFO(e);
  CHECK(tally.disagreements == 0);
  CHECK(tally.masks_compared > 0);
}

std::vector<int32_t> Tokens(const Vocab& v, const std::string& text) {
  std::vector<int32_t> ids;
  v.tok->Encode(text, SpecialTokens::kNone, &ids);
  return ids;
}

// ---- generated grammars

struct Gen {
  std::mt19937 rng;
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
  template <size_t N>
  const char* Pick(const char* const (&v)[N]) {
    return v[Int(0, static_cast<int>(N) - 1)];
  }

  // Lengths near a token's reach: small bounds (met inside one long token) and bounds around 96
  // (the longest plain token the mask's counted-string shortcut reasons about).
  int Bound() {
    switch (Int(0, 3)) {
      case 0:
        return Int(0, 4);
      case 1:
        return Int(5, 20);
      case 2:
        return Int(90, 130);
      default:
        return Int(180, 260);
    }
  }

  Json String() {
    Json s = Json::object();
    s["type"] = "string";
    switch (Int(0, 5)) {
      case 0:
        s["maxLength"] = Bound();
        break;
      case 1: {
        const int lo = Bound();
        s["minLength"] = lo;
        s["maxLength"] = lo + Int(0, 3);
        break;
      }
      case 2:
        s["minLength"] = Bound();
        break;
      case 3: {
        const char* const patterns[] = {"^[a-z]{2,5}$",
                                        "^[0-9]{3}-[0-9]{4}$",
                                        "^(ab|\u00e9\u00e9){1,3}x?$",
                                        "^[^\"\\\\]{0,12}$",
                                        "^.{95,100}$",
                                        "[A-Z]{2}",
                                        "^\u4e2d{1,2}[a-f0-9]{4,8}$",
                                        "^\\w{1,10}$"};
        s["pattern"] = Pick(patterns);
        break;
      }
      case 4: {
        const char* const formats[] = {"date", "date-time", "uuid", "email", "ipv4", "uri"};
        s["format"] = Pick(formats);
        break;
      }
      default:
        break;  // free string
    }
    return s;
  }

  Json Schema(int depth) {
    const int kind = depth >= 2 ? Int(0, 3) : Int(0, 6);
    Json s = Json::object();
    switch (kind) {
      case 0:
      case 1:
        return String();
      case 2: {
        s["type"] = "integer";
        const int lo = Int(-1000, 1000);
        s["minimum"] = lo;
        s["maximum"] = lo + Int(0, 5000);
        return s;
      }
      case 3: {
        Json e = Json::array();
        const char* const values[] = {"a",    "\u00e9t\u00e9", "\u4e2d\u6587", "long value here",
                                      "x\"y", "tab\there",     "\U0001F600",   ""};
        for (int i = Int(1, 4); i > 0; --i) e.push_back(Pick(values));
        e.push_back(Int(-5, 5));
        s["enum"] = e;
        return s;
      }
      case 4:
      case 5: {
        s["type"] = "object";
        s["properties"] = Json::object();
        s["required"] = Json::array();
        const char* const keys[] = {"name",         "n\u00e4me", "id", "description",
                                    "\u540d\u524d", "a",         "ab", "abc"};
        for (int i = Int(1, 4); i > 0; --i) {
          const std::string k = Pick(keys);
          if (s["properties"].contains(k)) continue;
          s["properties"][k] = Schema(depth + 1);
          if (Int(0, 1)) s["required"].push_back(k);
        }
        if (Int(0, 2) == 0) {
          s["additionalProperties"] = Int(0, 1) ? Json(true) : String();
        } else {
          s["additionalProperties"] = false;
        }
        return s;
      }
      default:
        s["type"] = "array";
        s["items"] = Schema(depth + 1);
        s["minItems"] = Int(0, 2);
        s["maxItems"] = Int(2, 5);
        return s;
    }
  }

  // GBNF from multi-byte literals, classes and bounded repeats.
  std::string GbnfExpr(int depth) {
    std::string out;
    for (int i = Int(1, 3); i > 0; --i) {
      std::string atom;
      const int kind = depth >= 2 ? Int(0, 2) : Int(0, 3);
      if (kind == 0) {
        const char* const lits[] = {"\"a\"",   "\"ab\"",    "\"\u00e9\"", "\"\u4e2d\u6587\"",
                                    "\"\\n\"", "\"{\\\"\"", "\"the\"",    "\"\U0001F600\""};
        atom = Pick(lits);
      } else if (kind == 1) {
        const char* const classes[] = {"[a-z]",  "[^\"\\\\]", "[0-9]",           "[\u00e0-\u00ff]",
                                       "[ \\t]", "[^a]",      "[\u4e00-\u9fff]", "."};
        atom = Pick(classes);
      } else if (kind == 2) {
        atom = "item";
      } else {
        atom = "(" + GbnfExpr(depth + 1) + " | " + GbnfExpr(depth + 1) + ")";
      }
      switch (Int(0, 5)) {
        case 0:
          atom += fmt::format("{{{},{}}}", Int(0, 3), Int(3, 12));
          break;
        case 1:
          atom += fmt::format("{{{}}}", Int(1, 6));
          break;
        case 2:
          atom += "?";
          break;
        case 3:
          atom += Int(0, 1) ? "*" : "+";
          break;
        default:
          break;
      }
      out += (out.empty() ? "" : " ") + atom;
    }
    return out;
  }
  std::string Gbnf() {
    return "root ::= " + GbnfExpr(0) + "\nitem ::= [a-z\u00e9]{1,4} | \"\u4e2d\" [0-9]{0,2}\n";
  }

  std::string Regex(int depth) {
    std::string out;
    for (int i = Int(1, 3); i > 0; --i) {
      std::string atom;
      const int kind = depth >= 2 ? Int(0, 1) : Int(0, 2);
      if (kind == 0) {
        const char* const atoms[] = {"a", "\u00e9", "\u4e2d", "ab", "\\d", "\\w", "[a-f]", " "};
        atom = Pick(atoms);
        if (std::string(atom).size() > 1 && atom[0] != '\\' && atom[0] != '[')
          atom = "(" + atom + ")";
      } else if (kind == 1) {
        const char* const classes[] = {"[^x]", "[\u00e0-\u00ff]", ".", "[0-9a-z]",
                                       "[\u4e00-\u9fff]"};
        atom = Pick(classes);
      } else {
        atom = "(" + Regex(depth + 1) + "|" + Regex(depth + 1) + ")";
      }
      switch (Int(0, 4)) {
        case 0:
          atom += fmt::format("{{{},{}}}", Int(0, 4), Int(4, 110));
          break;
        case 1:
          atom += fmt::format("{{{}}}", Int(1, 8));
          break;
        case 2:
          atom += "?";
          break;
        default:
          break;
      }
      out += atom;
    }
    return out;
  }
};

// Random walks (and the walk of a generated instance text, where there is one) of `g`.
void WalkGrammar(const std::shared_ptr<const Grammar>& g, const Vocab& v, std::mt19937* rng,
                 int walks, int steps, Tally* tally, const std::string& name) {
  Walker w(g, v.trie, tally, name);
  for (int i = 0; i < walks; ++i) w.Sample(rng, steps);
}

TEST_CASE("mask == Accept on every token: length bounds met inside multi-character tokens",
          "[constraint][mask][real]") {
  const Vocab& v = RealVocab();
  Tally tally;
  std::mt19937 rng(7);
  // The counted string of issue 30: maxLength above the 96 characters the counted-string shortcut
  // looks ahead, walked with long tokens, so the bound falls inside one.
  for (const char* schema :
       {R"({"type": "string", "maxLength": 100})", R"({"type": "string", "maxLength": 97})",
        R"({"type": "string", "minLength": 98, "maxLength": 101})",
        R"({"type": "string", "maxLength": 250})",
        R"({"type": "object", "properties": {"s": {"type": "string", "maxLength": 120}},
            "required": ["s"], "additionalProperties": false})",
        R"({"type": "string", "maxLength": 3})", R"({"type": "string", "minLength": 2})"}) {
    auto g = Grammar::FromJsonSchema(schema);
    REQUIRE(g.ok());
    Walker w(*g, v.trie, &tally, schema);
    for (const std::string& body :
         {std::string(99, 'a'), std::string(96, 'x') + "abcdefgh",
          std::string(40, ' ') + std::string(60, 'b'),
          std::string(30, 'e') + "\u00e9\u4e2d" + std::string(80, 'z'),
          std::string("\u4e2d\u6587") + std::string(98, 'q'), std::string("ab")}) {
      w.Follow(Tokens(v, "\"" + body + "\""));
      w.Follow(Tokens(v, "{\"s\": \"" + body + "\"}"));
    }
    for (int i = 0; i < 3; ++i) w.Sample(&rng, 40);
  }
  Report(tally);
}

TEST_CASE("mask == Accept on every token: random schemas, GBNF and regexes",
          "[constraint][mask][real]") {
  const Vocab& real = RealVocab();
  const Vocab& fixture = FixtureVocab();
  Tally tally;
  Gen gen{std::mt19937(2026)};
  const int rounds = FullRun() ? 300 : qwenrt::testing::QuickMode() ? 4 : 25;  // quick_mode.h
  int refused = 0;
  for (int round = 0; round < rounds; ++round) {
    const Vocab& v = round % 5 == 4 ? fixture : real;
    const Json schema = gen.Schema(0);
    auto g = Grammar::FromJsonSchema(schema.dump());
    INFO(schema.dump() << "\n" << (g.ok() ? "" : g.status().ToString()));
    REQUIRE(g.ok());
    WalkGrammar(*g, v, &gen.rng, 2, 30, &tally, schema.dump());
    // A repetition of a nullable group is left recursion, which the compiler refuses (a known
    // restriction, docs/constraints.md): such draws are counted, not walked.
    const std::string gbnf = gen.Gbnf();
    auto gg = Grammar::FromGbnf(gbnf);
    if (gg.ok()) {
      WalkGrammar(*gg, v, &gen.rng, 2, 20, &tally, gbnf);
    } else {
      INFO(gbnf << "\n" << gg.status().ToString());
      CHECK(gg.status().message().find("left recursion") != std::string::npos);
      ++refused;
    }
    const std::string regex = gen.Regex(0);
    auto rg = Grammar::FromRegex(regex);
    if (rg.ok()) {
      WalkGrammar(*rg, v, &gen.rng, 2, 20, &tally, regex);
    } else {
      INFO(regex << "\n" << rg.status().ToString());
      CHECK(rg.status().message().find("left recursion") != std::string::npos);
      ++refused;
    }
  }
  std::printf("mask_property: %d generated GBNF / regex refused (nullable repetitions)\n", refused);
  CHECK(refused < rounds / 2);
  Report(tally);
}

// The public MaskBench files, unpacked once from the committed archive.
std::filesystem::path MaskBenchDir() {
  static const std::filesystem::path dir = [] {
    const char* env = std::getenv("QWENRT_MASKBENCH_DIR");
    if (env != nullptr && *env) return std::filesystem::path(env);
    char tmpl[] = "/tmp/qwenrt-maskbench-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) FAIL("mkdtemp failed");
    const std::string cmd =
        fmt::format("tar -xJf '{}/maskbench/maskbench-public.tar.xz' -C '{}'", kData, tmpl);
    if (std::system(cmd.c_str()) != 0) FAIL("failed: " << cmd);
    static const struct Cleanup {
      std::string path;
      ~Cleanup() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
      }
    } cleanup{tmpl};
    return std::filesystem::path(tmpl) / "maskbench";
  }();
  return dir;
}

TEST_CASE("mask == Accept on every token: public MaskBench schemas on the real vocabulary",
          "[constraint][mask][real]") {
  const Vocab& v = RealVocab();
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(MaskBenchDir())) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() > 5000);
  std::mt19937 rng(30);
  if (!FullRun()) {  // a seeded sample keeps CI short (smaller in quick mode: quick_mode.h)
    std::shuffle(files.begin(), files.end(), rng);
    files.resize(qwenrt::testing::QuickMode() ? 6 : 40);
  } else if (const char* shard = std::getenv("QWENRT_MASK_PROPERTY_SHARD")) {
    int i = 0, n = 1;  // "i/n": every n-th file from the i-th (one process per core)
    REQUIRE(std::sscanf(shard, "%d/%d", &i, &n) == 2);
    std::vector<std::filesystem::path> mine;
    for (size_t k = static_cast<size_t>(i); k < files.size(); k += static_cast<size_t>(n))
      mine.push_back(files[k]);
    files.swap(mine);
  }
  Tally tally;
  int compiled = 0;
  for (const auto& path : files) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    const Json doc = test::ParseJson(ss.str());
    auto g = Grammar::FromJsonSchema(doc["schema"].dump());
    if (!g.ok()) continue;  // refused at compile time: coverage, not agreement
    ++compiled;
    Walker w(*g, v.trie, &tally, path.filename().string());
    for (const auto& t : doc["tests"]) {
      std::string text;
      t["data"].AppendPython(&text);
      w.Follow(Tokens(v, text));
    }
    w.Sample(&rng, 30);
    if (FullRun() && compiled % 200 == 0) {
      std::printf("mask_property: %d files compiled so far: %s\n", compiled,
                  tally.Summary().c_str());
      std::fflush(stdout);
    }
  }
  std::printf("mask_property: MaskBench %zu files, %d compiled\n", files.size(), compiled);
  CHECK(compiled > static_cast<int>(files.size()) / 2);
  Report(tally);
}

}  // namespace
}  // namespace qwenrt
