// Session save/load: what the sections of a session file hold (docs/session-format.md) and how a
// loaded file is checked against the model before it replaces the session's state.
#include <algorithm>
#include <cstring>

#include "base/guard_alloc.h"
#include "session/session.h"
#include "session/session_file.h"

namespace qwenrt {
namespace {

constexpr uint32_t kTagSess = SectionTag("SESS");  // shapes and counts
constexpr uint32_t kTagToks = SectionTag("TOKS");  // transcript
constexpr uint32_t kTagLogt = SectionTag("LOGT");  // last logits
constexpr uint32_t kTagKvty = SectionTag("KVTY");  // storage type of the KVCA rows (absent: f32)
constexpr uint32_t kTagKvca = SectionTag("KVCA");  // attention K/V, valid prefix
constexpr uint32_t kTagRecs = SectionTag("RECS");  // live recurrent state
constexpr uint32_t kTagCkpt = SectionTag("CKPT");  // one checkpoint
constexpr uint32_t kTagMtpk = SectionTag("MTPK");  // MTP head's K/V slot rows [0, n) (version 2)
constexpr uint32_t kTagMtph = SectionTag("MTPH");  // MTP carried rows: live, then per checkpoint
constexpr uint32_t kTagChat = SectionTag("CHAT");  // the chat layer's state (chat/chat_state.h)
constexpr uint32_t kTagSamp =
    SectionTag("SAMP");  // the same, as files written before CHAT called it

// The SESS section: the shapes the rest of the file was written with.
struct SessHeader {
  int64_t n_vocab, n_attn_layers, kv_row_floats, n_gdn_layers, conv_floats, ssm_floats;
  uint64_t turn;
  int64_t n_tokens, n_checkpoints;
};
static_assert(sizeof(SessHeader) == 72);

uint64_t StateBytes(const SessHeader& h) {
  return static_cast<uint64_t>(h.n_gdn_layers) *
         static_cast<uint64_t>(h.conv_floats + h.ssm_floats) * 4;
}

void PutState(SessionWriter& w, const RecurrentState& rec) {
  for (int64_t g = 0; g < rec.n_layers(); ++g) {
    w.PutFloats({rec.conv(g), static_cast<size_t>(rec.conv_floats())});
    w.PutFloats({rec.ssm(g), static_cast<size_t>(rec.ssm_floats())});
  }
}

// The KVCA payload (stored as `type`: layer by layer, K rows [n] then V rows [n]) into `kv`, whose
// pages for [0, n) exist. Rows of another type are widened to f32 and stored as kv's type.
Status ReadKvRows(ByteCursor& c, KvType type, int64_t n, int64_t a0, int64_t a1, KvCache& kv) {
  const size_t row_bytes = static_cast<size_t>(KvRowBytes(type, kv.row_floats()));
  const int64_t chunk = kv.page_rows(), R = kv.row_floats();
  std::vector<float> kf, vf;
  if (type != kv.type()) {
    kf.resize(static_cast<size_t>(chunk * R));
    vf.resize(kf.size());
  }
  for (int64_t a = a0; a < a1; ++a) {
    // A layer's K rows come first, then its V rows: a second cursor reads the V rows alongside.
    ByteCursor vc = c;
    std::span<const uint8_t> k, v;
    QWENRT_RETURN_IF_ERROR(vc.View(static_cast<size_t>(n) * row_bytes, &k));
    for (int64_t p0 = 0; p0 < n; p0 += chunk) {
      const int64_t m = std::min(chunk, n - p0);
      QWENRT_RETURN_IF_ERROR(c.View(static_cast<size_t>(m) * row_bytes, &k));
      QWENRT_RETURN_IF_ERROR(vc.View(static_cast<size_t>(m) * row_bytes, &v));
      if (type == kv.type()) {
        kv.WriteStoredRows(a, p0, m, k.data(), v.data());
      } else {
        for (int64_t j = 0; j < m; ++j) {
          cpu::KvDecode(type, k.data() + j * row_bytes, 0, R, kf.data() + j * R);
          cpu::KvDecode(type, v.data() + j * row_bytes, 0, R, vf.data() + j * R);
        }
        kv.WriteRows(a, p0, m, kf.data(), vf.data());
      }
    }
    c = vc;  // past this layer's V rows
  }
  kv.Commit(n);
  return c.ExpectEnd();
}

// Layers [a0, a1) of `kv`, rows [0, n) as stored: the KVCA / MTPK payload.
void PutKvRows(SessionWriter& w, const KvCache& kv, int64_t n, int64_t a0, int64_t a1) {
  const int64_t P = kv.page_rows();
  for (int64_t a = a0; a < a1; ++a) {
    for (bool value : {false, true}) {
      for (int64_t p0 = 0; p0 < n; p0 += P) {
        const std::span<const uint8_t> rows = kv.StoredRows(a, value, p0, std::min(P, n - p0));
        w.PutBytes(rows.data(), rows.size());
      }
    }
  }
}

Status GetState(ByteCursor& c, RecurrentState& rec) {
  for (int64_t g = 0; g < rec.n_layers(); ++g) {
    QWENRT_RETURN_IF_ERROR(c.Floats(rec.conv(g), static_cast<size_t>(rec.conv_floats())));
    QWENRT_RETURN_IF_ERROR(c.Floats(rec.ssm(g), static_cast<size_t>(rec.ssm_floats())));
  }
  return OkStatus();
}

}  // namespace

Status Session::WriteTo(ByteSink* sink, std::span<const uint8_t> chat_state) const {
  const int64_t n = size();
  SessHeader h{n_vocab(),
               kv_.trunk_layers(),
               kv_.row_floats(),
               rec_.n_layers(),
               rec_.conv_floats(),
               rec_.ssm_floats(),
               turn_,
               n,
               static_cast<int64_t>(checkpoints_.size())};
  // The MTP head's state is written only while it is valid (mtp_ready_), in a version-2 file.
  const bool mtp = kv_.has_mtp() && mtp_ready_;
  SessionWriter w(sink, model_->fingerprint(),
                  mtp ? kSessionFormatVersionMtp : kSessionFormatVersion);
  w.BeginSection(kTagSess, sizeof h);
  w.PutBytes(&h, sizeof h);
  w.EndSection();

  w.BeginSection(kTagToks, static_cast<uint64_t>(n) * 4);
  w.PutBytes(transcript_.data(), transcript_.size() * sizeof(int32_t));
  w.EndSection();

  std::span<const float> logits = last_logits();
  w.BeginSection(kTagLogt, logits.size_bytes());
  w.PutFloats(logits);
  w.EndSection();

  w.BeginSection(kTagKvty, 4);
  w.PutU32(static_cast<uint32_t>(kv_.type()));
  w.EndSection();

  // The rows as stored, page by page (pages shared with other sessions are written like any other).
  const uint64_t row_bytes = static_cast<uint64_t>(kv_.row_bytes());
  const int64_t A = kv_.trunk_layers();
  w.BeginSection(kTagKvca, static_cast<uint64_t>(A) * 2 * static_cast<uint64_t>(n) * row_bytes);
  PutKvRows(w, kv_, n, 0, A);
  w.EndSection();
  if (mtp) {  // the valid rows [0, n-1) of the MTP slots (row n-1 on is scratch)
    const int64_t M = kv_.n_layers() - A, nm = std::max<int64_t>(n - 1, 0);
    w.BeginSection(kTagMtpk, static_cast<uint64_t>(M) * 2 * static_cast<uint64_t>(nm) * row_bytes);
    PutKvRows(w, kv_, nm, A, kv_.n_layers());
    w.EndSection();
  }

  w.BeginSection(kTagRecs, StateBytes(h));
  PutState(w, rec_);
  w.EndSection();

  // Checkpoints from least to most recently used, so that loading them in file order rebuilds the
  // same LRU order.
  std::vector<const CheckpointStore<SharedSnapshot>::Entry*> cps;
  for (const auto& e : checkpoints_.entries()) cps.push_back(&e);
  std::sort(cps.begin(), cps.end(), [](auto* a, auto* b) { return a->last_used < b->last_used; });
  for (const auto* e : cps) {
    w.BeginSection(kTagCkpt, 16 + StateBytes(h));
    w.PutI64(e->pos);
    w.PutU64(e->turn);
    PutState(w, e->snapshot.state());
    w.EndSection();
  }

  if (mtp) {  // the carried rows of the live state and of each checkpoint, in the CKPT order
    const size_t E = static_cast<size_t>(rec_.mtp_floats());
    w.BeginSection(kTagMtph, (1 + cps.size()) * E * 4);
    w.PutFloats({rec_.mtp_hidden(), E});
    for (const auto* e : cps) w.PutFloats({e->snapshot.state().mtp_hidden(), E});
    w.EndSection();
  }

  w.BeginSection(kTagChat, chat_state.size());
  w.PutBytes(chat_state.data(), chat_state.size());
  w.EndSection();
  return w.Finish();
}

// The CUDA backend leaves the live state and the checkpoints on the device (recurrent_state.h):
// bring them into the host buffers a save reads.
Status Session::FetchStates() {
  QWENRT_RETURN_IF_ERROR(rec_.Fetch());
  return checkpoints_.ForEachSnapshot([](SharedSnapshot& s) { return s.Fetch(); });
}

Status Session::SaveToFile(const std::string& path, std::span<const uint8_t> chat_state) {
  QWENRT_RETURN_IF_ERROR(FetchStates());
  return WriteFileAtomic(path, [&](ByteSink* sink) { return WriteTo(sink, chat_state); });
}

StatusOr<std::vector<uint8_t>> Session::SaveToMemory(std::span<const uint8_t> chat_state) {
  QWENRT_RETURN_IF_ERROR(FetchStates());
  std::vector<uint8_t> out;
  VectorSink sink(&out);
  QWENRT_RETURN_IF_ERROR(WriteTo(&sink, chat_state));
  return out;
}

Status Session::LoadFromFile(const std::string& path, std::vector<uint8_t>* chat_state,
                             const ChatStateCheck& check) {
  // Read, not memory-mapped: a map would turn a file truncated by someone else during the load into
  // SIGBUS; a read turns it into an IoError (or a CRC failure). The cost is one transient copy.
  QWENRT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadWholeFile(path));
  return LoadFromMemory(bytes, chat_state, check);
}

