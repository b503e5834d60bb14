// Hostile chat templates and contexts (issue 14): every case must fail with a specific Status (or
// render) quickly, without a stack overflow, a hang or a huge allocation. Each case is sized so a
// regression shows: a 2e5-link chain overflows the stack if any walk over the tree recurses per
// link, a loop of heavy builtins runs for minutes if the work budget misses one. Also: the limits
// are configurable, the context depth is checked, rendered text is NUL-free valid UTF-8, and the
// render time per input byte does not grow with the input size.
#include <pthread.h>

#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

#include "test_util.h"
#include "text/chat_template.h"
#include "text/jinja/jinja_limits.h"

using qwenrt::ChatTemplate;
using qwenrt::StatusCode;
using qwenrt::jinja::TemplateLimits;
using json = qwenrt::Json;

namespace {

// Wall-clock bound for one hostile case: a missed limit takes minutes or crashes, a hit one well
// under a second in a release build; sanitizer builds on a busy machine are 10-30x slower.
// The stack the deepest accepted templates must fit: 1 MiB in a release build; AddressSanitizer's
// redzones make parser frames several times larger.
#if defined(__SANITIZE_ADDRESS__)
constexpr double kFastSeconds = 120.0;
constexpr size_t kSmallStack = size_t{8} << 20;
#else
constexpr double kFastSeconds = 5.0;
constexpr size_t kSmallStack = size_t{1} << 20;
#endif

using qwenrt::test::DataPath;
using qwenrt::test::ParseJson;
using qwenrt::test::ReadFile;

struct Outcome {
  bool ok = false;
  StatusCode code = StatusCode::kOk;
  std::string text;  // the rendering, or the error message
  double seconds = 0;
};

Outcome Run(const std::string& src, const json& ctx = json::object(),
            const TemplateLimits& limits = TemplateLimits()) {
  const double t0 = qwenrt::test::ThreadCpuSeconds();  // CPU time: robust on a busy machine
  Outcome o;
  auto tmpl = ChatTemplate::Parse(src, limits);
  if (!tmpl.ok()) {
    o.code = tmpl.status().code();
    o.text = tmpl.status().message();
  } else {
    auto out = tmpl->Render(ctx);
    o.ok = out.ok();
    o.code = out.ok() ? StatusCode::kOk : out.status().code();
    o.text = out.ok() ? *out : out.status().message();
  }
  o.seconds = qwenrt::test::ThreadCpuSeconds() - t0;
  return o;
}

// Fails with InvalidArgument whose message contains `what` (any message when empty), in well
// under a second (the bound is generous for sanitizer builds; a missed limit takes minutes or
// crashes).
void ExpectRefused(const std::string& src, const std::string& what,
                   const json& ctx = json::object()) {
  INFO("template: " << src.substr(0, 200));
  const Outcome o = Run(src, ctx);
  INFO("outcome: " << o.text.substr(0, 300));
  CHECK_FALSE(o.ok);
  CHECK(o.code == StatusCode::kInvalidArgument);
  CHECK_THAT(o.text, Catch::Contains(what));
  CHECK(o.seconds < kFastSeconds);
}

std::string Chain(const std::string& head, const std::string& link, int n) {
  std::string s = head;
  s.reserve(head.size() + link.size() * n);
  for (int i = 0; i < n; ++i) s += link;
  return s;
}

// `{"a":{"a":...1...}}` nested `n` deep, as JSON text.
std::string DeepObject(int n) { return Chain("", "{\"a\":", n) + "1" + std::string(n, '}'); }

}  // namespace

