"""The forward pass llama.cpp runs for `general.architecture = llama`, in PyTorch, and its GGUF export.

Per block: RMSNorm -> attention (Q, K, V projections; RoPE in llama.cpp's "normal" mode for this
architecture, which rotates ADJACENT pairs (x0, x1), (x2, x3), ... by p * freq_base^(-2i/d) — HF
checkpoints rotate the two halves instead, which is why convert_hf_to_gguf.py permutes their Q/K rows;
weights trained here already use llama.cpp's convention, so they are written unpermuted) with grouped
KV heads (query head h reads KV head h // (n_head / n_head_kv), as ggml_mul_mat broadcasts), causal
softmax(QK^T / sqrt(head_dim)) -> output projection -> residual -> RMSNorm -> SwiGLU FFN
(down(silu(gate(x)) * up(x))) -> residual; then the final RMSNorm and the output head. Same epsilon.
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_io  # noqa: E402


class Config:
    def __init__(self, n_vocab, n_embd=256, n_layer=2, n_head=4, n_head_kv=2, n_ff=512, n_ctx=512,
                 eps=1e-5, freq_base=10000.0):
        self.n_vocab, self.n_embd, self.n_layer, self.n_head, self.n_head_kv = n_vocab, n_embd, n_layer, n_head, n_head_kv
        self.n_ff, self.n_ctx, self.eps, self.freq_base = n_ff, n_ctx, eps, freq_base

    def as_dict(self):
        return dict(self.__dict__)


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(n)), eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope(x, base):
    """x: (B, H, T, D); llama.cpp's normal-mode RoPE at positions 0..T-1."""
    t, d = x.shape[2], x.shape[3]
    inv = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = torch.arange(t, dtype=torch.float64)[:, None] * inv[None, :]
    cos, sin = ang.cos().float(), ang.sin().float()
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1).flatten(-2)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        hd = c.n_embd // c.n_head
        self.c, self.hd = c, hd
        self.attn_norm = RMSNorm(c.n_embd, c.eps)
        self.attn_q = nn.Linear(c.n_embd, c.n_head * hd, bias=False)
        self.attn_k = nn.Linear(c.n_embd, c.n_head_kv * hd, bias=False)
        self.attn_v = nn.Linear(c.n_embd, c.n_head_kv * hd, bias=False)
        self.attn_output = nn.Linear(c.n_head * hd, c.n_embd, bias=False)
        self.ffn_norm = RMSNorm(c.n_embd, c.eps)
        self.ffn_gate = nn.Linear(c.n_embd, c.n_ff, bias=False)
        self.ffn_up = nn.Linear(c.n_embd, c.n_ff, bias=False)
        self.ffn_down = nn.Linear(c.n_ff, c.n_embd, bias=False)

    def forward(self, x, mask):
        c, b, t = self.c, x.shape[0], x.shape[1]
        h = self.attn_norm(x)
        q = rope(self.attn_q(h).view(b, t, c.n_head, self.hd).transpose(1, 2), c.freq_base)
        k = rope(self.attn_k(h).view(b, t, c.n_head_kv, self.hd).transpose(1, 2), c.freq_base)
        v = self.attn_v(h).view(b, t, c.n_head_kv, self.hd).transpose(1, 2)
        g = c.n_head // c.n_head_kv
        k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(self.hd) + mask
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c.n_head * self.hd)
        x = x + self.attn_output(y)
        h = self.ffn_norm(x)
        return x + self.ffn_down(F.silu(self.ffn_gate(h)) * self.ffn_up(h))