Status Session::LoadFromMemory(std::span<const uint8_t> bytes, std::vector<uint8_t>* chat_state,
                               const ChatStateCheck& check) {
  QWENRT_ASSIGN_OR_RETURN(ParsedSessionFile file, ParseSessionFile(bytes, model_->fingerprint()));
  const ModelConfig& cfg = model_->config();
  if (file.sections.empty() || file.sections[0].tag != kTagSess)
    return BadFormat("session file: the first section must be SESS");

  // Shapes: the fingerprint matched, so a mismatch here means a file written inconsistently.
  SessHeader h{};
  ByteCursor hc(file.sections[0].payload, "SESS section");
  QWENRT_RETURN_IF_ERROR(hc.Bytes(&h, sizeof h));
  QWENRT_RETURN_IF_ERROR(hc.ExpectEnd());
  if (h.n_vocab != n_vocab() || h.n_attn_layers != kv_.trunk_layers() ||
      h.kv_row_floats != kv_.row_floats() || h.n_gdn_layers != rec_.n_layers() ||
      h.conv_floats != rec_.conv_floats() || h.ssm_floats != rec_.ssm_floats())
    return BadFormat("session file: state shapes do not match the model");
  if (h.n_tokens < 0 || h.n_checkpoints < 0)
    return BadFormat("session file: negative token or checkpoint count");
  if (h.n_tokens > max_context_)
    return ContextFull("session file holds {} tokens, more than this session's context of {}",
                       h.n_tokens, max_context_);
  const size_t n = static_cast<size_t>(h.n_tokens);
  const uint64_t state_bytes = StateBytes(h);

  // The storage type of the saved rows: KVTY, if present, must come before KVCA; files written
  // before it existed hold f32 rows.
  KvType file_type = KvType::kF32;
  for (size_t i = 1; i < file.sections.size(); ++i) {
    const SessionSection& s = file.sections[i];
    if (s.tag == kTagKvca) break;
    if (s.tag != kTagKvty) continue;
    uint32_t t = 0;
    ByteCursor c(s.payload, "KVTY section");
    QWENRT_RETURN_IF_ERROR(c.U32(&t));
    QWENRT_RETURN_IF_ERROR(c.ExpectEnd());
    if (t >= kKvTypeCount)
      return Unsupported("session file: KV storage type {} is unknown to this version of qwenrt",
                         t);
    file_type = static_cast<KvType>(t);
    if (!KvTypeFits(file_type, cfg.head_dim))
      return BadFormat("session file: KV storage type {} cannot hold this model's rows",
                       KvTypeName(file_type));
    break;
  }
  const uint64_t file_row_bytes = static_cast<uint64_t>(KvRowBytes(file_type, h.kv_row_floats));

  // Pass 1: the section table against the SESS shapes, before anything big is allocated.
  int seen_toks = 0, seen_logt = 0, seen_kvty = 0, seen_kvca = 0, seen_recs = 0, seen_samp = 0,
      seen_mtpk = 0, seen_mtph = 0;
  const int64_t mtp_slots = kv_.n_layers() - kv_.trunk_layers();
  const uint64_t mtp_floats = static_cast<uint64_t>(rec_.mtp_floats());
  int64_t seen_ckpt = 0;
  for (size_t i = 1; i < file.sections.size(); ++i) {
    const SessionSection& s = file.sections[i];
    const uint64_t len = s.payload.size();
    bool ok = false;
    if (s.tag == kTagToks)
      ok = !seen_toks++ && len == n * 4;
    else if (s.tag == kTagLogt)
      ok = !seen_logt++ && (len == 0 || (n > 0 && len == static_cast<uint64_t>(h.n_vocab) * 4));
    else if (s.tag == kTagKvty)
      ok = !seen_kvty++ && !seen_kvca && len == 4;
    else if (s.tag == kTagKvca)
      ok = !seen_kvca++ && len == static_cast<uint64_t>(h.n_attn_layers) * 2 * n * file_row_bytes;
    else if (s.tag == kTagRecs)
      ok = !seen_recs++ && len == state_bytes;
    else if (s.tag == kTagCkpt)
      ok = ++seen_ckpt <= h.n_checkpoints && len == 16 + state_bytes;
    else if (s.tag == kTagChat || s.tag == kTagSamp)
      ok = !seen_samp++;
    else if ((s.tag == kTagMtpk || s.tag == kTagMtph) && file.version < kSessionFormatVersionMtp)
      ok = false;
    else if (s.tag == kTagMtpk)  // a session without the MTP head skips it
      ok = !seen_mtpk++ && (mtp_slots == 0 || len == static_cast<uint64_t>(mtp_slots) * 2 *
                                                         (n > 0 ? n - 1 : 0) * file_row_bytes);
    else if (s.tag == kTagMtph)
      ok = !seen_mtph++ && (mtp_floats == 0 ||
                            len == (1 + static_cast<uint64_t>(h.n_checkpoints)) * mtp_floats * 4);
    else
      return BadFormat("session file: unknown section {}", SectionTagName(s.tag));
    if (!ok)
      return BadFormat("session file: {} section repeated or of the wrong size ({} bytes)",
                       SectionTagName(s.tag), len);
  }
  if (!seen_toks || !seen_logt || !seen_kvca || !seen_recs || !seen_samp ||
      seen_ckpt != h.n_checkpoints || seen_mtpk != seen_mtph)
    return BadFormat("session file: missing sections");
  // The MTP head's state comes back only when both the file and this session have it; otherwise
  // the session loads without it and does not draft until it is rebuilt (mtp_ready(), docs/mtp.md).
  const bool mtp = mtp_slots > 0 && seen_mtpk > 0;

  // Pass 2: decode into fresh objects.
  std::vector<int32_t> transcript;
  std::vector<float> logits;
  bool has_logits = false;
  std::vector<uint8_t> blob;
  const auto load = [&]() -> Status {
    // Loaded into this session's storage type and page size (converted when the file's differs);
    // the loaded cache shares nothing.
    KvCacheOptions kvo;
    kvo.type = kv_.type();
    kvo.page_rows = kv_.page_rows();
    kvo.mtp = kv_.has_mtp();
    QWENRT_ASSIGN_OR_RETURN(KvCache kv, KvCache::Create(cfg, max_context_, h.n_tokens, kvo));
    QWENRT_ASSIGN_OR_RETURN(RecurrentState rec, RecurrentState::Create(cfg, rec_.has_mtp()));
    // MTPH (after the CKPT sections in the file) row r: the live state's (r = 0) or the r-th
    // checkpoint's carried row; set before each state is stored.
    std::span<const uint8_t> mtph;
    for (const SessionSection& s : file.sections)
      if (s.tag == kTagMtph && mtp) mtph = s.payload;
    const auto put_mtp_row = [&](int64_t r, RecurrentState& st) {
      if (mtph.empty()) return;
      std::memcpy(st.mtp_hidden(), mtph.data() + r * st.mtp_floats() * 4,
                  static_cast<size_t>(st.mtp_floats()) * 4);
    };
    int64_t n_ckpt = 0;
    CheckpointStore<SharedSnapshot> cps(checkpoints_.budget());
    for (size_t i = 1; i < file.sections.size(); ++i) {
      const SessionSection& s = file.sections[i];
      ByteCursor c(s.payload, SectionTagName(s.tag) + " section");
      if (s.tag == kTagToks) {
        transcript.resize(n);
        QWENRT_RETURN_IF_ERROR(c.Bytes(transcript.data(), n * 4));
        for (int32_t t : transcript)
          if (t < 0 || t >= h.n_vocab)
            return BadFormat("session file: token {} outside the vocabulary", t);
      } else if (s.tag == kTagLogt) {
        has_logits = !s.payload.empty();
        logits.assign(static_cast<size_t>(h.n_vocab), 0.0f);
        if (has_logits) QWENRT_RETURN_IF_ERROR(c.Floats(logits.data(), logits.size()));
      } else if (s.tag == kTagKvca) {
        QWENRT_RETURN_IF_ERROR(ReadKvRows(c, file_type, h.n_tokens, 0, kv.trunk_layers(), kv));
      } else if (s.tag == kTagMtpk && mtp) {
        // Rows [0, n-1): its Commit cannot shrink what KVCA committed (the cache's size is n).
        QWENRT_RETURN_IF_ERROR(ReadKvRows(c, file_type, std::max<int64_t>(h.n_tokens - 1, 0),
                                          kv.trunk_layers(), kv.n_layers(), kv));
      } else if (s.tag == kTagRecs) {
        QWENRT_RETURN_IF_ERROR(GetState(c, rec));
        put_mtp_row(0, rec);
      } else if (s.tag == kTagCkpt) {
        int64_t pos = 0;
        uint64_t turn = 0;
        QWENRT_RETURN_IF_ERROR(c.I64(&pos));
        QWENRT_RETURN_IF_ERROR(c.U64(&turn));
        if (pos < 1 || pos > h.n_tokens)
          return BadFormat("session file: checkpoint at {} outside [1, {}]", pos, n);
        for (const auto& e : cps.entries())
          if (e.pos == pos) return BadFormat("session file: two checkpoints at {}", pos);
        QWENRT_ASSIGN_OR_RETURN(RecurrentState snap, RecurrentState::Create(cfg, rec_.has_mtp()));
        QWENRT_RETURN_IF_ERROR(GetState(c, snap));
        put_mtp_row(++n_ckpt, snap);
        QWENRT_ASSIGN_OR_RETURN(SharedSnapshot shared, SharedSnapshot::Make(std::move(snap)));
        cps.Put(pos, turn, std::move(shared));
      } else if (s.tag == kTagChat || s.tag == kTagSamp) {
        blob.assign(s.payload.begin(), s.payload.end());
      }
    }

    if (check) QWENRT_RETURN_IF_ERROR(check(blob, h.n_tokens));

    // Everything checked: replace the session's state (nothing below can fail).
    kv_ = std::move(kv);
    rec_ = std::move(rec);
    mtp_ready_ = mtp || h.n_tokens == 0;
    transcript_ = std::move(transcript);
    checkpoints_ = std::move(cps);
    last_logits_ = std::move(logits);
    has_logits_ = has_logits;
    logits_rows_ = 0;
    turn_ = h.turn;
    if (chat_state) *chat_state = std::move(blob);
    return OkStatus();
  };
  return GuardAlloc(load, "session file: not enough memory to load {} tokens", n);
}

}  // namespace qwenrt
