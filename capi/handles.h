// What the opaque C handles are: `qwenrt_model` wraps a shared ModelBundle (the immutable Model plus
// the text objects built from its GGUF once at load); `qwenrt_session` wraps a Session plus the C-side
// state the ABI promises (cancel flag, last report and reply, requested checkpoints).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/chat_template.h"
#include "model/model.h"
#include "qwenrt/qwenrt.h"
#include "session/session.h"
#include "base/status.h"
#include "text/tokenizer.h"

namespace qwenrt::capi {

// Everything model-wide and immutable: shared by the model handle and every session created from it.
struct ModelBundle {
  std::shared_ptr<const Model> model;
  std::shared_ptr<const Tokenizer> tokenizer;
  std::shared_ptr<const ChatTemplate> chat_template;  // null when absent or unparsable
  std::string template_error;                         // why chat_template is null ("" if absent)
  std::string name;                                   // general.name or ""
  uint64_t n_params = 0;
  uint64_t weight_bytes = 0;
};

// Builds the bundle of a loaded model (tokenizer, chat template, facts for qwenrt_model_info).
StatusOr<std::shared_ptr<const ModelBundle>> MakeBundle(std::shared_ptr<const Model> model);

}  // namespace qwenrt::capi

struct qwenrt_model {
  std::shared_ptr<const qwenrt::capi::ModelBundle> bundle;
};

struct qwenrt_session {
  std::shared_ptr<const qwenrt::capi::ModelBundle> bundle;
  std::unique_ptr<qwenrt::Session> session;
  qwenrt_session_params params{};        // as created (n_ctx, history mode, log callback, ...)
  std::atomic<bool> cancel{false};       // set by qwenrt_session_cancel from any thread
  qwenrt_report report{};                // the last step
  std::string report_line;               // its trace line (formatted here from the FeedReport, so a
                                         // fork never writes into its parent's handle)
  std::string reply_content;             // the last generated reply, split as streamed
  std::string reply_reasoning;
  std::string reply_tool_calls = "[]";   // JSON array
  std::vector<int64_t> pending_checkpoints;  // qwenrt_session_checkpoint_at positions not reached yet
  // Chat bookkeeping for QWENRT_HISTORY_TRANSCRIPT: assistant messages in the last chat fed (-1:
  // the last feed was not a chat), and after a reply to it, how many assistant turns the transcript
  // holds exactly and where the last reply ends in it (-1: unknown; the next chat is rendered whole).
  int64_t chat_assistants_fed = -1;
  nlohmann::ordered_json chat_tools;     // tools of the last chat fed (types parsed tool-call arguments)
  int64_t transcript_assistants = -1;
  int64_t transcript_reply_end = -1;
};
