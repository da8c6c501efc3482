#!/usr/bin/env python3
"""PyTorch CPU reference for pax-ocl's training-step benchmark (bench/bench_train_step.cpp).

Times the same GPT training step on the CPU with PyTorch (float32, no autocast) so pax-ocl's numbers
can be put beside a well-known implementation. For benchmarking only: pax-ocl never needs PyTorch to
build or test. Install (see bench/requirements-torch.txt):

    python3 -m venv /tmp/torch-venv && /tmp/torch-venv/bin/pip install -r bench/requirements-torch.txt
    /tmp/torch-venv/bin/python bench/torch_reference.py --config all --steps 3 --warmup 1

Model, as pax-ocl's GptModel: GPT-2 style, wte (Vp, C) with Vp = VOCAB rounded up to a multiple of 128,
learned wpe (MAX_SEQ_LEN, C); pre-LayerNorm blocks (eps 1e-5) with fused qkv Linear(C, 3C) and causal
softmax attention scaled 1/sqrt(hs), MLP C -> 4C -> C with tanh GELU; final LayerNorm; tied LM head
logits = y @ wte.T over Vp, the padding columns sliced off before the cross-entropy (mean). Init:
Gaussian std 0.023 for every matrix, LayerNorm scales 1, biases 0. Step: zero_grad, forward, backward,
clip_grad_norm_(1.0), AdamW(lr 1e-4, betas (0.9, 0.95), eps 1e-8, weight decay 0.1 on 2-D params only).

LLaMA configs (LC, LD: C's and D's sizes), as pax-ocl's LlamaModel: embed (Vp, C), pre-RMSNorm blocks
(eps 1e-5, scale 1) with a fused qkv Linear(C, (H + 2 Hkv) hs) without bias, rotary positions (base
10000) on q and k, causal attention over grouped key/value heads, proj Linear(H hs, C); a SwiGLU MLP
(gate_up Linear(C, 2F), silu(gate) * up, down Linear(F, C), F = 8C/3 rounded up to 16); final RMSNorm;
an untied head Linear(C, Vp); no biases; Gaussian std 0.02; FLOPs/token as LlamaConfig::flops_per_token.

--compile wraps the model in torch.compile (Inductor, default mode): forward and backward compiled,
the optimizer eager; warm-up steps absorb the compilation, and "first step" reports it.

Output, one line per config (the shape of bench_train_step's; "torch.compile" instead of "torch"):
    torch  A  L2 D128 H4 T128 V4096 B8  params X.XXM  step Y ms  Z tok/s  W GFLOP/s  first step F ms  loss L
GFLOP/s uses FLOPs/token = 6 * matmul params (per layer C*3C + C*C + 2*C*4C, plus Vp*C for the LM
head) + 12*L*T*C, as GptConfig::flops_per_token.
"""

import argparse
import json
import math
import os
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # one clear line, no traceback
    sys.exit(f"torch_reference.py: PyTorch is not importable ({e}); install it with: python3 -m venv "
             f"/tmp/torch-venv && /tmp/torch-venv/bin/pip install -r bench/requirements-torch.txt, "
             f"then run /tmp/torch-venv/bin/python bench/torch_reference.py")

# name: (layers, dims, heads, seq_len, vocab, batch); A, B, C as bench_train_step.cpp, D = GPT-2 124M.
CONFIGS = {
    "A": (2, 128, 4, 128, 4096, 8),
    "B": (4, 256, 4, 256, 8192, 8),
    "C": (6, 384, 6, 256, 16384, 8),
    "D": (12, 768, 12, 256, 50304, 4),
    # Long sequences at 2048 tokens a step, as bench_train_step.cpp.
    "T256": (4, 256, 4, 256, 8192, 8),
    "T512": (4, 256, 4, 512, 8192, 4),
    "T1024": (4, 256, 4, 1024, 8192, 2),
    "T2048": (4, 256, 4, 2048, 8192, 1),
}
# name: (layers, dims, heads, kv_heads, seq_len, vocab, batch): C's and D's sizes as LLaMAs, as
# bench_train_step.cpp's LC and LD.
LLAMA_CONFIGS = {
    "LC": (6, 384, 6, 2, 256, 16384, 8),
    "LD": (12, 768, 12, 4, 256, 50304, 4),
}
# GPT-2 124M as `pax-ocl train --fdl_config=Pile126M` runs it (scripts/gpu_check.sh); not in "all".
PILE_CONFIGS = {
    "P1024B8": (12, 768, 12, 1024, 50304, 8),
    "P1024B16": (12, 768, 12, 1024, 50304, 16),
    "P2048B4": (12, 768, 12, 2048, 50304, 4),
}
INIT_STD = 0.023
LN_EPS = 1e-5


