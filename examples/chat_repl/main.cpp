// chat_repl: an interactive chat over the qwenrt C API (it includes only qwenrt/qwenrt.h). Streams
// the reply as it is generated (reasoning dimmed, shown or hidden), prints a one-line report after
// every turn (reused / prefilled tokens, time to first token, tokens/s), and has commands to toggle
// thinking, save / load / fork / reset the session. Without --model it runs on the embedded demo
// model (a few million parameters trained in tools/demo-model/: it says so at startup). Reads
// stdin line by line, so it can be
// scripted through a pipe (no prompt is printed then; reasoning is hidden and a one-line note says
// how much).
#include <qwenrt/qwenrt.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "../common/progress_bar.h"

extern "C" const unsigned char qwenrt_repl_embedded_model[];
extern "C" const unsigned char qwenrt_repl_embedded_model_end[];

namespace {

const char* const kDim = "\x1b[2m";
const char* const kReset = "\x1b[0m";

// Params are filled by the library for the size this header knows (QWENRT_INIT sets struct_size
// first); they cannot fail for that size, so a failure is a broken installation.
template <typename T>
T Init(qwenrt_status (*init)(T*)) {
  T p{};
  if (QWENRT_INIT(init, &p) != QWENRT_OK) {
    std::fprintf(stderr, "qwenrt: %s\n", qwenrt_last_error());
    std::exit(1);
  }
  return p;
}

qwenrt_sampling_params DefaultSampling() { return Init(qwenrt_sampling_params_init); }

struct Options {
  std::string model;  // empty: the embedded fixture
  std::string system;
  qwenrt_sampling_params sampling = DefaultSampling();
  int max_tokens = 256;
  int n_ctx = 0;
  int n_threads = 0;
  qwenrt_backend backend = QWENRT_BACKEND_AUTO;
  qwenrt_history_mode history = QWENRT_HISTORY_TEMPLATE;
  bool think = true;
  std::string reasoning;  // "dim", "show", "hide"; default: dim on a terminal, hide otherwise
  bool trace = false;
  int max_draft = 0;  // speculative decoding with the model's MTP head; 0 = off
};

struct Message {
  qwenrt_role role;
  std::string content;
  std::string reasoning;
};

// One line of the conversation tree: /fork copies the current branch and switches to the copy.
struct Branch {
  qwenrt_session* session = nullptr;
  std::vector<Message> messages;
  int turns = 0;
};

volatile sig_atomic_t g_interrupted = 0;

void OnSigint(int) { g_interrupted = 1; }

void Usage(FILE* f) {
  std::fprintf(
      f,
      "usage: chat_repl [options]\n"
      "  --model PATH        a Qwen3.5 GGUF (default: the embedded demo model)\n"
      "  --system TEXT       system prompt\n"
      "  --max-tokens N      tokens per reply (default 256)\n"
      "  --temp T            temperature (default 0 = greedy, reproducible)\n"
      "  --top-k K  --top-p P  --min-p P  --repeat-penalty R  --seed S\n"
      "  --ctx N             context limit (default: the model's)\n"
      "  --threads N         CPU threads (default: all)\n"
      "  --backend auto|cpu|cuda|ref\n"
      "  --history template|transcript\n"
      "  --no-think          start with thinking off (/think on|off toggles)\n"
      "  --reasoning dim|show|hide   how to print reasoning (default: dim on a terminal;\n"
      "                      through a pipe hidden, with a one-line note per reply)\n"
      "  --trace             print the session's trace line per step\n"
      "  --max-draft N       speculative decoding: the model's MTP head drafts up to N\n"
      "                      tokens per verify pass (needs a file with an MTP block;\n"
      "                      replies are the same as without it; /stats shows acceptance)\n");
}

void PrintHelp() {
  std::printf(
      "commands:\n"
      "  /think on|off   enable or disable reasoning for the next turns\n"
      "  /save FILE      save the session (FILE) and the conversation (FILE.chat)\n"
      "  /load FILE      load both back (also in a new process: no re-prefill)\n"
      "  /fork           copy the current branch and continue on the copy\n"
      "  /branch N       switch to branch N\n"
      "  /reset          forget the conversation\n"
      "  /stats          the last turn's full report, checkpoints and model facts\n"
      "  /help           this text\n"
      "  /quit           exit (also end of input)\n");
}

bool ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "chat_repl: %s needs a value\n", name);
        return nullptr;
      }
      return argv[++i];
    };
    const char* v = nullptr;
    if (a == "--help" || a == "-h") {
      Usage(stdout);
      std::exit(0);
    } else if (a == "--no-think") {
      o->think = false;
    } else if (a == "--trace") {
      o->trace = true;
    } else if (a == "--model") {
      if (!(v = value("--model"))) return false;
      o->model = v;
    } else if (a == "--system") {
      if (!(v = value("--system"))) return false;
      o->system = v;
    } else if (a == "--max-tokens") {
      if (!(v = value("--max-tokens"))) return false;
      o->max_tokens = std::atoi(v);
    } else if (a == "--temp") {
      if (!(v = value("--temp"))) return false;
      o->sampling.temperature = std::strtof(v, nullptr);
    } else if (a == "--top-k") {
      if (!(v = value("--top-k"))) return false;
      o->sampling.top_k = std::atoi(v);
    } else if (a == "--top-p") {
      if (!(v = value("--top-p"))) return false;
      o->sampling.top_p = std::strtof(v, nullptr);
    } else if (a == "--min-p") {
      if (!(v = value("--min-p"))) return false;
      o->sampling.min_p = std::strtof(v, nullptr);
    } else if (a == "--repeat-penalty") {
      if (!(v = value("--repeat-penalty"))) return false;
      o->sampling.repeat_penalty = std::strtof(v, nullptr);
    } else if (a == "--seed") {
      if (!(v = value("--seed"))) return false;
      o->sampling.seed = std::strtoull(v, nullptr, 10);
    } else if (a == "--ctx") {
      if (!(v = value("--ctx"))) return false;
      o->n_ctx = std::atoi(v);
    } else if (a == "--max-draft") {
      if (!(v = value("--max-draft"))) return false;
      o->max_draft = std::atoi(v);
    } else if (a == "--threads") {
      if (!(v = value("--threads"))) return false;
      o->n_threads = std::atoi(v);
    } else if (a == "--backend") {
      if (!(v = value("--backend"))) return false;
      std::string b = v;
      if (b == "auto")
        o->backend = QWENRT_BACKEND_AUTO;
      else if (b == "cpu")
        o->backend = QWENRT_BACKEND_CPU;
      else if (b == "cuda")
        o->backend = QWENRT_BACKEND_CUDA;
      else if (b == "ref")
        o->backend = QWENRT_BACKEND_REF;
      else {
        std::fprintf(stderr, "chat_repl: unknown backend '%s'\n", v);
        return false;
      }
    } else if (a == "--history") {
      if (!(v = value("--history"))) return false;
      std::string h = v;
      if (h == "template")
        o->history = QWENRT_HISTORY_TEMPLATE;
      else if (h == "transcript")
        o->history = QWENRT_HISTORY_TRANSCRIPT;
      else {
        std::fprintf(stderr, "chat_repl: unknown history mode '%s'\n", v);
        return false;
      }
    } else if (a == "--reasoning") {
      if (!(v = value("--reasoning"))) return false;
      o->reasoning = v;
      if (o->reasoning != "dim" && o->reasoning != "show" && o->reasoning != "hide") {
        std::fprintf(stderr, "chat_repl: --reasoning takes dim, show or hide\n");
        return false;
      }
    } else {
      std::fprintf(stderr, "chat_repl: unknown option '%s' (try --help)\n", argv[i]);
      return false;
    }
  }
  return true;
}

