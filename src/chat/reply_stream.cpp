// Splitting a generated reply into reasoning, content and tool-call pieces (see reply_stream.h).
#include "chat/reply_stream.h"

#include "chat/tool_call.h"

namespace qwenrt {

ReplyStream::ReplyStream(const Tokenizer& tokenizer, bool in_reasoning,
                         std::vector<std::string> stop_strings, Json tools, Sink sink)
    : tok_(tokenizer),
      decoder_(tokenizer, false),
      stops_(std::move(stop_strings)),
      tools_(std::move(tools)),
      sink_(std::move(sink)),
      mode_(in_reasoning ? Mode::kReasoning : Mode::kContent) {
  // Content right after the prompt starts immediately; after </think> its leading newlines go.
  content_started_ = true;
}

bool ReplyStream::EndsInsideThink(const Tokenizer& tokenizer, std::span<const int32_t> tokens) {
  const Tokenizer::SpecialIds& ids = tokenizer.special_ids();
  for (size_t i = tokens.size(); i-- > 0;) {
    if (tokens[i] == ids.think_end && ids.think_end >= 0) return false;
    if (tokens[i] == ids.think && ids.think >= 0) return true;
  }
  return false;
}

bool ReplyStream::Send(PieceKind kind, std::string_view text) {
  if (text.empty()) return true;
  (kind == PieceKind::kReasoning ? reasoning_ : content_).append(text);
  if (!sink_(kind, text)) {
    stopped_by_sink_ = true;
    return false;
  }
  return true;
}

bool ReplyStream::EmitReasoning(std::string_view text, bool final) {
  // Hold trailing newlines: the template writes "reasoning\n</think>", and that newline is markup.
  // Member scratch strings keep their capacity, so a token costs no allocation.
  piece_out_.assign(reasoning_newlines_);
  reasoning_newlines_.clear();
  piece_out_.append(text);
  size_t keep = piece_out_.size();
  while (keep > 0 && piece_out_[keep - 1] == '\n') --keep;
  if (!final) reasoning_newlines_.assign(piece_out_, keep, std::string::npos);
  piece_out_.resize(keep);
  size_t lead = 0;  // and the "\n" after the opening <think>
  if (reasoning_.empty()) {
    while (lead < piece_out_.size() && piece_out_[lead] == '\n') ++lead;
  }
  return Send(PieceKind::kReasoning, std::string_view(piece_out_).substr(lead));
}

bool ReplyStream::EmitContent(std::string_view text, bool final) {
  if (!content_started_) {  // skip the "\n\n" after </think>
    size_t lead = 0;
    while (lead < text.size() && text[lead] == '\n') ++lead;
    text.remove_prefix(lead);
    if (!text.empty()) content_started_ = true;
  }
  if (stops_.stopped()) return false;
  piece_out_.clear();
  bool stop = stops_.Push(text, &piece_out_);
  if (final && !stop) stops_.Flush(&piece_out_);
  bool more = Send(PieceKind::kContent, piece_out_);
  if (stop) {
    stopped_by_string_ = true;
    return false;
  }
  return more;
}

bool ReplyStream::Push(int32_t token) {
  const Tokenizer::SpecialIds& ids = tok_.special_ids();
  if (mode_ == Mode::kToolCall) {
    if (token == ids.tool_call_end) {
      decoder_.Flush(&tool_block_);
      tool_calls_.push_back(ToolCallJson(tool_block_, tools_));
      tool_block_.clear();
      mode_ = Mode::kContent;
      content_started_ = false;
      if (!sink_(PieceKind::kToolCall, tool_calls_.back())) {
        stopped_by_sink_ = true;
        return false;
      }
      return true;
    }
    decoder_.Push(token, &tool_block_);
    return true;
  }
  if (token == ids.think && ids.think >= 0) {
    piece_.clear();
    decoder_.Flush(&piece_);
    if (!EmitContent(piece_, false)) return false;
    mode_ = Mode::kReasoning;
    return true;
  }
  if ((token == ids.think_end && ids.think_end >= 0) ||
      (token == ids.tool_call && ids.tool_call >= 0 && mode_ == Mode::kReasoning)) {
    // A tool call also ends the reasoning (as llama.cpp's parser accepts).
    piece_.clear();
    decoder_.Flush(&piece_);
    if (mode_ == Mode::kReasoning && !EmitReasoning(piece_, true)) return false;
    reasoning_newlines_.clear();
    mode_ = Mode::kContent;
    content_started_ = false;
    if (token == ids.think_end) return true;
  }
  if (token == ids.tool_call && ids.tool_call >= 0) {
    piece_.clear();
    decoder_.Flush(&piece_);
    if (!EmitContent(piece_, true)) return false;
    mode_ = Mode::kToolCall;
    tool_block_.clear();
    return true;
  }
  piece_.clear();
  decoder_.Push(token, &piece_);
  if (piece_.empty()) return true;
  return mode_ == Mode::kReasoning ? EmitReasoning(piece_, false) : EmitContent(piece_, false);
}

bool ReplyStream::Finish() {
  piece_.clear();
  decoder_.Flush(&piece_);
  if (mode_ == Mode::kToolCall) {  // an unfinished tool call stays raw content
    tool_block_.append(piece_);
    std::string text = "<tool_call>" + tool_block_;
    tool_block_.clear();
    mode_ = Mode::kContent;
    return EmitContent(text, true);
  }
  if (mode_ == Mode::kReasoning) return EmitReasoning(piece_, true);
  if (stopped_by_string_) return true;
  return EmitContent(piece_, true);
}

std::string ReplyStream::tool_calls_json() const {
  std::string out = "[";
  for (size_t i = 0; i < tool_calls_.size(); ++i) {
    if (i > 0) out += ", ";
    out += tool_calls_[i];
  }
  return out + "]";
}

}  // namespace qwenrt
