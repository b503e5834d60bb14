"""Training of the demo model (trunk + one MTP layer, jointly), fixed seeds, progress bar."""
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

from model import MTP, init_mtp_from_trunk, text_config


def init_trunk(model, seed):
    """GDN decay parameters as in trained models (Mamba-2 style): transformers' default
    (dt_bias 1, A up to 16) makes many heads forget everything at every token."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("A_log"):
                p.copy_(torch.log(1.0 + 15.0 * torch.rand(p.shape, generator=g)))
            elif name.endswith("dt_bias"):
                dt = torch.exp(math.log(1e-3) + (math.log(1e-1) - math.log(1e-3)) *
                               torch.rand(p.shape, generator=g))
                p.copy_(dt + torch.log(-torch.expm1(-dt)))


def loss_weights(ids, im_start, im_end, assistant_id, other_weight):
    """1 on assistant tokens (after '<|im_start|>assistant\\n' up to and including <|im_end|>),
    other_weight elsewhere; index i weights the prediction of token i."""
    w = [other_weight] * len(ids)
    inside = False
    for i, t in enumerate(ids):
        if inside:
            w[i] = 1.0
            if t == im_end:
                inside = False
        elif t == assistant_id and i >= 1 and ids[i - 1] == im_start:
            inside = True
            w[i] = other_weight  # the '\n' after 'assistant' is next; weight it too
    return w


def make_batches(lengths, tokens_per_batch, rng):
    order = list(range(len(lengths)))
    rng.shuffle(order)
    batches = []
    for g in range(0, len(order), 256):
        grp = sorted(order[g:g + 256], key=lambda i: lengths[i])
        cur = []
        for i in grp:
            if cur and (len(cur) + 1) * max(lengths[j] for j in cur + [i]) > tokens_per_batch:
                batches.append(cur)
                cur = []
            cur.append(i)
        if cur:
            batches.append(cur)
    rng.shuffle(batches)
    return batches


def collate(seqs, weights, pad_id):
    T = max(len(s) for s in seqs)
    x = torch.full((len(seqs), T), pad_id, dtype=torch.long)
    w = torch.zeros((len(seqs), T))
    for b, (s, ww) in enumerate(zip(seqs, weights)):
        x[b, :len(s)] = torch.tensor(s)
        w[b, :len(s)] = torch.tensor(ww)
    return x, w


def forward_losses(trunk, mtp, x, w):
    """(trunk loss, mtp loss, n weighted tokens) on a right-padded batch."""
    out = trunk.model(input_ids=x)
    h = out.last_hidden_state                       # after the final norm
    logits = trunk.lm_head(h)                       # [B, T, V]
    V = logits.shape[-1]
    tw = w[:, 1:]
    lt = F.cross_entropy(logits[:, :-1].reshape(-1, V), x[:, 1:].reshape(-1), reduction="none")
    lt = (lt * tw.reshape(-1)).sum() / tw.sum()
    ml = mtp(trunk, h[:, :-1], x[:, 1:])            # row i predicts x_{i+2}
    mw = w[:, 2:]
    lm = F.cross_entropy(ml[:, :-1].reshape(-1, V), x[:, 2:].reshape(-1), reduction="none")
    lm = (lm * mw.reshape(-1)).sum() / mw.sum()
    return lt, lm


def train(a, tok_info, train_ids, out_dir):
    import transformers
    from tqdm import tqdm
    torch.manual_seed(a.seed)
    rng = random.Random(a.seed)
    ids = tok_info["ids"]
    text, extra = text_config(tok_info["vocab_size"], a.hidden, a.layers, a.ff,
                              eos_id=ids["<|im_end|>"], pad_id=ids["<|endoftext|>"])
    cfg = transformers.Qwen3_5TextConfig(**text)
    cfg._attn_implementation = "sdpa"
    trunk = transformers.Qwen3_5ForCausalLM(cfg).float()
    init_trunk(trunk, a.seed)
    mtp = MTP(cfg).float()
    init_mtp_from_trunk(mtp, trunk)
    n_trunk = sum(p.numel() for p in trunk.parameters())
    n_mtp = sum(p.numel() for p in mtp.parameters())
    print(f"model: {n_trunk / 1e6:.2f}M trunk parameters (tied embeddings), {n_mtp / 1e6:.2f}M MTP",
          file=sys.stderr)
    im_start, im_end, pad = ids["<|im_start|>"], ids["<|im_end|>"], ids["<|endoftext|>"]
    assistant_id = tok_info["assistant_id"]
    weights = [loss_weights(s, im_start, im_end, assistant_id, a.other_weight) for s in train_ids]
    lengths = [len(s) for s in train_ids]
    params = list(trunk.parameters()) + list(mtp.parameters())
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    sched = lambda s: min(1.0, (s + 1) / a.warmup) * (
        0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, s / max(1, a.steps)))))
    batches = []
    trunk.train()
    mtp.train()
    t0, tokens = time.time(), 0
    bar = tqdm(range(a.steps), desc="train", file=sys.stderr, mininterval=2.0)
    ema_t = ema_m = None
    for step in bar:
        if a.max_minutes and time.time() - t0 > 60 * a.max_minutes:
            print(f"stopped at step {step}: the --max-minutes limit", file=sys.stderr)
            a.steps_done = step
            break
        if not batches:
            batches = make_batches(lengths, a.batch_tokens, rng)
        b = batches.pop()
        x, w = collate([train_ids[i] for i in b], [weights[i] for i in b], pad)
        for gr in opt.param_groups:
            gr["lr"] = a.lr * sched(step)
        lt, lm = forward_losses(trunk, mtp, x, w)
        loss = lt + a.mtp_weight * lm
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        tokens += int((w > 0).sum())
        ema_t = lt.item() if ema_t is None else 0.95 * ema_t + 0.05 * lt.item()
        ema_m = lm.item() if ema_m is None else 0.95 * ema_m + 0.05 * lm.item()
        bar.set_postfix(loss=f"{ema_t:.3f}", mtp=f"{ema_m:.3f}",
                        tok_s=f"{tokens / (time.time() - t0):.0f}", refresh=False)
    bar.close()
    dt = time.time() - t0
    print(f"trained {getattr(a, 'steps_done', a.steps)} steps, {tokens} tokens in {dt:.0f} s ({tokens / dt:.0f} tokens/s); "
          f"final loss {ema_t:.4f}, MTP loss {ema_m:.4f}", file=sys.stderr)
    save(trunk, mtp, extra, ids, out_dir)
    return {"steps": getattr(a, "steps_done", a.steps), "steps_planned": a.steps, "tokens": tokens, "seconds": dt, "loss": ema_t, "mtp_loss": ema_m,
            "params_trunk": n_trunk, "params_mtp": n_mtp}


def save(trunk, mtp, extra, ids, out_dir):
    from safetensors.torch import load_file, save_file
    trunk.eval()
    trunk.save_pretrained(out_dir, safe_serialization=True)
    cpath = os.path.join(out_dir, "config.json")
    with open(cpath) as f:
        conf = json.load(f)
    conf.update(extra)
    conf["torch_dtype"] = conf.pop("dtype", "float32")
    with open(cpath, "w") as f:
        json.dump(conf, f, indent=2, sort_keys=True)
    with open(os.path.join(out_dir, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": None, "eos_token_id": [ids["<|im_end|>"], ids["<|endoftext|>"]],
                   "pad_token_id": ids["<|endoftext|>"], "do_sample": False}, f, indent=2)
    st = os.path.join(out_dir, "model.safetensors")
    tensors = load_file(st)
    tensors.update({"mtp." + k: v.detach().contiguous().float()
                    for k, v in mtp.state_dict().items()})
    save_file(tensors, st, metadata={"format": "pt"})


def load(out_dir):
    """(trunk, mtp) from a directory written by save()."""
    import transformers
    from safetensors.torch import load_file
    trunk = transformers.Qwen3_5ForCausalLM.from_pretrained(out_dir, dtype=torch.float32,
                                                             attn_implementation="sdpa").eval()
    mtp = MTP(trunk.config).float().eval()
    t = load_file(os.path.join(out_dir, "model.safetensors"))
    mtp.load_state_dict({k[4:]: v for k, v in t.items() if k.startswith("mtp.")})
    return trunk, mtp