TEST_CASE("long expression chains are refused at parse time, not by the stack",
          "[template_limits]") {
  // Each chain is built by a loop in the parser; before the height check, the name check, the
  // evaluator and the destructor then recursed once per link.
  // 2e5 links for `+` (as in the issue), 1e5 for the longer links: max_template_bytes is 1 MiB.
  const int n = 100000;
  const char* what = "nested too deeply";
  ExpectRefused("{{ 1" + Chain("", " + 1", 2 * n) + " }}", what);
  ExpectRefused("{{ 2" + Chain("", " * 2", n) + " }}", what);
  ExpectRefused("{{ 2" + Chain("", " ** 2", n) + " }}", what);
  ExpectRefused("{{ x" + Chain("", ".a", n) + " }}", what);
  ExpectRefused("{{ x" + Chain("", "()", n) + " }}", what);
  ExpectRefused("{{ x" + Chain("", "[0]", n) + " }}", what);
  ExpectRefused("{{ x" + Chain("", "|trim", n) + " }}", what);
  ExpectRefused("{{ x" + Chain("", " is eq(1)", n / 2) + " }}", what);
  ExpectRefused("{{ x" + Chain("", " and x", n) + " }}", what);
  ExpectRefused("{{ x" + Chain("", " or x", n) + " }}", what);
  ExpectRefused("{{ x" + Chain("", " if x", n) + " }}", what);
  ExpectRefused("{% set y = x" + Chain("", ".a", n) + " %}", what);
  ExpectRefused("{% for i in x" + Chain("", "[0]", n) + " %}{% endfor %}", what);
  ExpectRefused("{% macro m(a=x" + Chain("", "|trim", n) + ") %}{% endmacro %}", what);
  ExpectRefused("{{ " + Chain("", "-", n) + "1 }}", what);
  ExpectRefused("{{ " + Chain("", "not ", n) + "x }}", what);
  ExpectRefused(Chain("", "{% if x %}", n / 2), what);
  ExpectRefused(std::string(2 << 20, ' '), "max_template_bytes");
  // Flat n-ary forms are not chains: they render.
  CHECK(Run("{{ 'a'" + Chain("", " ~ 'a'", n) + " }}").text == std::string(n + 1, 'a'));
  CHECK(Run("{{ 1" + Chain("", " < 2", n / 10) + " }}").text == "False");
  // A chain as long as a real template could want works.
  CHECK(Run("{{ 1" + Chain("", " + 1", 100) + " }}").text == "101");
  CHECK(Run("{{ ' a '" + Chain("", "|trim", 100) + " }}").text == "a");
}

TEST_CASE("the nesting limit is configurable", "[template_limits]") {
  TemplateLimits tight;
  tight.max_nesting = 16;
  CHECK_FALSE(Run("{{ 1" + Chain("", " + 1", 20) + " }}", json::object(), tight).ok);
  CHECK(Run("{{ 1" + Chain("", " + 1", 10) + " }}", json::object(), tight).text == "11");
  CHECK_FALSE(
      Run(Chain("", "{% if true %}", 20) + Chain("", "{% endif %}", 20), json::object(), tight).ok);
}