def padded_vocab(v):
    return (v + 127) // 128 * 128


def flops_per_token(L, C, T, Vp):
    matmul_params = L * (C * 3 * C + C * C + 2 * C * 4 * C) + Vp * C
    return 6.0 * matmul_params + 12.0 * L * T * C


class Block(nn.Module):
    def __init__(self, C, n_head, T, sdpa):
        super().__init__()
        self.n_head, self.hs, self.sdpa = n_head, C // n_head, sdpa
        self.ln1 = nn.LayerNorm(C, eps=LN_EPS)
        self.qkv = nn.Linear(C, 3 * C, bias=True)
        self.proj = nn.Linear(C, C, bias=True)
        self.ln2 = nn.LayerNorm(C, eps=LN_EPS)
        self.fc = nn.Linear(C, 4 * C, bias=True)
        self.fcproj = nn.Linear(4 * C, C, bias=True)
        if not sdpa:
            self.register_buffer("mask", torch.ones(T, T, dtype=torch.bool).triu(1), persistent=False)

    def attn(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, self.hs).transpose(1, 2) for t in (q, k, v))  # (B, H, T, hs)
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.hs))
            att = att.masked_fill(self.mask[:T, :T], float("-inf")).softmax(dim=-1)
            y = att @ v
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


def llama_hidden(C):
    return (8 * C // 3 + 15) // 16 * 16


def llama_flops_per_token(L, C, H, Hkv, T, Vp):
    hs, F_ = C // H, llama_hidden(C)
    matmul_params = L * (C * (H + 2 * Hkv) * hs + H * hs * C + 3 * C * F_) + Vp * C
    return 6.0 * matmul_params + 12.0 * L * T * H * hs


class RMSNorm(nn.Module):  # nn.RMSNorm's math, spelled out (torch < 2.4 has none)
    def __init__(self, C, eps=LN_EPS):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(C))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate(x, cos, sin):  # (B, H, T, hs): adjacent pairs (x0, x1) rotated by each position's angles
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)


class LlamaBlock(nn.Module):
    def __init__(self, C, H, Hkv, T, sdpa):
        super().__init__()
        self.H, self.Hkv, self.hs, self.sdpa = H, Hkv, C // H, sdpa
        self.attn_norm, self.mlp_norm = RMSNorm(C), RMSNorm(C)
        self.qkv = nn.Linear(C, (H + 2 * Hkv) * self.hs, bias=False)
        self.proj = nn.Linear(H * self.hs, C, bias=False)
        self.F = llama_hidden(C)
        self.gate_up = nn.Linear(C, 2 * self.F, bias=False)
        self.down = nn.Linear(self.F, C, bias=False)
        if not sdpa:
            self.register_buffer("mask", torch.ones(T, T, dtype=torch.bool).triu(1), persistent=False)

    def attn(self, x, cos, sin):
        B, T, _ = x.shape
        q, k, v = self.qkv(x).split([self.H * self.hs, self.Hkv * self.hs, self.Hkv * self.hs], dim=2)
        q = rotate(q.view(B, T, self.H, self.hs).transpose(1, 2), cos, sin)  # (B, H, T, hs)
        k = rotate(k.view(B, T, self.Hkv, self.hs).transpose(1, 2), cos, sin)  # (B, Hkv, T, hs)
        v = v.view(B, T, self.Hkv, self.hs).transpose(1, 2)
        group = self.H // self.Hkv
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.hs))
            att = att.masked_fill(self.mask[:T, :T], float("-inf"))
            y = att.softmax(dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, self.H * self.hs))

    def forward(self, x, cos, sin):
        x = x + self.attn(self.attn_norm(x), cos, sin)
        gate, up = self.gate_up(self.mlp_norm(x)).split(self.F, dim=2)
        return x + self.down(F.silu(gate) * up)


