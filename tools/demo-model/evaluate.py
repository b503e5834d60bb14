"""Evaluation through transformers: greedy per-family accuracy on held-out prompts, MTP
first-draft acceptance and perplexity on held-out conversations; token/logit files for checking a
GGUF runtime (qwenrt-cli eval) against transformers."""
import json
import math
import os
import re
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import data
from train import loss_weights

TOOL_RE = re.compile(r"<tool_call>\s*<function=([^>\n]+)>\s*(.*?)</function>\s*</tool_call>", re.S)
PARAM_RE = re.compile(r"<parameter=([^>\n]+)>\n(.*?)\n</parameter>", re.S)


def strip_think(text):
    return text.split("</think>")[-1].strip()


def parse_tool_calls(text):
    return [(name.strip(), {k.strip(): v for k, v in PARAM_RE.findall(body)})
            for name, body in TOOL_RE.findall(text)]


def check(fam, reply, exp):
    ans = strip_think(reply)
    if fam in ("arith", "followup"):
        nums = re.findall(r"-?\d+", ans)
        return bool(nums) and int(nums[-1]) == exp["number"]
    if fam == "capital":
        return exp["capital"] in ans
    if fam == "reverse":
        return exp["text"] in ans
    if fam == "json":
        try:
            return json.loads(ans) == exp["json"]
        except ValueError:
            return False
    if fam == "json_valid":
        try:
            json.loads(ans)
            return True
        except ValueError:
            return False
    if fam == "tool_call":
        calls = parse_tool_calls(ans)
        want = (exp["call"]["name"], {k: str(v) for k, v in exp["call"]["arguments"].items()})
        return len(calls) == 1 and calls[0] == want
    if fam == "tool_answer":
        return ans == exp["text"]
    raise ValueError(fam)


@torch.no_grad()
def greedy(trunk, ids, im_end, max_new=200):
    out = trunk.generate(torch.tensor([ids]), max_new_tokens=max_new, do_sample=False,
                         eos_token_id=im_end, pad_token_id=im_end)
    return out[0, len(ids):].tolist()


def accuracy(trunk, tok, tmpl, prompts, im_end, log=None, thinking=False):
    res = {}
    for fam, msgs, tools, exp in prompts:
        text = data.render(tmpl, msgs, tools, add_generation_prompt=True,
                           enable_thinking=None if thinking else False)
        ids = tok.encode(text, add_special_tokens=False)
        reply = tok.decode(greedy(trunk, ids, im_end), skip_special_tokens=False)
        reply = reply.replace("<|im_end|>", "")
        ok = check(fam, reply, exp)
        res.setdefault(fam, []).append(ok)
        if fam == "json":
            res.setdefault("json_valid", []).append(check("json_valid", reply, exp))
        if log is not None:
            log.append({"family": fam, "prompt": msgs[-1]["content"], "reply": reply, "ok": ok})
    return {k: sum(v) / len(v) for k, v in res.items()}, {k: len(v) for k, v in res.items()}


@torch.no_grad()
def teacher_forced(trunk, mtp, seqs, weights):
    """Perplexity (all tokens, assistant tokens) and MTP first-draft acceptance: at assistant
    position i+2, the draft argmax MTP(h_i, x_{i+1}) against the trunk's own greedy choice at
    i+1 (what a speculative decoder accepts), and against the reference token."""
    nll_all = n_all = nll_a = n_a = 0.0
    acc = agree_ref = n_d = 0
    for s, w in zip(seqs, weights):
        x = torch.tensor([s])
        h = trunk.model(input_ids=x).last_hidden_state
        logits = trunk.lm_head(h)[0]
        lp = F.log_softmax(logits[:-1].double(), -1)
        nll = -lp.gather(1, x[0, 1:, None])[:, 0]
        wt = torch.tensor(w[1:], dtype=torch.float64)
        nll_all += float(nll.sum()); n_all += len(nll)
        m = wt >= 1.0
        nll_a += float(nll[m].sum()); n_a += int(m.sum())
        ml = mtp(trunk, h[:, :-1], x[:, 1:])[0]      # row i predicts x_{i+2}
        draft = ml[:-1].argmax(-1)                    # i = 0..T-3
        trunk_next = logits[1:-1].argmax(-1)          # trunk's choice for x_{i+2}
        ref = x[0, 2:]
        mask = torch.tensor(w[2:]) >= 1.0
        acc += int(((draft == trunk_next) & mask).sum())
        agree_ref += int(((draft == ref) & mask).sum())
        n_d += int(mask.sum())
    return {"ppl_all": math.exp(nll_all / n_all), "ppl_assistant": math.exp(nll_a / n_a),
            "tokens_all": int(n_all), "tokens_assistant": int(n_a),
            "mtp_accept": acc / n_d, "mtp_ref_match": agree_ref / n_d, "mtp_positions": n_d}