TEST_CASE("values nested at run time are refused before they get deep", "[template_limits]") {
  // A list wrapped in a list a million times through a namespace: equality, repr, tojson and the
  // destructor recurse per level.
  const char* what = "max_value_depth";
  ExpectRefused(
      "{% set ns = namespace(x=[]) %}{% for i in range(1000000) %}{% set ns.x = [ns.x] %}{% endfor "
      "%}",
      what);
  ExpectRefused(
      "{% set ns = namespace(x=1) %}{% for i in range(1000000) %}{% set ns.x = {'a': ns.x} %}{% "
      "endfor %}",
      what);
  ExpectRefused(
      "{% set ns = namespace(x=1) %}{% for i in range(1000000) %}{% set ns.x = (ns.x,) %}{% endfor "
      "%}",
      what);
  ExpectRefused(
      "{% set ns = namespace(x={}) %}{% for i in range(1000000) %}{% set ns.x = dict(a=ns.x) %}{% "
      "endfor %}",
      what);
  // Through bound methods (they hold their receiver) and loop objects (they hold their items).
  ExpectRefused(
      "{% set ns = namespace(x=[]) %}{% for i in range(1000000) %}{% set ns.x = [ns.x.count] %}{% "
      "endfor %}",
      what);
  ExpectRefused(
      "{% set ns = namespace(x=[]) %}{% for i in range(1000000) %}{% for y in [ns.x] %}"
      "{% set ns.x = loop %}{% endfor %}{% endfor %}",
      what);
  ExpectRefused(
      "{% set ns = namespace(x={}) %}{% for i in range(1000000) %}{% set ns.x = {'a': "
      "ns.x}.items() %}"
      "{% endfor %}",
      what);
  // Namespaces nested in namespaces are released one by one after the render: only the budget stops
  // it.
  const Outcome o = Run(
      "{% set ns = namespace(x=1) %}{% for i in range(1000000) %}{% set ns.x = namespace(y=ns.x) %}"
      "{% endfor %}");
  CHECK_FALSE(o.ok);
  CHECK(o.seconds < kFastSeconds);
  // Moderate nesting works, and prints/compares/serialises.
  CHECK(
      Run("{% set ns = namespace(x=1) %}{% for i in range(50) %}{% set ns.x = [ns.x] %}{% endfor %}"
          "{{ ns.x == ns.x }}{{ (ns.x|tojson)|length }}")
          .text == "True101");
}

TEST_CASE("a context nested deeper than max_value_depth is refused without recursion",
          "[template_limits]") {
  const int n = 100000;
  const json deep = ParseJson(std::string(n, '[') + std::string(n, ']'));  // parse is iterative
  auto tmpl = ChatTemplate::Parse("{{ messages|length }}");
  REQUIRE(tmpl.ok());
  auto out = tmpl->RenderChat(deep, nullptr, false, std::nullopt);
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(out.status().message(), Catch::Contains("max_value_depth"));
  json ctx = json::object();
  ctx["tools"] = ParseJson(DeepObject(n));
  auto out2 = tmpl->Render(ctx);
  REQUIRE_FALSE(out2.ok());
  CHECK_THAT(out2.status().message(), Catch::Contains("max_value_depth"));
  // Tool-call arguments given as a JSON string are parsed: a deep one is refused too.
  const std::string args = DeepObject(n);
  const json messages = json::array(
      {{{"role", "assistant"},
        {"tool_calls", json::array({{{"function", {{"name", "f"}, {"arguments", args}}}}})}}});
  auto out3 = tmpl->RenderChat(messages, nullptr, false, std::nullopt);
  REQUIRE_FALSE(out3.ok());
  CHECK_THAT(out3.status().message(), Catch::Contains("max_value_depth"));
  // Real nesting (a tool schema a few dozen levels deep) renders.
  auto out4 =
      tmpl->RenderChat(json::array({{{"role", "user"}, {"content", ParseJson(DeepObject(40))}}}),
                       nullptr, false, std::nullopt);
  REQUIRE(out4.ok());
  CHECK(*out4 == "1");
}