class Llama(nn.Module):
    def __init__(self, L, C, H, Hkv, T, V, sdpa):
        super().__init__()
        self.V, self.Vp, hs = V, padded_vocab(V), C // H
        self.embed = nn.Parameter(torch.empty(self.Vp, C))
        self.blocks = nn.ModuleList(LlamaBlock(C, H, Hkv, T, sdpa) for _ in range(L))
        self.norm = RMSNorm(C)
        self.head = nn.Linear(C, self.Vp, bias=False)
        angles = torch.arange(T).float()[:, None] * 10000.0 ** (-torch.arange(0, hs, 2).float() / hs)
        self.register_buffer("cos", angles.cos(), persistent=False)  # (T, hs/2)
        self.register_buffer("sin", angles.sin(), persistent=False)
        with torch.no_grad():
            for p in self.parameters():
                if p.dim() == 2:
                    p.normal_(0.0, 0.02)

    def forward(self, ids, targets):
        T = ids.shape[1]
        x = self.embed[ids]
        for blk in self.blocks:
            x = blk(x, self.cos[:T], self.sin[:T])
        logits = self.head(self.norm(x))[:, :, : self.V]  # (B, T, V): the padding rows left out
        return F.cross_entropy(logits.reshape(-1, self.V), targets.reshape(-1))


class GPT(nn.Module):
    def __init__(self, L, C, n_head, T, V, sdpa):
        super().__init__()
        self.V, self.Vp = V, padded_vocab(V)
        self.wte = nn.Parameter(torch.empty(self.Vp, C))
        self.wpe = nn.Parameter(torch.empty(T, C))
        self.blocks = nn.ModuleList(Block(C, n_head, T, sdpa) for _ in range(L))
        self.lnf = nn.LayerNorm(C, eps=LN_EPS)
        with torch.no_grad():
            for p in self.parameters():
                if p.dim() == 2:
                    p.normal_(0.0, INIT_STD)
                else:
                    p.zero_()
            for m in self.modules():
                if isinstance(m, nn.LayerNorm):
                    m.weight.fill_(1.0)

    def forward(self, ids, targets):
        T = ids.shape[1]
        x = self.wte[ids] + self.wpe[:T]
        for blk in self.blocks:
            x = blk(x)
        logits = self.lnf(x) @ self.wte.t()  # (B, T, Vp), tied LM head
        logits = logits[:, :, : self.V]  # padding columns excluded from the softmax
        return F.cross_entropy(logits.reshape(-1, self.V), targets.reshape(-1))


