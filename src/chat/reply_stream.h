// ReplyStream: the one reply splitter. It turns generated token ids into the pieces a chat reply
// streams: reasoning (inside <think>...</think>), content, and parsed tool calls
// (<tool_call>...</tool_call> as JSON), never splitting a UTF-8 character, holding back text that
// may be the start of a stop string, and trimming the newlines the template puts around </think>.
// Token-driven: the markers are special tokens, so text that merely looks like one is content.
// Knows nothing about sessions.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "chat/sampler.h"
#include "text/json.h"
#include "text/tokenizer.h"

namespace qwenrt {

enum class PieceKind { kContent, kReasoning, kToolCall };

class ReplyStream {
 public:
  // Receives each piece; returns false to stop the generation.
  using Sink = std::function<bool(PieceKind kind, std::string_view text)>;

  // `in_reasoning`: the prompt left a <think> block open (the reply starts with reasoning).
  // `tools`: the chat's tool definitions (null if none), to type parsed tool-call arguments.
  ReplyStream(const Tokenizer& tokenizer, bool in_reasoning, std::vector<std::string> stop_strings,
              Json tools, Sink sink);

  // Handles one generated (non end-of-generation) token. Returns false when the generation must
  // stop: the sink returned false (stopped_by_sink()) or a stop string matched
  // (stopped_by_string()).
  bool Push(int32_t token);
  // Ends the stream: emits what is held back (except a partial stop string match and a pending
  // half character, emitted as U+FFFD). Returns false if the sink asked to stop.
  bool Finish();

  bool stopped_by_sink() const { return stopped_by_sink_; }
  // Inside a <think> block (the next text is reasoning).
  bool in_reasoning() const { return mode_ == Mode::kReasoning; }
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
  bool Send(PieceKind kind, std::string_view text);

  const Tokenizer& tok_;
  StreamDecoder decoder_;
  StopStrings stops_;  // holds back text that may start a stop string
  Json tools_;
  Sink sink_;
  Mode mode_;
  bool content_started_ = false;  // leading newlines of the content are skipped until text comes
  std::string
      reasoning_newlines_;  // trailing newlines of the reasoning, held until more text comes
  std::string tool_block_;  // text of the tool call being generated
  std::string piece_;       // scratch for the decoder
  std::string piece_out_;   // scratch for the stop-string filter
  std::string content_, reasoning_;
  std::vector<std::string> tool_calls_;
  bool stopped_by_sink_ = false;
  bool stopped_by_string_ = false;
};

}  // namespace qwenrt