TEST_CASE("work inside a step is charged: heavy loops stop at max_cost", "[template_limits]") {
  const char* what = "max_cost";
  ExpectRefused("{% for i in range(1000000) %}{% set x = 'a' * 10000000 %}{% endfor %}", what);
  ExpectRefused(
      "{% set l = range(1000000)|list %}{% for i in range(1000000) %}{% if -1 in l %}{% endif %}{% "
      "endfor %}",
      what);
  ExpectRefused(
      "{% set l = range(1000000)|list %}{% for i in range(1000000) %}{{ l.count(-1) }}{% endfor %}",
      what);
  ExpectRefused("{{ range(1000000)|unique|list|length }}", what);
  ExpectRefused(
      "{% set ns = namespace(s='') %}{% for i in range(1000000) %}{% set ns.s = ns.s ~ "
      "'xxxxxxxxxx' %}"
      "{% endfor %}",
      what);
  ExpectRefused(
      "{% set ns = namespace(l=[]) %}{% for i in range(1000000) %}{% set ns.l = ns.l + [i] %}{% "
      "endfor %}",
      what);
  ExpectRefused("{% set s = 'ab' * 4000000 %}{% for i in range(1000000) %}{{ s[-1] }}{% endfor %}",
                what);
  ExpectRefused(
      "{% set s = 'ab' * 4000000 %}{% for i in range(1000000) %}{{ s|length }}{% endfor %}", what);
  ExpectRefused(
      "{% set s = 'ab' * 4000000 %}{% for i in range(1000000) %}{{ 'z' in s }}{% endfor %}", what);
  ExpectRefused(
      "{% set s = 'ab' * 4000000 %}{% for i in range(1000000) %}{% set t = s.upper() %}{% endfor "
      "%}",
      what);
  // Pure interpretation overhead counts too: 10^12 cheap expressions.
  ExpectRefused(
      "{% for i in range(1000000) %}{% for j in range(1000000) %}{{ i + j + 1 }}{% endfor %}{% "
      "endfor %}",
      "limit");
  // A dict literal of 10^5 keys is quadratic to build (Python-equality lookups).
  std::string dict = "{{ {";
  for (int i = 0; i < 100000; ++i) dict += std::to_string(i) + ": 1, ";
  ExpectRefused(dict + "}|length }}", what);
  json big = json::object();
  for (int i = 0; i < 20000; ++i) big[std::string("k").append(std::to_string(i))] = i;
  const json ctx = {{"big", big}};
  ExpectRefused("{{ dict(big)|length }}", what, ctx);
  ExpectRefused("{{ namespace(big).k0 }}", what, ctx);
  CHECK(Run("{{ big|length }}{{ big.k19999 }}", ctx).text ==
        "2000019999");  // input dicts are not rebuilt
  // A shared value printed, compared or serialised as the tree of 2^60 nodes it stands for.
  const std::string dag =
      "{% set ns = namespace(x=[1], y=[1]) %}{% for i in range(60) %}{% set ns.x = [ns.x, ns.x] %}"
      "{% set ns.y = [ns.y, ns.y] %}{% endfor %}";
  ExpectRefused(dag + "{{ ns.x == ns.y }}", what);
  // Printing stops at the size limit or the budget, whichever comes first.
  ExpectRefused(dag + "{{ ns.x }}", "");
  ExpectRefused(dag + "{{ ns.x|tojson }}", "");
  ExpectRefused(dag + "{{ '%s' % ns.x }}", "");
  ExpectRefused(dag + "{{ ns.x|string|length }}", "");
  ExpectRefused(dag + "{{ [(ns.x,), (ns.y,)]|unique|list|length }}", what);
  ExpectRefused(dag + "{{ ns.x in [ns.y] }}", what);
  CHECK(Run(dag + "{{ ns.x == ns.x }}").text == "True");  // shared: compared by identity first
}

TEST_CASE("substring searches and strips are linear in the worst case", "[template_limits]") {
  // 'a' * n searched for 'a' * (n / 2) + 'b' costs n^2 / 4 compares with a naive search.
  const std::string setup = "{% set s = 'a' * 4000000 %}{% set n = 'a' * 2000000 ~ 'b' %}";
  auto fast = [&](const std::string& expr, const std::string& expect) {
    const Outcome o = Run(setup + "{{ " + expr + " }}");
    INFO(expr << " -> " << o.text.substr(0, 200));
    CHECK(o.text == expect);
    CHECK(o.seconds < kFastSeconds);
  };
  fast("n in s", "False");
  fast("s.find(n)", "-1");
  fast("s.rfind(n)", "-1");
  fast("s.count(n)", "0");
  fast("s.split(n)|length", "1");
  fast("s.rsplit(n, 3)|length", "1");
  fast("s.replace(n, 'x')|length", "4000000");
  fast("s|replace(n, 'x')|length", "4000000");
  fast("s.strip(n)|length", "0");
  fast("(s ~ 'c').strip(n)", "c");
  // Results still match Python for overlapping matches.
  CHECK(Run("{{ 'aaa'.rsplit('aa', 1) }}{{ 'aaa'.split('aa') }}{{ 'abcabc'.rfind('bc') }}{{ "
            "'aaaa'.count('aa') }}")
            .text == "['a', '']['', 'a']42");
}

