// Limits of the chat-template engine: what one parse and one render may spend. A chat template
// comes from the model file and the conversation from the caller, so both are untrusted; these
// bounds turn every hostile input into an error Status within bounded time, memory and stack.
// The defaults render every real chat template (a few kB, microseconds to milliseconds) with
// orders of magnitude to spare and refuse hostile ones within a fraction of a second.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qwenrt::jinja {

struct TemplateLimits {
  // ---- parse ----
  // Template source. Real chat templates are 1-50 kB; tokens and syntax tree take up to ~60x the
  // source in memory.
  size_t max_template_bytes = 1u << 20;
  // Height of the syntax tree: nested blocks, parentheses and brackets, and chains such as
  // `a + b + c`, `x.a.b`, `f()()`, `x|f|g` (each link is a level). Every tree walk recurses at most
  // this deep, so it bounds the stack of parsing, checking, evaluating and destroying a template.
  int max_nesting = 256;

  // ---- render ----
  // Work units one render may spend: 1 per byte a builtin reads or writes, kCostPerItem per list or
  // dict element it creates, copies or compares, kCostPerNode per expression, statement, loop
  // iteration or macro call (see jinja_budget.h). About 1 ns each on a current x86 core.
  uint64_t max_cost = 50'000'000;
  // Added to max_cost per byte of the context a ChatTemplate renders (its strings' bytes plus 8
  // per JSON value), so long conversations always fit: the Qwen3.5 template spends about 12 per
  // byte, so the default leaves a margin of about 3x on top of max_cost.
  uint64_t cost_per_context_byte = 32;
  int64_t max_steps = 10'000'000;       // loop iterations + macro calls
  size_t max_output_bytes = 16u << 20;  // rendered text (and each macro's or block's output)
  size_t max_value_bytes = 16u << 20;   // any one string a builtin produces
  size_t max_list_items = 1u << 20;     // any one list or dict a builtin produces
  // Nesting of values (lists, dicts, bound methods, loop objects) as they are built, and of the
  // JSON context (messages, tools) a render gets: equality, repr, tojson and destruction recurse
  // per level.
  int max_value_depth = 128;
  int max_call_depth = 48;   // nested macro calls
  int max_eval_depth = 640;  // nested evaluation frames (statements + expressions)
};

}  // namespace qwenrt::jinja