class Llama(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.token_embd = nn.Embedding(c.n_vocab, c.n_embd)
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.n_layer))
        self.output_norm = RMSNorm(c.n_embd, c.eps)
        self.output = nn.Linear(c.n_embd, c.n_vocab, bias=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * c.n_layer) if name.endswith(("attn_output.weight", "ffn_down.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)

    def hidden(self, ids):
        """Final-normed hidden states, (B, T, n_embd), causal."""
        t = ids.shape[1]
        mask = torch.full((t, t), float("-inf")).triu(1)
        x = self.token_embd(ids)
        for blk in self.blocks:
            x = blk(x, mask)
        return self.output_norm(x)

    def forward(self, ids):
        return self.output(self.hidden(ids))

    @torch.no_grad()
    def greedy(self, ids, eos, max_new=64):
        """Greedy continuation of one prompt (list of ids): (new ids, logits at each step)."""
        ids, out, steps = list(ids), [], []
        for _ in range(max_new):
            logits = self(torch.tensor([ids]))[0, -1]
            steps.append(logits)
            nxt = int(logits.argmax())
            if nxt == eos:
                break
            out.append(nxt)
            ids.append(nxt)
        return out, steps


def export(model, vocab, eos_id, name, path, extra=()):
    """Writes `model` with `vocab` as an F32 GGUF that llama.cpp loads as `llama`; `extra`: further
    (key, value) metadata, e.g. ("tokenizer.chat_template", text)."""
    c = model.c
    meta = [
        ("general.architecture", "llama"), ("general.name", name), ("general.file_type", 0),
        ("llama.context_length", c.n_ctx), ("llama.embedding_length", c.n_embd),
        ("llama.block_count", c.n_layer), ("llama.feed_forward_length", c.n_ff),
        ("llama.attention.head_count", c.n_head), ("llama.attention.head_count_kv", c.n_head_kv),
        ("llama.rope.freq_base", float(c.freq_base)), ("llama.rope.dimension_count", c.n_embd // c.n_head),
        ("llama.attention.layer_norm_rms_epsilon", float(c.eps)), ("llama.vocab_size", c.n_vocab),
        ("tokenizer.ggml.model", "llama"), ("tokenizer.ggml.tokens", ("str", vocab.tokens)),
        ("tokenizer.ggml.scores", ("f32", vocab.scores)), ("tokenizer.ggml.token_type", ("i32", vocab.types)),
        ("tokenizer.ggml.unknown_token_id", 0), ("tokenizer.ggml.bos_token_id", 1),
        ("tokenizer.ggml.eos_token_id", eos_id), ("tokenizer.ggml.add_bos_token", False),
        ("tokenizer.ggml.add_eos_token", False), ("tokenizer.ggml.add_space_prefix", False),
        ("general.alignment", 32),
    ] + list(extra)

    def t(n, p):
        a = p.detach().to(torch.float32).contiguous()
        return (n, list(a.shape), a.numpy().tobytes())

    tensors = [t("token_embd.weight", model.token_embd.weight)]
    for i, b in enumerate(model.blocks):
        for part in ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"):
            tensors.append(t(f"blk.{i}.{part}.weight", getattr(b, part).weight))
    tensors += [t("output_norm.weight", model.output_norm.weight), t("output.weight", model.output.weight)]
    gguf_io.write(path, meta, tensors)


def load(path):
    """(Llama, Vocab) read back from a GGUF written by export(): what the server loads, as PyTorch."""
    from vocab import Vocab
    meta, tensors = gguf_io.read(path)
    g = lambda k: meta["llama." + k]  # noqa: E731
    c = Config(g("vocab_size"), g("embedding_length"), g("block_count"), g("attention.head_count"),
               g("attention.head_count_kv"), g("feed_forward_length"), g("context_length"),
               g("attention.layer_norm_rms_epsilon"), g("rope.freq_base"))
    m = Llama(c)
    names = {"token_embd.weight": m.token_embd.weight, "output_norm.weight": m.output_norm.weight,
             "output.weight": m.output.weight}
    for i, b in enumerate(m.blocks):
        for part in ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"):
            names[f"blk.{i}.{part}.weight"] = getattr(b, part).weight
    with torch.no_grad():
        for name, p in names.items():
            shape, data = tensors[name]
            p.copy_(torch.frombuffer(bytearray(data), dtype=torch.float32).view(*shape))
    m.eval()
    vocab = Vocab(meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.scores"], meta["tokenizer.ggml.token_type"])
    return m, vocab