TEST_CASE("the work budget is configurable", "[template_limits]") {
  TemplateLimits tight;
  tight.max_cost = 100000;
  const Outcome o = Run("{% for i in range(100000) %}{{ i }}{% endfor %}", json::object(), tight);
  CHECK_FALSE(o.ok);
  CHECK_THAT(o.text, Catch::Contains("max_cost"));
  CHECK(Run("{% for i in range(10) %}{{ i }}{% endfor %}", json::object(), tight).text ==
        "0123456789");
  TemplateLimits steps;
  steps.max_steps = 100;
  CHECK_THAT(Run("{% for i in range(1000) %}{% endfor %}", json::object(), steps).text,
             Catch::Contains("max_steps"));
}

TEST_CASE("results are size-checked before they are built", "[template_limits]") {
  const char* what = "too large";
  ExpectRefused("{{ ('a' * 1000000).replace('a', 'a' * 1000000) }}", what);
  ExpectRefused("{{ ('a' * 1000000)|replace('a', 'a' * 1000000) }}", what);
  ExpectRefused(
      "{{ ('a' * 1000000).replace('', 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb') }}",
      what);
  ExpectRefused("{{ ('\\n' * 1000000)|indent('x' * 1000000, true, true) }}", what);
  ExpectRefused("{{ ([1] * 1000000) * 1000000 }}", what);
  ExpectRefused("{{ [1, 2] * 4611686018427387904 }}", what);  // items * n overflows 64 bits
  ExpectRefused("{{ 'ab' * 4611686018427387904 }}", what);
  ExpectRefused("{{ 'a' * 9223372036854775807 }}", what);
  ExpectRefused("{{ range(1000000)|list|tojson(separators=('x' * 1000000, ':')) }}", what);
  ExpectRefused("{{ range(1000)|list|tojson(indent=64) * 1000 }}", what);
  ExpectRefused("{{ ('a,' * 5000000).split(',')|length }}", what);
  ExpectRefused("{{ ('a ' * 5000000).split()|length }}", what);
  ExpectRefused("{{ ('a ' * 5000000).rsplit(none, 9000000)|length }}", what);
  ExpectRefused("{{ ('a\\n' * 5000000).splitlines()|length }}", what);
  ExpectRefused("{% for c in 'a' * 10000000 %}{% endfor %}", what);
  ExpectRefused("{{ ('a' * 10000000 ~ 'b' * 10000000)|length }}", what);
  ExpectRefused("{{ ('a' * 10000000 + 'b' * 10000000)|length }}", what);
  ExpectRefused("{{ range(100000000)|length }}", what);
  ExpectRefused("{{ ('<' * 10000000)|e|length }}", what);
  ExpectRefused("{% set s = 'a' * 10000000 %}{{ '{}{}'.format(s, s)|length }}", what);
  ExpectRefused("{% set s = 'a' * 10000000 %}{{ '%s%s' % (s, s) }}", what);
  ExpectRefused("{% set s = 'a' * 10000000 %}{{ [s, s]|join|length }}", what);
  ExpectRefused("{% set s = 'a' * 10000000 %}{{ [s, s]|string|length }}",
                "");  // size or cost first
  ExpectRefused("{% set s = 'a' * 10000000 %}{{ s }}{{ s }}", "max_output_bytes");
  // Whitespace split and rsplit with maxsplit stay linear (rsplit copied the rest per part).
  CHECK(Run("{{ ('a ' * 400000).rsplit(none, 300000)|length }}").text == "300001");
  CHECK(Run("{{ ('a ' * 400000).split()|length }}").text == "400000");
  CHECK(Run("{{ ('a  b ' * 4).rsplit(none, 2) }}").text == "['a  b a  b a  b', 'a', 'b']");
  CHECK(Run("{{ ' a b  c '.rsplit() }}").text == "['a', 'b', 'c']");
  CHECK(Run("{{ ('a b' * 3)|wordcount }}").text == "4");
}