// Prints an error with the library's detail; returns false so callers can `return Fail(...)`.
bool Fail(const char* what, qwenrt_status s) {
  std::fprintf(stderr, "chat_repl: %s failed: %s (%s)\n", what, qwenrt_status_string(s),
               qwenrt_last_error());
  return false;
}

// Streaming state: which kind of piece was printed last, so a switch can close the dim colour.
struct Stream {
  std::string mode;  // dim, show, hide
  qwenrt_piece_kind last = QWENRT_PIECE_CONTENT;
  bool any = false;         // something was printed this turn
  size_t hidden_chars = 0;  // reasoning characters not printed (mode hide) this turn
};

// Code points in UTF-8 text: every byte that is not a continuation byte (10xxxxxx) starts one.
size_t CountChars(const char* text, size_t len) {
  size_t n = 0;
  for (size_t i = 0; i < len; ++i) n += (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
  return n;
}

bool OnPiece(qwenrt_piece_kind kind, const char* text, size_t len, void* user_data) {
  auto* st = static_cast<Stream*>(user_data);
  bool reasoning = kind == QWENRT_PIECE_REASONING;
  if (reasoning && st->mode == "hide") {
    // Counted, so the end of the turn can say that the reply was not empty.
    st->hidden_chars += CountChars(text, len);
    return !g_interrupted;
  }
  if (st->any && st->last == QWENRT_PIECE_REASONING && !reasoning) {
    std::fputs(st->mode == "dim" ? kReset : "", stdout);
    std::fputs("\n", stdout);
  }
  if (reasoning && (!st->any || st->last != QWENRT_PIECE_REASONING)) {
    // Dim marks reasoning on a terminal; without colour a label does.
    std::fputs(st->mode == "dim" ? kDim : "[reasoning] ", stdout);
  }
  if (kind == QWENRT_PIECE_TOOL_CALL) std::fputs("[tool call] ", stdout);
  std::fwrite(text, 1, len, stdout);
  std::fflush(stdout);
  st->last = kind;
  st->any = true;
  return !g_interrupted;  // Ctrl-C stops the reply; the session stays consistent
}

// Draws the prefill bar; Ctrl-C during a long prompt cancels the turn (QWENRT_CANCELLED).
bool OnPrefill(int64_t done, int64_t total, void* user_data) {
  static_cast<qwenrt_examples::ProgressBar*>(user_data)->Update(done, total);
  return g_interrupted == 0;
}

void OnTrace(const char* line, void*) { std::fprintf(stderr, "[trace] %s\n", line); }

const char* StopName(qwenrt_stop_reason r) {
  switch (r) {
    case QWENRT_STOP_EOG:
      return "eog";
    case QWENRT_STOP_MAX_TOKENS:
      return "max_tokens";
    case QWENRT_STOP_STRING:
      return "stop_string";
    case QWENRT_STOP_CALLBACK:
      return "interrupted";
    case QWENRT_STOP_CONTEXT_FULL:
      return "context_full";
    default:
      return "none";
  }
}

const char* MissName(qwenrt_miss_reason r) {
  switch (r) {
    case QWENRT_MISS_NONE:
      return "none";
    case QWENRT_MISS_EMPTY:
      return "empty session";
    case QWENRT_MISS_NO_CHECKPOINT:
      return "no checkpoint at the divergence";
    default:
      return "other";
  }
}

bool GetReply(qwenrt_session* s, qwenrt_piece_kind kind, std::string* out) {
  size_t needed = 0;
  std::vector<char> buf(256);
  qwenrt_status st = qwenrt_session_get_reply(s, kind, buf.data(), buf.size(), &needed);
  if (st == QWENRT_BUFFER_TOO_SMALL) {
    buf.resize(needed);
    st = qwenrt_session_get_reply(s, kind, buf.data(), buf.size(), &needed);
  }
  if (st != QWENRT_OK) return Fail("qwenrt_session_get_reply", st);
  out->assign(buf.data());
  return true;
}

// The conversation file written next to a saved session: the host owns its messages, the session
// file owns the model state. Format: "qwenrt-chat 1\n", then per message
// "<role> <content bytes> <reasoning bytes>\n<content><reasoning>\n".
bool SaveMessages(const std::string& path, const std::vector<Message>& messages) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return false;
    f << "qwenrt-chat 1\n";
    for (const Message& m : messages) {
      f << static_cast<int>(m.role) << ' ' << m.content.size() << ' ' << m.reasoning.size() << '\n'
        << m.content << m.reasoning << '\n';
    }
    if (!f.flush()) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

bool LoadMessages(const std::string& path, std::vector<Message>* messages) {
  std::ifstream f(path, std::ios::binary);
  std::string header;
  if (!f || !std::getline(f, header) || header != "qwenrt-chat 1") return false;
  std::vector<Message> out;
  int role;
  size_t nc, nr;
  while (f >> role >> nc >> nr) {
    if (f.get() != '\n' || role < 0 || role > 3) return false;
    Message m{static_cast<qwenrt_role>(role), std::string(nc, '\0'), std::string(nr, '\0')};
    if (!f.read(m.content.data(), static_cast<std::streamsize>(nc)) ||
        !f.read(m.reasoning.data(), static_cast<std::streamsize>(nr)) || f.get() != '\n') {
      return false;
    }
    out.push_back(std::move(m));
  }
  *messages = std::move(out);
  return true;
}

void PrintReportLine(int turn, const qwenrt_report& r, qwenrt_stop_reason stop) {
  char ckpt[32] = "none";
  if (r.checkpoint_pos >= 0) std::snprintf(ckpt, sizeof ckpt, "%lld", (long long)r.checkpoint_pos);
  std::printf(
      "[turn %d] prompt %lld | reused %lld | prefilled %lld | checkpoint %s | ttft %.1f ms | "
      "%lld tokens, %.1f tok/s | stop %s\n",
      turn, (long long)r.prompt_tokens, (long long)r.reused_tokens, (long long)r.prefilled_tokens,
      ckpt, r.ttft_ms, (long long)r.generated_tokens, r.decode_tokens_per_s, StopName(stop));
  std::fflush(stdout);
}

class Repl {
 public:
  Repl(const Options& o, qwenrt_model* model) : o_(o), model_(model) { stream_.mode = o.reasoning; }
  Repl(const Repl&) = delete;  // the sessions hold &bar_
  Repl& operator=(const Repl&) = delete;
  ~Repl() {
    for (Branch& b : branches_) qwenrt_session_free(b.session);
  }

  bool Start() {
    Branch b;
    if (!NewSession(&b.session)) return false;
    branches_.push_back(std::move(b));
    return true;
  }

  // Returns false to quit.
  bool Line(const std::string& line) {
    if (line.empty()) return true;
    if (line[0] == '/') return Command(line);
    Turn(line);
    return true;
  }

 private:
  Branch& cur() { return branches_[current_]; }

  bool NewSession(qwenrt_session** out) {
    qwenrt_session_params sp = Init(qwenrt_session_params_init);
    sp.n_ctx = o_.n_ctx;
    sp.n_threads = o_.n_threads;
    sp.backend = o_.backend;
    sp.history_mode = o_.history;
    sp.max_draft = o_.max_draft;
    if (o_.trace) sp.log_callback = OnTrace;
    sp.prefill_progress = OnPrefill;
    sp.prefill_progress_user_data = &bar_;
    qwenrt_status s = qwenrt_session_create(model_, &sp, out);
    if (s != QWENRT_OK) return Fail("qwenrt_session_create", s);
    return true;
  }

  void Turn(const std::string& text) {
    Branch& b = cur();
    b.messages.push_back({QWENRT_ROLE_USER, text, ""});
    std::vector<qwenrt_message> msgs;
    if (!o_.system.empty()) {
      msgs.push_back(
          {sizeof(qwenrt_message), QWENRT_ROLE_SYSTEM, o_.system.c_str(), nullptr, nullptr, 0});
    }
    for (const Message& m : b.messages) {
      msgs.push_back({sizeof(qwenrt_message), m.role, m.content.c_str(),
                      m.reasoning.empty() ? nullptr : m.reasoning.c_str(), nullptr, 0});
    }
    qwenrt_chat chat = Init(qwenrt_chat_init);
    chat.messages = msgs.data();
    chat.n_messages = msgs.size();
    chat.enable_thinking = think_;

    qwenrt_generate_params gp = Init(qwenrt_generate_params_init);
    gp.max_tokens = o_.max_tokens;
    gp.callback = OnPiece;
    gp.user_data = &stream_;
    stream_.any = false;
    stream_.last = QWENRT_PIECE_CONTENT;
    stream_.hidden_chars = 0;
    g_interrupted = 0;

    qwenrt_report r{};
    r.struct_size = sizeof r;
    bar_.Start("prompt");
    qwenrt_status s = qwenrt_session_chat(b.session, &chat, &o_.sampling, &gp, &r);
    bar_.Clear();
    if (stream_.any && stream_.last == QWENRT_PIECE_REASONING && stream_.mode == "dim") {
      std::fputs(kReset, stdout);
    }
    if (stream_.any) std::fputs("\n", stdout);
    if (s != QWENRT_OK) {
      Fail("qwenrt_session_chat", s);
      b.messages.pop_back();  // the turn did not happen; the session is still consistent
      return;
    }
    Message reply{QWENRT_ROLE_ASSISTANT, "", ""};
    if (!GetReply(b.session, QWENRT_PIECE_CONTENT, &reply.content) ||
        !GetReply(b.session, QWENRT_PIECE_REASONING, &reply.reasoning)) {
      b.messages.pop_back();
      return;
    }
    b.messages.push_back(std::move(reply));
    ++b.turns;
    // A reply that printed nothing still says what it was, so a piped run shows the model's output:
    // reasoning hidden by default, or (a random-weight model's greedy replies) only whitespace,
    // which the reply stream trims.
    if (stream_.hidden_chars > 0) {
      std::printf("(reasoning: %zu chars hidden; --reasoning show prints it)\n",
                  stream_.hidden_chars);
    } else if (!stream_.any) {
      std::printf("(%lld tokens, no visible text)\n", (long long)r.generated_tokens);
    }
    PrintReportLine(b.turns, r, r.stop_reason);
  }

  bool Command(const std::string& line) {
    std::istringstream in(line);
    std::string cmd, arg;
    in >> cmd;
    std::getline(in >> std::ws, arg);
    if (cmd == "/quit" || cmd == "/exit") return false;
    if (cmd == "/help") {
      PrintHelp();
    } else if (cmd == "/think") {
      if (arg == "on" || arg == "off") {
        think_ = arg == "on";
        std::printf("thinking %s\n", think_ ? "on" : "off");
      } else {
        std::printf("usage: /think on|off (now %s)\n", think_ ? "on" : "off");
      }
    } else if (cmd == "/save") {
      Save(arg);
    } else if (cmd == "/load") {
      Load(arg);
    } else if (cmd == "/fork") {
      Branch b;
      qwenrt_status s = qwenrt_session_fork(cur().session, &b.session);
      if (s != QWENRT_OK) {
        Fail("qwenrt_session_fork", s);
      } else {
        b.messages = cur().messages;
        b.turns = cur().turns;
        branches_.push_back(std::move(b));
        std::printf("forked branch %zu into branch %zu (now on %zu)\n", current_,
                    branches_.size() - 1, branches_.size() - 1);
        current_ = branches_.size() - 1;
      }
    } else if (cmd == "/branch") {
      char* end = nullptr;
      unsigned long n = std::strtoul(arg.c_str(), &end, 10);
      if (arg.empty() || *end != '\0' || n >= branches_.size()) {
        std::printf("usage: /branch N (0..%zu; now %zu)\n", branches_.size() - 1, current_);
      } else {
        current_ = n;
        std::printf("on branch %zu (%zu messages, %lld tokens)\n", current_, cur().messages.size(),
                    (long long)qwenrt_session_n_tokens(cur().session));
      }
    } else if (cmd == "/reset") {
      qwenrt_status s = qwenrt_session_reset(cur().session);
      if (s != QWENRT_OK) {
        Fail("qwenrt_session_reset", s);
      } else {
        cur().messages.clear();
        cur().turns = 0;
        std::printf("conversation reset\n");
      }
    } else if (cmd == "/stats") {
      Stats();
    } else {
      std::printf("unknown command %s (try /help)\n", cmd.c_str());
    }
    std::fflush(stdout);
    return true;
  }

  void Save(const std::string& path) {
    if (path.empty()) {
      std::printf("usage: /save FILE\n");
      return;
    }
    qwenrt_status s = qwenrt_session_save_file(cur().session, path.c_str());
    if (s != QWENRT_OK) {
      Fail("qwenrt_session_save_file", s);
      return;
    }
    if (!SaveMessages(path + ".chat", cur().messages)) {
      std::fprintf(stderr, "chat_repl: cannot write %s.chat: %s\n", path.c_str(),
                   std::strerror(errno));
      return;
    }
    std::printf("saved %lld tokens and %zu messages to %s\n",
                (long long)qwenrt_session_n_tokens(cur().session), cur().messages.size(),
                path.c_str());
  }

  void Load(const std::string& path) {
    if (path.empty()) {
      std::printf("usage: /load FILE\n");
      return;
    }
    std::vector<Message> messages;
    if (!LoadMessages(path + ".chat", &messages)) {
      std::fprintf(stderr, "chat_repl: cannot read the conversation %s.chat\n", path.c_str());
      return;
    }
    qwenrt_status s = qwenrt_session_load_file(cur().session, path.c_str());
    if (s != QWENRT_OK) {
      Fail("qwenrt_session_load_file", s);
      return;
    }
    cur().messages = std::move(messages);
    cur().turns = 0;
    for (const Message& m : cur().messages) cur().turns += m.role == QWENRT_ROLE_ASSISTANT;
    std::printf("loaded %lld tokens and %zu messages from %s\n",
                (long long)qwenrt_session_n_tokens(cur().session), cur().messages.size(),
                path.c_str());
  }

  void Stats() {
    qwenrt_report r{};
    r.struct_size = sizeof r;
    qwenrt_status s = qwenrt_session_get_report(cur().session, &r);
    if (s != QWENRT_OK) {
      Fail("qwenrt_session_get_report", s);
      return;
    }
    qwenrt_model_info info{};
    info.struct_size = sizeof info;
    if (qwenrt_model_get_info(model_, &info) == QWENRT_OK) {
      std::printf("model: %s (%s), vocab %d, trained ctx %d, %d layers, fingerprint %s\n",
                  info.name[0] ? info.name : "(unnamed)", info.arch, info.n_vocab, info.n_ctx_train,
                  info.n_layer, info.fingerprint);
    }
    qwenrt_backend backend = QWENRT_BACKEND_AUTO;
    qwenrt_session_get_backend(cur().session, &backend);
    const char* backend_name = backend == QWENRT_BACKEND_CUDA  ? "cuda"
                               : backend == QWENRT_BACKEND_REF ? "ref"
                                                               : "cpu";
    std::printf("branch %zu of %zu: %zu messages, %lld tokens held, thinking %s, backend %s\n",
                current_, branches_.size(), cur().messages.size(),
                (long long)qwenrt_session_n_tokens(cur().session), think_ ? "on" : "off",
                backend_name);
    std::printf(
        "last step: prompt %lld, common prefix %lld, reused %lld, prefilled %lld, checkpoint "
        "%lld, miss reason: %s\n",
        (long long)r.prompt_tokens, (long long)r.common_prefix, (long long)r.reused_tokens,
        (long long)r.prefilled_tokens, (long long)r.checkpoint_pos, MissName(r.miss_reason));
    std::printf("timings: prefill %.2f ms, ttft %.2f ms, decode %.2f ms, %lld tokens, %.1f tok/s\n",
                r.prefill_ms, r.ttft_ms, r.decode_ms, (long long)r.generated_tokens,
                r.decode_tokens_per_s);
    if (o_.max_draft > 0) {
      std::printf("speculation: max draft %d, %lld drafted, %lld accepted (%.1f%%)\n", o_.max_draft,
                  (long long)r.drafted_tokens, (long long)r.accepted_tokens,
                  r.drafted_tokens > 0 ? 100.0 * r.accepted_tokens / r.drafted_tokens : 0.0);
    }
    std::printf("memory: state %.2f MiB, %d checkpoints %.2f MiB\n", r.state_bytes / 1048576.0,
                r.n_checkpoints, r.checkpoint_bytes / 1048576.0);
    size_t n = 0;
    std::vector<int64_t> pos(64);
    s = qwenrt_session_get_checkpoints(cur().session, pos.data(), pos.size(), &n);
    if (s == QWENRT_BUFFER_TOO_SMALL) {
      pos.resize(n);
      s = qwenrt_session_get_checkpoints(cur().session, pos.data(), pos.size(), &n);
    }
    if (s == QWENRT_OK) {
      std::printf("checkpoints at:");
      for (size_t i = 0; i < n; ++i) std::printf(" %lld", (long long)pos[i]);
      std::printf("\n");
    }
    char line[512];
    size_t needed = 0;
    if (qwenrt_session_get_report_line(cur().session, line, sizeof line, &needed) == QWENRT_OK) {
      std::printf("trace: %s\n", line);
    }
  }

  Options o_;
  qwenrt_model* model_;
  std::vector<Branch> branches_;
  size_t current_ = 0;
  bool think_ = true;
  Stream stream_;
  qwenrt_examples::ProgressBar bar_;  // sessions hold its address: the Repl does not move

 public:
  void set_think(bool on) { think_ = on; }
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, &o)) return 2;
  bool tty_in = isatty(STDIN_FILENO);
  bool tty_out = isatty(STDOUT_FILENO);
  if (o.reasoning.empty()) o.reasoning = tty_out ? "dim" : "hide";
  if (o.reasoning == "dim" && !tty_out) o.reasoning = "show";

  if (qwenrt_abi_version() < QWENRT_ABI_VERSION) {  // a newer library runs older hosts
    std::fprintf(stderr, "chat_repl: built for ABI %d but libqwenrt has the older ABI %d\n",
                 QWENRT_ABI_VERSION, qwenrt_abi_version());
    return 1;
  }

  qwenrt_model* model = nullptr;
  qwenrt_model_params mp = Init(qwenrt_model_params_init);
  qwenrt_status s;
  if (o.model.empty()) {
    size_t size = static_cast<size_t>(qwenrt_repl_embedded_model_end - qwenrt_repl_embedded_model);
    s = qwenrt_model_load_from_memory(qwenrt_repl_embedded_model, size, &mp, &model);
  } else {
    s = qwenrt_model_load(o.model.c_str(), &mp, &model);
  }
  if (s != QWENRT_OK) {
    Fail("loading the model", s);
    return 1;
  }
  qwenrt_model_info info{};
  info.struct_size = sizeof info;
  if (qwenrt_model_get_info(model, &info) == QWENRT_OK) {
    std::fprintf(stderr, "qwenrt %s: %s model %s (%s), /help for commands\n", qwenrt_version(),
                 info.arch, o.model.empty() ? "(embedded demo model)" : o.model.c_str(),
                 info.fingerprint);
  }
  // What one session will hold at --ctx, before it is created (docs/memory.md).
  qwenrt_memory_estimate_params ep = Init(qwenrt_memory_estimate_params_init);
  ep.n_ctx = o.n_ctx;
  ep.n_threads = o.n_threads;  // the session's: per-thread attention scratch
  qwenrt_memory_estimate est{};
  est.struct_size = sizeof est;
  if (qwenrt_model_estimate_memory(model, &ep, &est) == QWENRT_OK) {
    const double mib = 1024.0 * 1024.0;
    std::fprintf(stderr,
                 "memory at ctx %d (f16 KV): weights %.1f MiB + session %.1f MiB (KV %.1f, state "
                 "%.1f, checkpoints %.1f, working %.1f) = %.1f MiB\n",
                 o.n_ctx > 0 ? o.n_ctx : info.n_ctx_train, est.weights / mib, est.per_session / mib,
                 est.kv_per_session / mib, est.state_per_session / mib,
                 est.checkpoints_per_session / mib, est.working_per_session / mib, est.total / mib);
  }
  if (o.model.empty()) {
    std::fprintf(stderr,
                 "note: the embedded demo model has 1.6M parameters, trained for trying qwenrt: "
                 "greetings, small arithmetic, capitals, spelling backwards, JSON and two tools "
                 "(get_weather, calculator); not a general assistant (--model PATH loads a real "
                 "Qwen3.5 GGUF)\n");
  }

  struct sigaction sa {};
  sa.sa_handler = OnSigint;
  sigaction(SIGINT, &sa, nullptr);

  int rc = 0;
  {
    Repl repl(o, model);
    repl.set_think(o.think);
    if (!repl.Start()) {
      rc = 1;
    } else {
      std::string line;
      while (true) {
        if (tty_in) {
          std::printf("> ");
          std::fflush(stdout);
        }
        if (!std::getline(std::cin, line)) break;
        if (!repl.Line(line)) break;
      }
    }
  }
  qwenrt_model_free(model);
  return rc;
}
