#!/usr/bin/env python3
"""Two-turn chat over the qwenrt C ABI with ctypes. Exits non-zero unless turn 2 reused turn 1.
usage: two_turn_chat.py MODEL.gguf [--lib path/to/libqwenrt.so] [--max-tokens N]"""
import argparse
import ctypes
import sys

import qwenrt_ctypes as q


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--lib", default=q.default_library_path())
    ap.add_argument("--max-tokens", type=int, default=16)
    args = ap.parse_args()

    qw = q.Library(args.lib)
    lib = qw.lib
    print("qwenrt", lib.qwenrt_version().decode(), "ABI", lib.qwenrt_abi_version())
    model, session = ctypes.c_void_p(), ctypes.c_void_p()
    qw.check(lib.qwenrt_model_load(args.model.encode(), None, ctypes.byref(model)), "model_load")
    qw.check(lib.qwenrt_session_create(model, None, ctypes.byref(session)), "session_create")

    pieces = []

    def on_piece(kind, text, length, user_data):
        if kind == q.PIECE_CONTENT:
            pieces.append(ctypes.string_at(text, length).decode("utf-8"))
        return True

    callback = q.StreamCallback(on_piece)  # keep a reference while the library may call it
    gp = qw.init(q.GenerateParams)
    gp.max_tokens = args.max_tokens
    gp.callback = callback

    def turn(messages):
        arr = (q.Message * len(messages))(*messages)
        chat = qw.init(q.Chat)
        chat.messages = arr
        chat.n_messages = len(messages)
        report = q.Report()
        report.struct_size = ctypes.sizeof(q.Report)
        del pieces[:]
        qw.check(lib.qwenrt_session_chat(session, ctypes.byref(chat), None, ctypes.byref(gp),
                                         ctypes.byref(report)), "session_chat")
        needed = ctypes.c_size_t()
        buf = ctypes.create_string_buffer(1 << 16)
        qw.check(lib.qwenrt_session_get_reply(session, q.PIECE_CONTENT, buf, len(buf),
                                              ctypes.byref(needed)), "get_reply")
        reply = buf.value.decode("utf-8")
        assert reply == "".join(pieces), (reply, pieces)  # the reply is what was streamed
        return reply, report

    history = [q.message(q.ROLE_USER, "What is the capital of Kenya?")]
    reply1, r1 = turn(history)
    print("turn 1: %r (prompt %d, prefilled %d)" % (reply1, r1.prompt_tokens, r1.prefilled_tokens))
    history += [q.message(q.ROLE_ASSISTANT, reply1), q.message(q.ROLE_USER, "And of Ghana?")]
    reply2, r2 = turn(history)
    print("turn 2: %r (prompt %d, reused %d, prefilled %d, ttft %.2f ms)" %
          (reply2, r2.prompt_tokens, r2.reused_tokens, r2.prefilled_tokens, r2.ttft_ms))

    lib.qwenrt_session_free(session)
    lib.qwenrt_model_free(model)
    if not (r2.reused_tokens > 0 and r2.reused_tokens + r2.prefilled_tokens == r2.prompt_tokens
            and r2.prefilled_tokens < r2.prompt_tokens):
        print("FAIL: turn 2 did not reuse turn 1", file=sys.stderr)
        return 1
    print("OK: turn 2 reused %d tokens of turn 1" % r2.reused_tokens)
    return 0


if __name__ == "__main__":
    sys.exit(main())