TEST_CASE("template arithmetic has no undefined behaviour", "[template_limits]") {
  ExpectRefused("{{ '%d' % 1e300 }}", "overflow");
  ExpectRefused("{{ '%d' % -1e300 }}", "overflow");
  ExpectRefused("{{ [9223372036854775807, 1]|sum }}", "overflow");
  ExpectRefused("{{ (-9223372036854775807 - 1)|abs }}", "overflow");
  // Ranges and slices whose step would overflow `i += step` (values checked against Python).
  CHECK(Run("{{ range(0, 9223372036854775807, 4611686018427387904)|list }}").text ==
        "[0, 4611686018427387904]");
  CHECK(Run("{{ range(-9223372036854775807 - 1, 9223372036854775807, 9223372036854775807)|list }}")
            .text == "[-9223372036854775808, -1, 9223372036854775806]");
  CHECK(Run("{{ range(9223372036854775807, -9223372036854775807 - 1, -9223372036854775807 - "
            "1)|list }}")
            .text == "[9223372036854775807, -1]");
  CHECK(Run("{{ 'abc'[::9223372036854775807] }}").text == "a");
  CHECK(Run("{{ [1, 2, 3][::-9223372036854775807 - 1] }}").text == "[3]");
  CHECK(Run("{{ 'héllo'[::-9223372036854775807] }}").text == "o");
  CHECK(Run("{{ 'héllo'[1] }}{{ 'héllo'[-4] }}{{ 'héllo'.find('l') }}").text == "éé2");
  // Digit strings beyond int64 are errors, not exceptions.
  CHECK_FALSE(Run("{{ '{99999999999999999999}'.format(1) }}").ok);
  CHECK(Run("{{ [[1]]|map(attribute='99999999999999999999')|list }}").ok);
}