def run(name, args):
    torch.manual_seed(1)
    dev = torch.device(args.device)
    if name in LLAMA_CONFIGS:
        L, C, H, Hkv, T, V, B = LLAMA_CONFIGS[name]
        model = Llama(L, C, H, Hkv, T, V, args.sdpa).to(dev)
        model_flops = llama_flops_per_token(L, C, H, Hkv, T, padded_vocab(V))
        heads, kv_heads = f"H{H}/KV{Hkv}", Hkv
    else:
        L, C, H, T, V, B = {**CONFIGS, **PILE_CONFIGS}[name]
        model = GPT(L, C, H, T, V, args.sdpa).to(dev)
        model_flops = flops_per_token(L, C, T, padded_vocab(V))
        heads, kv_heads = f"H{H}", H
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() != 2]
    forward = torch.compile(model) if args.compile else model  # the first step pays the compilation
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-4, betas=(0.9, 0.95), eps=1e-8)
    gen = torch.Generator().manual_seed(2)
    ids = torch.randint(0, V, (B, T), generator=gen).to(dev)
    targets = torch.randint(0, V, (B, T), generator=gen).to(dev)
    # bf16: autocast (parameters, gradients and AdamW stay float32), as pax-ocl's FPROP_DTYPE=bfloat16.
    autocast = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=args.precision == "bf16")

    def step():
        opt.zero_grad(set_to_none=True)
        with autocast:
            loss = forward(ids, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    t0 = time.perf_counter()
    step()
    first_ms = (time.perf_counter() - t0) * 1e3
    for _ in range(max(0, args.warmup - 1)):
        step()
    sync()
    t1 = time.perf_counter()
    loss = float("nan")
    steps = 0
    # At least --steps, and more until --min-seconds were timed (as bench_train_step's BENCH_MIN_SECONDS).
    while steps < args.steps or time.perf_counter() - t1 < args.min_seconds:
        loss = step()
        sync()
        steps += 1
    ms = (time.perf_counter() - t1) * 1e3 / steps

    params = sum(p.numel() for p in model.parameters())
    tokens = B * T
    tok_s = tokens / (ms * 1e-3)
    gflops = model_flops * tok_s / 1e9
    if args.json:
        print(json.dumps({"impl": "torch", "config": name, "layers": L, "dims": C, "heads": H, "kv_heads": kv_heads, "seq_len": T,
                          "vocab": V, "padded_vocab": padded_vocab(V), "batch": B, "params": params,
                          "step_ms": round(ms, 3), "tok_s": round(tok_s, 1), "gflop_s": round(gflops, 3),
                          "first_step_ms": round(first_ms, 1), "loss": round(loss, 5), "steps": steps,
                          "warmup": args.warmup, "threads": args.threads, "sdpa": args.sdpa,
                          "compile": args.compile, "device": args.device, "precision": args.precision}))
    else:
        impl = ("torch.compile" if args.compile else "torch") + ("" if args.precision == "fp32" else "-" + args.precision)
        print(f"{impl:<6} {name:<2} L{L} D{C} {heads} T{T} V{V} B{B}  params {params / 1e6:6.2f}M  step {ms:8.1f} ms  "
              f"{tok_s:8.0f} tok/s  {gflops:6.2f} GFLOP/s  first step {first_ms:.0f} ms  loss {loss:.3f}"
              + (f"  ({steps} steps timed)" if steps > args.steps else ""))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="all",
                    help="A, B, C, D, T256..T2048, LC, LD or all (default all); P1024B8, P1024B16, P2048B4: Pile126M's "
                         "shapes; several comma-separated")
    ap.add_argument("--steps", type=int, default=5, help="timed steps (default 5)")
    ap.add_argument("--min-seconds", type=float, default=0.0,
                    help="time more steps than --steps until this many seconds were timed (default 0)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps before timing, >= 1 (default 1)")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="torch.set_num_threads (default: cpu count)")
    ap.add_argument("--sdpa", action="store_true", help="F.scaled_dot_product_attention(is_causal=True) attention")
    ap.add_argument("--compile", action="store_true",
                    help="torch.compile the model (Inductor; forward and backward; the first step compiles)")
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda: where the step runs")
    ap.add_argument("--precision", default="fp32",
                    help="fp32 (default); tf32: TF32 matmuls; bf16: bfloat16 autocast; several comma-separated "
                         "(each config runs in each, in one process: CUDA and imports start once)")
    ap.add_argument("--deadline", type=float, default=0,
                    help="seconds after start past which no further run starts (0: none); the runs left out "
                         "print a 'skipped' line")
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    args = ap.parse_args()
    known = [*CONFIGS, *LLAMA_CONFIGS, *PILE_CONFIGS]
    configs = [*CONFIGS, *LLAMA_CONFIGS] if args.config == "all" else args.config.split(",")
    precisions = args.precision.split(",")
    for c in configs:
        if c not in known:
            ap.error(f"--config {c}: use one of {', '.join(known)} or all")
    for p in precisions:
        if p not in ("fp32", "tf32", "bf16"):
            ap.error(f"--precision {p}: use fp32, tf32 or bf16")
    if args.steps < 1:
        ap.error("--steps must be >= 1")
    args.warmup = max(1, args.warmup)
    if args.sdpa and not hasattr(F, "scaled_dot_product_attention"):
        sys.exit(f"torch_reference.py: --sdpa needs torch >= 2.0 (this is torch {torch.__version__})")
    torch.set_num_threads(args.threads)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("torch_reference.py: --device cuda, but this PyTorch sees no CUDA device")
    attn = ("sdpa" if args.sdpa else "matmul+masked softmax") + (", torch.compile" if args.compile else ", eager")
    if args.json:
        print(json.dumps({"impl": "torch", "torch": torch.__version__, "threads": torch.get_num_threads(),
                          "attention": attn, "device": args.device, "precision": precisions, "steps": args.steps, "warmup": args.warmup}))
    else:
        print(f"torch {torch.__version__}  CPU threads: {torch.get_num_threads()}  attention: {attn}  "
              f"{','.join(precisions)} on {args.device}  steps timed: {args.steps}"
              + (f" or more, until {args.min_seconds:g} s were" if args.min_seconds > 0 else "") + f"  warmup: {args.warmup}")
    sys.stdout.flush()
    start = time.perf_counter()
    for name in configs:
        for precision in precisions:
            args.precision = precision
            if args.deadline > 0 and time.perf_counter() - start > args.deadline:
                print(f"skipped {name} {precision}{' compile' if args.compile else ''}: past --deadline {args.deadline:.0f} s")
                continue
            torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
            torch.backends.cudnn.allow_tf32 = precision == "tf32"
            run(name, args)
            if torch.cuda.is_available():
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