def l2norm_llama(x, dim=-1, eps=1e-6):
    """The GDN q/k L2 norm as llama.cpp (and qwenrt, docs/spec/qwen35-architecture.md section 15)
    computes it: x / max(||x||, eps). transformers computes x * rsqrt(sum(x^2) + eps); the two
    differ where a q or k head vector is short (first tokens of a small model)."""
    return x / torch.sqrt((x * x).sum(dim=dim, keepdim=True)).clamp_min(eps)


@torch.no_grad()
def dump_logits(trunk, ids, tok_path, logits_path):
    """transformers' logits for `ids` (as is), and beside them (LOGITS.llama-l2.f32) the same
    model with the GGUF runtimes' L2 norm, which separates a runtime's own error from that
    convention."""
    import transformers.models.qwen3_5.modeling_qwen3_5 as hf_qwen
    with open(tok_path, "w") as f:
        f.write(" ".join(map(str, ids)) + "\n")
    logits = trunk(input_ids=torch.tensor([ids])).logits[0].float().numpy()
    logits.astype("<f4").tofile(logits_path)
    hf_l2 = hf_qwen.l2norm
    hf_qwen.l2norm = l2norm_llama
    try:
        alt = trunk(input_ids=torch.tensor([ids])).logits[0].float().numpy()
    finally:
        hf_qwen.l2norm = hf_l2
    alt.astype("<f4").tofile(logits_path[:-len(".f32")] + ".llama-l2.f32")
    return logits.shape


def compare(a_path, b_path, n_vocab, tokens=None):
    a = np.fromfile(a_path, dtype="<f4").reshape(-1, n_vocab)
    b = np.fromfile(b_path, dtype="<f4").reshape(-1, n_vocab)
    d = np.abs(a - b)
    out = {"rows": a.shape[0], "max_abs": float(d.max()), "mean_abs": float(d.mean()),
           "max_abs_logit": float(np.abs(a).max()),
           "top1_agree": float((a.argmax(1) == b.argmax(1)).mean())}
    if tokens is not None:
        def ppl(l):
            l = l.astype(np.float64)
            lse = np.log(np.exp(l - l.max(1, keepdims=True)).sum(1)) + l.max(1)
            nll = lse[:-1] - l[np.arange(len(tokens) - 1), tokens[1:]]
            return float(np.exp(nll.mean()))
        out["ppl_a"], out["ppl_b"] = ppl(a), ppl(b)
        out["ppl_rel_diff"] = abs(out["ppl_a"] - out["ppl_b"]) / out["ppl_b"]
    return out


def write_prompts(prompts, path):
    """The held-out prompts and what each answer must contain, for a runtime's own evaluation
    (tests/demo_eval_test.cpp reads this file through qwenrt's chat layer)."""
    with open(path, "w") as f:
        for fam, msgs, tools, exp in prompts:
            f.write(json.dumps({"family": fam, "messages": msgs, "tools": tools, "expected": exp},
                               sort_keys=True) + "\n")


def run(model_dir, tmpl, seed, n_per_family, n_convs, out_json, log_path=None, thinking=False):
    from transformers import AutoTokenizer
    from train import load
    torch.set_num_threads(max(1, torch.get_num_threads()))
    tok = AutoTokenizer.from_pretrained(model_dir)
    trunk, mtp = load(model_dir)
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    im_start = tok.convert_tokens_to_ids("<|im_start|>")
    assistant_id = tok.encode("assistant", add_special_tokens=False)[0]
    t0 = time.time()
    log = []
    prompts = data.eval_prompts(seed + 7, n_per_family)
    write_prompts(prompts, os.path.join(os.path.dirname(out_json), "eval-prompts.jsonl"))
    acc, counts = accuracy(trunk, tok, tmpl, prompts, im_end, log, thinking)
    # the other mode too: Qwen3.5 thinks by default; hosts may turn it off (enable_thinking=false)
    acc_other, _ = accuracy(trunk, tok, tmpl, prompts, im_end, None, not thinking)
    t_acc = time.time() - t0
    convs = data.make_split(seed + 11, "test", n_convs)
    seqs = [tok.encode(data.render(tmpl, m, t), add_special_tokens=False) for _, m, t, _ in convs]
    weights = [loss_weights(s, im_start, im_end, assistant_id, 0.0) for s in seqs]
    tf = teacher_forced(trunk, mtp, seqs, weights)
    res = {"thinking": thinking, "accuracy": acc, "counts": counts,
           "accuracy_thinking_" + ("off" if thinking else "on"): acc_other, **tf,
           "seconds_accuracy": t_acc,
           "seconds_total": time.time() - t0}
    with open(out_json, "w") as f:
        json.dump(res, f, indent=2)
    if log_path:
        with open(log_path, "w") as f:
            for r in log:
                f.write(json.dumps(r) + "\n")
    print(json.dumps(res, indent=2), file=sys.stderr)
    return res, seqs