TEST_CASE("rendered text is valid UTF-8 without NUL bytes", "[template_limits]") {
  ExpectRefused("{{ 'a\\x00b' }}", "NUL");
  ExpectRefused("{{ messages[0].content }}", "NUL",
                json{{"messages", json::array({{{"content", std::string("a\0b", 3)}}})}});
  // Invalid UTF-8 from the template (raw bytes, surrogate escapes) becomes U+FFFD per bad byte.
  CHECK(Run("a\xff"
            "b")
            .text ==
        "a\xEF\xBF\xBD"
        "b");
  CHECK(Run("{{ '\\udc80' }}").text == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(Run("{{ 'h\xc3\xa9' }}").text == "h\xc3\xa9");
  CHECK(Run("{{ 'h\xc3\xa9'[-1:] ~ 'h\xc3\xa9'|reverse }}").text == "\xc3\xa9\xc3\xa9h");
}

TEST_CASE("render time per byte does not grow with the conversation",
          "[template_limits][complexity]") {
  auto tmpl = ChatTemplate::Parse(ReadFile(DataPath("chat/qwen3.5-chat-template.jinja")));
  REQUIRE(tmpl.ok());
  auto conversation = [](int n) {
    json messages = json::array();
    for (int i = 0; i < n; ++i) {
      const std::string text = "turn " + std::to_string(i) + " " + std::string(400, 'x');
      messages.push_back({{"role", i % 2 ? "assistant" : "user"}, {"content", text}});
    }
    return messages;
  };
  // Seconds per output byte, best of a few runs (the minimum is robust against a busy machine).
  auto per_byte = [&](int n) {
    const json messages = conversation(n);
    double best = 1e9;
    size_t bytes = 0;
    for (int rep = 0; rep < 3; ++rep) {
      const double t0 = qwenrt::test::ThreadCpuSeconds();
      auto out = tmpl->RenderChat(messages, nullptr, true, std::nullopt);
      const double s = qwenrt::test::ThreadCpuSeconds() - t0;
      REQUIRE(out.ok());
      bytes = out->size();
      best = std::min(best, s);
    }
    return best / static_cast<double>(bytes);
  };
  // 16x the input: a quadratic step would show as ~16x per byte, linear as ~1x (0.65x measured in
  // thread CPU time; the wall clock of a busy machine made it 4.4x).
  const double small = per_byte(200);
  const double large = per_byte(3200);
  INFO("s/byte at 200 messages " << small << ", at 3200 messages " << large);
  CHECK(large < 4.0 * small);
  // And the default budget leaves a large margin for long real conversations.
  auto out = tmpl->RenderChat(conversation(20000), nullptr, true, std::nullopt);
  INFO((out.ok() ? std::string() : out.status().message()));
  CHECK(out.ok());
}

namespace {

// Runs `fn` on a thread with a `stack_bytes` stack (a host's worker thread may have far less than
// the 8 MiB of a main thread): a walk that recursed per level beyond the limits would overflow it.
void OnSmallStack(size_t stack_bytes, const std::function<void()>& fn) {
  pthread_attr_t attr;
  REQUIRE(pthread_attr_init(&attr) == 0);
  REQUIRE(pthread_attr_setstacksize(&attr, stack_bytes) == 0);
  pthread_t thread;
  auto body = [](void* arg) -> void* {
    (*static_cast<const std::function<void()>*>(arg))();
    return nullptr;
  };
  REQUIRE(pthread_create(&thread, &attr, body, const_cast<std::function<void()>*>(&fn)) == 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
}

}  // namespace

TEST_CASE("the deepest accepted templates and values fit a small thread stack",
          "[template_limits]") {
  // Results are collected here and checked on the main thread (Catch is not thread-safe).
  std::vector<Outcome> outcomes;
  const std::string nested_value =
      "{% set ns = namespace(x=1, y=1) %}{% for i in range(127) %}{% set ns.x = [ns.x] %}{% set "
      "ns.y = [ns.y] %}"
      "{% endfor %}";
  const std::vector<std::string> templates = {
      // An attribute chain at the height limit, inside blocks nested 100 deep.
      Chain("", "{% if true %}", 100) + "{{ x" + Chain("", ".a", 250) + " }}" +
          Chain("", "{% endif %}", 100),
      "{% set x = 1 %}{{ x" + Chain("", " + 1", 250) + " }}",
      Chain("", "{% for i in [1] %}", 250) + "{{ i }}" + Chain("", "{% endfor %}", 250),
      // Macro recursion to the call-depth limit, each level inside nested blocks.
      "{% macro f(n) %}" + Chain("", "{% if true %}", 10) + "{{ f(n - 1) }}" +
          Chain("", "{% endif %}", 10) + "{% endmacro %}{{ f(1000) }}",
      // A value at the depth limit compared, printed and serialised.
      nested_value +
          "{{ ns.x == ns.y }}{{ ns.x|length }}{{ (ns.x|tojson)|length }}{{ (ns.x|string)|length }}",
  };
  OnSmallStack(kSmallStack, [&] {
    for (const std::string& t : templates) outcomes.push_back(Run(t));
  });
  REQUIRE(outcomes.size() == templates.size());
  CHECK_THAT(outcomes[0].text, Catch::Contains("undefined"));
  CHECK(outcomes[1].text == "251");
  CHECK(outcomes[2].text == "1");
  CHECK_THAT(outcomes[3].text, Catch::Contains("recursion"));
  CHECK(outcomes[4].text == "True1255255");
}
