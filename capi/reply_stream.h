// ReplyStream: turns generated token ids into the pieces the C ABI streams: reasoning (inside
// <think>...</think>), content, and parsed tool calls (<tool_call>...</tool_call> as JSON), never
// splitting a UTF-8 character, holding back text that may be the start of a stop string, and
// trimming the newlines the template puts around </think>. Knows nothing about sessions.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "qwenrt/qwenrt.h"
#include "chat/sampler.h"
#include "base/status.h"
#include "text/tokenizer.h"

namespace qwenrt::capi {

// Parses one tool call block (the text between <tool_call> and </tool_call>):
//   <function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...</function>
// into {"name": NAME, "arguments": {KEY: VALUE, ...}} with the chat layer's parser
// (ReplyParser::ParseToolCall): VALUE is typed by the tool's JSON schema in `tools` (an OpenAI-format
// array or null): "string" parameters verbatim, others as JSON (True/False/None as Python spells
// them). Unparsable blocks give {"name": "", "arguments": {}, "raw": TEXT}.
std::string ParseToolCall(std::string_view block, const nlohmann::ordered_json& tools = nullptr);

class ReplyStream {
 public:
  // Receives each piece; returns false to stop the generation.
  using Sink = std::function<bool(qwenrt_piece_kind kind, std::string_view text)>;

  // `in_reasoning`: the prompt left a <think> block open (the reply starts with reasoning).
  // `tools`: the chat's tool definitions (null if none), to type parsed tool-call arguments.
  ReplyStream(const Tokenizer& tokenizer, bool in_reasoning, std::vector<std::string> stop_strings,
              nlohmann::ordered_json tools, Sink sink);

  // Handles one generated (non end-of-generation) token. Returns false when the generation must
  // stop: the sink returned false (stopped_by_sink()) or a stop string matched (stopped_by_string()).
  bool Push(int32_t token);
  // Ends the stream: emits what is held back (except a partial stop string match and a pending
  // half character, emitted as U+FFFD). Returns false if the sink asked to stop.
  bool Finish();

  bool stopped_by_sink() const { return stopped_by_sink_; }
  bool stopped_by_string() const { return stopped_by_string_; }
  // Everything emitted so far, by kind (tool_calls is a JSON array).
  const std::string& content() const { return content_; }
  const std::string& reasoning() const { return reasoning_; }
  std::string tool_calls_json() const;

  // True if the last think marker in `tokens` opens a block (<think> with no </think> after it).
  static bool EndsInsideThink(const Tokenizer& tokenizer, std::span<const int32_t> tokens);

 private:
  enum class Mode { kContent, kReasoning, kToolCall };
  bool EmitReasoning(std::string_view text, bool final);
  bool EmitContent(std::string_view text, bool final);
  bool Send(qwenrt_piece_kind kind, std::string_view text);

  const Tokenizer& tok_;
  StreamDecoder decoder_;
  StopStrings stops_;               // holds back text that may start a stop string
  nlohmann::ordered_json tools_;
  Sink sink_;
  Mode mode_;
  bool content_started_ = false;    // leading newlines of the content are skipped until text comes
  std::string reasoning_newlines_;  // trailing newlines of the reasoning, held until more text comes
  std::string tool_block_;          // text of the tool call being generated
  std::string piece_;               // scratch for the decoder
  std::string piece_out_;           // scratch for the stop-string filter
  std::string content_, reasoning_;
  std::vector<std::string> tool_calls_;
  bool stopped_by_sink_ = false;
  bool stopped_by_string_ = false;
};

}  // namespace qwenrt::capi
