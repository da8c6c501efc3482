#!/usr/bin/env python3
"""Golden files from an outside implementation (PyTorch + Hugging Face transformers).

Writes, next to this script:
  gpt2_tiny.safetensors     a tiny GPT-2 (GPT2LMHeadModel), float32, Hugging Face names
                            ("transformer." prefix; the tied lm_head.weight is not stored)
  gpt2_tiny_expected.json   what a correct implementation computes from it on a fixed batch,
                            in float64: the loss, log-probabilities and logits, the residual
                            stream after every block, every tensor's gradient norm, the loss
                            around each of 3 steps of pax-ocl's Adam, and every tensor's norm,
                            update norm and first values after steps 1 and 3
  gpt2_tiny_eval/           a dataset directory as `pax-ocl eval --fdl.DATA=DIR` reads it (docs/data_format.md):
                            train.tokens and validation.tokens (token shards, uint16) and dataset.json;
                            train holds 5 windows of MAX_SEQ_LEN + 1 = 33 tokens (stride 32) and 19
                            tokens more, validation 3 windows and 7 more (the leftovers make no window)
  gpt2_tiny_eval_expected.json  the GPT-2's loss sum and correct next-token predictions of every window
                            of each split, in float64, and their means over all windows (the loss is
                            averaged over target tokens, the accuracy takes the first argmax over the
                            96 real vocabulary entries, as pax-ocl's eval reports them)
  llama_tiny/               a tiny LlamaForCausalLM (float32, grouped-query attention: 4 heads, 2 key/value
                            heads) as save_pretrained writes it: config.json, model.safetensors.index.json, shards
  llama_tiny_expected.json  its loss, logits slice and log-probabilities on the same kind of batch
tests/test_golden.cpp checks pax-ocl against the GPT-2 files in-process, tests/test_cli_eval.cpp runs
`pax-ocl eval --init_from=gpt2_tiny.safetensors` on gpt2_tiny_eval; tests/test_golden.cpp also loads
llama_tiny/ through pax-ocl's Hugging Face LLaMA reader and checks its loss and log-probabilities.

Run (only to regenerate; the test needs no Python), from the repository root:
  pip install torch transformers safetensors
  python3 tests/golden/make_golden.py
Made with Python 3.11.7, torch 2.15.0+cu132 (the PyPI wheel, run on the CPU), transformers 5.23.0,
safetensors 0.8.0, numpy 2.4.6; the JSON files record the versions. The script is deterministic
(seeded generators, one thread, float64 on the CPU; two runs give identical files); another torch
or transformers version may change the last bits of the expectations, far below the tolerances.

What must match pax-ocl (checked against its source):
  - GELU: tanh approximation (kernels_cl/gelu.cl)           -> activation_function="gelu_new"
  - LayerNorm eps 1e-5 (models/layers/layer_norm.h)          -> layer_norm_epsilon=1e-5
  - attention scale 1/sqrt(head dim) (causal_attention.cpp)  -> scale_attn_weights=True
  - LM head tied to wte, no bias; no dropout.
  - VOCAB_SIZE 96: pax-ocl pads the vocabulary to 128 rows (zero, masked out of the softmax);
    the padding rows get no gradient, so every norm below is the same with or without them.
  - Adam (models/adam_optimizer.cpp, kernels_cl/optimizer.cl), written out by hand below:
      norm = global L2 norm of all gradients; s = min(1, CLIP / norm)
      t += 1; d(b) = b (1 - b^(t-1)) / (1 - b^t)            (praxis bias_corrected_decay; 0 at t=1)
      g = s grad; m = d(b1) m + (1 - d(b1)) g; v = d(b2) v + (1 - d(b2)) g^2
      p -= lr (m / (sqrt(v) + eps) + wd p)                    (wd only on matrices)
    betas 0.9 / 0.95, eps 1e-8, wd 0.1 (multiplied by lr), CLIP 1.0, lr 1e-3 constant.
    Decayed (gpt_tensor_defs in models/parameter_layout.cpp): wte, wpe and each block's
    attn.c_attn / attn.c_proj / mlp.c_fc / mlp.c_proj weights; biases and LayerNorm params not.

Every value is computed in float64 from the float32 weights as stored (so the file and the
expectations agree exactly); pax-ocl runs float32, and tests/test_golden.cpp states its tolerances.
"""

import json
import math
import os
import shutil
import platform

import numpy
import safetensors
import safetensors.torch
import torch
import torch.nn.functional as F
import transformers
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))

SEED = 20240325
B, T = 2, 16
VOCAB = 96           # pax-ocl pads to 128
N_POSITIONS = 32
N_EMBD = 64
N_LAYER = 2
N_HEAD = 4
MATRIX_STD = 0.12    # large enough that attention and GELU are far from linear
VECTOR_STD = 0.1     # biases ~ N(0, 0.1^2), LayerNorm scales ~ 1 + N(0, 0.1^2)
LR = 1e-3
BETA1, BETA2, EPS = 0.9, 0.95, 1e-8
WEIGHT_DECAY = 0.1
CLIP = 1.0
STEPS = 3
LOGPROB_POSITIONS = [(0, 0), (0, T - 1), (1, 0), (1, T - 1)]  # (row, position)
LOGPROB_VOCAB = list(range(8))

# The evaluation data (gpt2_eval): each split's stream is drawn token by token from its own generator;
# a target is the model's argmax, given exactly the window's context pax-ocl's eval feeds, with
# probability EVAL_GREEDY (so that the accuracy is far from 0), else uniform. A draw whose logit lies
# within EVAL_MIN_MARGIN of the best other entry is drawn again, so float32 rounding (logits within
# ~1e-5) cannot change which predictions count as correct.
EVAL_DIR = "gpt2_tiny_eval"
EVAL_SPLITS = (("train", 5, 19, SEED + 2), ("validation", 3, 7, SEED + 3))  # (split, windows, leftover, seed)
EVAL_GREEDY = 0.5
EVAL_MIN_MARGIN = 1e-3

GPT2_DECAYED = ("wte.weight", "wpe.weight", "attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight",
                "mlp.c_proj.weight")


def versions():
    return {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__,
            "safetensors": safetensors.__version__, "numpy": numpy.__version__}


def randomize(model, gen, is_matrix):
    """Every parameter random (float32-representable), LayerNorm/RMSNorm scales around 1."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if is_matrix(name, p):
                value = MATRIX_STD * torch.randn(p.shape, generator=gen, dtype=torch.float64)
            elif "ln" in name.split(".")[-2] or "norm" in name:
                value = (1.0 if name.endswith("weight") else 0.0) + VECTOR_STD * torch.randn(
                    p.shape, generator=gen, dtype=torch.float64)
            else:
                value = VECTOR_STD * torch.randn(p.shape, generator=gen, dtype=torch.float64)
            p.copy_(value.to(torch.float32).to(p.dtype))


def save_weights(model, path, skip):
    tensors = {name: p.detach().to(torch.float32).contiguous()
               for name, p in model.state_dict().items() if not skip(name)}
    safetensors.torch.save_file(dict(sorted(tensors.items())), path, metadata={"format": "pt"})
    return tensors


def batch(gen, vocab):
    seq = torch.randint(0, vocab, (B, T + 1), generator=gen)
    return seq[:, :T].contiguous(), seq[:, 1:].contiguous()


def floats(t):
    return [float(x) for x in t.detach().reshape(-1).tolist()]


def forward(model, ids, targets):
    logits = model(input_ids=ids).logits  # (B, T, V) float64
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    return logits, loss


def logits_and_logprobs(logits):
    logp = torch.log_softmax(logits, dim=-1)
    return {
        "logprob_positions": [list(p) for p in LOGPROB_POSITIONS],
        "logprob_vocab": LOGPROB_VOCAB,
        # logprobs[i][j]: log softmax(logits)[row, position, vocab[j]] for positions[i]
        "logprobs": [[float(logp[b, t, v]) for v in LOGPROB_VOCAB] for b, t in LOGPROB_POSITIONS],
        # logits[i][j]: the raw logits at the same places (shift-dependent; see the test)
        "logits": [[float(logits[b, t, v]) for v in LOGPROB_VOCAB] for b, t in LOGPROB_POSITIONS],
    }


def gpt2_config():
    config = GPT2Config(vocab_size=VOCAB, n_positions=N_POSITIONS, n_embd=N_EMBD, n_layer=N_LAYER, n_head=N_HEAD,
                        n_inner=None, activation_function="gelu_new", layer_norm_epsilon=1e-5, resid_pdrop=0.0,
                        embd_pdrop=0.0, attn_pdrop=0.0, scale_attn_weights=True, scale_attn_by_inverse_layer_idx=False,
                        reorder_and_upcast_attn=False, tie_word_embeddings=True,
                        bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1)
    config._attn_implementation = "eager"
    return config


def gpt2():
    gen = torch.Generator().manual_seed(SEED)
    model = GPT2LMHeadModel(gpt2_config())
    model.eval()  # dropout is 0 anyway
    assert model.lm_head.weight is model.transformer.wte.weight, "lm_head must be tied to wte"
    randomize(model, gen, lambda name, p: p.dim() == 2)
    stored = save_weights(model, os.path.join(HERE, "gpt2_tiny.safetensors"), lambda n: n == "lm_head.weight")
    ids, targets = batch(gen, VOCAB)

    model.double()
    params = {n: p for n, p in model.named_parameters()}  # lm_head is wte (tied: one parameter)
    assert "lm_head.weight" not in params
    for name, p in params.items():  # float64 copies of exactly the stored float32 values
        assert torch.equal(p.detach(), stored[name].double()), name

    # Forward: the residual stream after every block (pre ln_f for the last).
    hidden = []
    handles = [blk.register_forward_hook(lambda m, i, o: hidden.append((o[0] if isinstance(o, tuple) else o).detach()))
               for blk in model.transformer.h]
    logits, loss = forward(model, ids, targets)
    for h in handles:
        h.remove()
    assert len(hidden) == N_LAYER

    decayed = {n: any(n.endswith(s) for s in GPT2_DECAYED) for n in params}
    m_state = {n: torch.zeros_like(p) for n, p in params.items()}
    v_state = {n: torch.zeros_like(p) for n, p in params.items()}
    initial = {n: p.detach().clone() for n, p in params.items()}

    def norms(tensors):
        """L2 norm of each tensor, plus "<c_attn.bias>[q]", "[k]" and "[v]" of the three parts of the
        qkv bias: the key bias's gradient is exactly 0 (softmax ignores a constant added to a row's
        scores), so Adam turns float32 rounding noise there into updates of up to lr; the test compares
        the q and v parts tightly and the k part loosely."""
        out = {n: float(x.norm()) for n, x in tensors.items()}
        for n, x in tensors.items():
            if n.endswith("attn.c_attn.bias"):
                for i, part in enumerate("qkv"):
                    out[f"{n}[{part}]"] = float(x[i * N_EMBD:(i + 1) * N_EMBD].norm())
        return out

    def snapshot():
        return {
            "param_norms": norms({n: p.detach() for n, p in params.items()}),
            "update_norms": norms({n: p.detach() - initial[n] for n, p in params.items()}),
            "first_values": {n: floats(p.detach().reshape(-1)[:4]) for n, p in params.items()},
        }

    steps = []
    grad_norms_0 = None
    loss_k = loss
    for t in range(1, STEPS + 1):
        model.zero_grad(set_to_none=True)
        if t > 1:
            _, loss_k = forward(model, ids, targets)
        loss_k.backward()
        grads = {n: p.grad.detach().clone() for n, p in params.items()}
        if t == 1:
            grad_norms_0 = norms(grads)
        norm = math.sqrt(sum(float((g * g).sum()) for g in grads.values()))
        scale = CLIP / norm if CLIP > 0 and norm > CLIP else 1.0
        d1 = BETA1 * (1 - BETA1 ** (t - 1)) / (1 - BETA1 ** t)
        d2 = BETA2 * (1 - BETA2 ** (t - 1)) / (1 - BETA2 ** t)
        with torch.no_grad():
            for n, p in params.items():
                g = grads[n] * scale
                m_state[n] = d1 * m_state[n] + (1 - d1) * g
                v_state[n] = d2 * v_state[n] + (1 - d2) * g * g
                wd = WEIGHT_DECAY if decayed[n] else 0.0
                p -= LR * (m_state[n] / (torch.sqrt(v_state[n]) + EPS) + wd * p)
        with torch.no_grad():
            _, after = forward(model, ids, targets)
        step = {"step": t, "loss_before": float(loss_k.detach()), "grad_norm": norm, "grad_scale": scale,
                "loss_after": float(after)}
        if t in (1, STEPS):
            step.update(snapshot())
        steps.append(step)

    expected = {
        "made_by": "tests/golden/make_golden.py",
        "versions": versions(),
        "config": {"vocab_size": VOCAB, "padded_vocab_size": 128, "n_positions": N_POSITIONS, "n_embd": N_EMBD,
                   "n_layer": N_LAYER, "n_head": N_HEAD, "n_inner": 4 * N_EMBD, "activation_function": "gelu_new",
                   "layer_norm_epsilon": 1e-5},
        "batch": {"B": B, "T": T, "ids": ids.reshape(-1).tolist(), "targets": targets.reshape(-1).tolist()},
        "loss": float(loss.detach()),
        **logits_and_logprobs(logits.detach()),
        # hidden[l]: the residual stream (B*T*C, row-major) after block l, before the final LayerNorm
        "hidden": [floats(h) for h in hidden],
        "grad_norms": grad_norms_0,
        "grad_norm": steps[0]["grad_norm"],
        "adam": {"lr": LR, "beta1": BETA1, "beta2": BETA2, "epsilon": EPS, "weight_decay": WEIGHT_DECAY,
                 "clip_gradient_norm": CLIP, "decayed": sorted(n for n, d in decayed.items() if d)},
        "steps": steps,
    }
    with open(os.path.join(HERE, "gpt2_tiny_expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    print(f"gpt2: loss {float(loss):.6f}, grad norm {steps[0]['grad_norm']:.6f}, losses after steps",
          [round(s["loss_after"], 6) for s in steps])


def write_token_shard(path, tokens, vocab):
    """docs/data_format.md: "PAXTOKEN", version 1, 2 bytes a token, count, vocabulary size, 0; uint16 LE."""
    assert all(0 <= t < vocab for t in tokens) and vocab <= 65536
    header = b"PAXTOKEN" + numpy.array([1, 2], dtype="<u4").tobytes() + numpy.array([len(tokens)], dtype="<u8").tobytes()
    header += numpy.array([vocab, 0], dtype="<u4").tobytes()
    with open(path, "wb") as f:
        f.write(header + numpy.array(tokens, dtype="<u2").tobytes())


def gpt2_eval():
    """What `pax-ocl eval --init_from=gpt2_tiny.safetensors --fdl.DATA=gpt2_tiny_eval` must report.

    pax-ocl cuts a split's stream into W = (size - 1) // T windows, window w = tokens [w T, w T + T]
    (ids the first T, targets the last T; T = MAX_SEQ_LEN = n_positions with --init_from), visits them
    in order in batches (the last one padded with weight 0) and reports sum(loss) / sum(weight) and
    sum(correct) / sum(weight) over all weighted positions. The model is read back from the
    safetensors file written by gpt2(), so this checks the file too."""
    T = N_POSITIONS
    model = GPT2LMHeadModel(gpt2_config())
    model.eval()
    stored = safetensors.torch.load_file(os.path.join(HERE, "gpt2_tiny.safetensors"))
    missing, unexpected = model.load_state_dict(stored, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    assert model.lm_head.weight is model.transformer.wte.weight, "lm_head must be tied to wte"
    model.double()
    for name, p in model.named_parameters():
        assert torch.equal(p.detach(), stored[name].double()), name

    def next_logits(context):  # float64 logits after the last token of `context` (one window's prefix)
        with torch.no_grad():
            return model(input_ids=torch.tensor([context])).logits[0, -1]

    def margin(logits, target):  # distance of the target's logit from the best other entry
        others = torch.cat([logits[:target], logits[target + 1:]])
        return abs(float(logits[target] - others.max()))

    os.makedirs(os.path.join(HERE, EVAL_DIR), exist_ok=True)
    splits, info = {}, {"source": "tests/golden/make_golden.py", "vocab_size": VOCAB}
    for split, windows, leftover, seed in EVAL_SPLITS:
        gen = torch.Generator().manual_seed(seed)
        tokens = [int(torch.randint(0, VOCAB, (1,), generator=gen))]
        for i in range(1, windows * T + 1 + leftover):
            if i > windows * T:  # past the last window: never read
                tokens.append(int(torch.randint(0, VOCAB, (1,), generator=gen)))
                continue
            w = (i - 1) // T
            logits = next_logits(tokens[w * T:i])
            greedy = float(torch.rand(1, generator=gen, dtype=torch.float64)) < EVAL_GREEDY
            target = int(logits.argmax())
            if not greedy or margin(logits, target) < EVAL_MIN_MARGIN:
                target = int(torch.randint(0, VOCAB, (1,), generator=gen))
                while margin(logits, target) < EVAL_MIN_MARGIN:
                    target = int(torch.randint(0, VOCAB, (1,), generator=gen))
            tokens.append(target)
        assert (len(tokens) - 1) // T == windows

        loss_sums, correct, margins = [], [], []
        for w in range(windows):
            ids = torch.tensor([tokens[w * T:w * T + T]])
            targets = torch.tensor(tokens[w * T + 1:w * T + T + 1])
            with torch.no_grad():
                logits = model(input_ids=ids).logits[0]  # (T, V) float64
            loss_sums.append(float(F.cross_entropy(logits, targets, reduction="sum")))
            correct.append(int((logits.argmax(dim=-1) == targets).sum()))
            margins += [margin(logits[t], int(targets[t])) for t in range(T)]
        assert min(margins) >= EVAL_MIN_MARGIN
        write_token_shard(os.path.join(HERE, EVAL_DIR, f"{split}.tokens"), tokens, VOCAB)
        info[f"{split}_tokens"] = len(tokens)
        info[f"{split}_documents"] = 1
        splits[split] = {
            "tokens": len(tokens), "windows": windows,
            # per window w (tokens [w T, w T + T]): the sum of its T next-token losses, and how many
            # of its T predictions (first argmax over the vocabulary) are the target
            "window_loss_sums": loss_sums, "window_correct": correct,
            # over all windows, per target token: what an evaluation of one full pass reports
            "loss": sum(loss_sums) / (windows * T), "accuracy": sum(correct) / (windows * T),
            "min_margin": min(margins),
        }
        print(f"gpt2 eval {split}: {windows} windows, loss {splits[split]['loss']:.6f}, accuracy "
              f"{splits[split]['accuracy']:.6f}")
    info = {k: info[k] for k in ("source", "vocab_size", "train_documents", "validation_documents", "train_tokens",
                                 "validation_tokens")}
    info["packing"] = "concat-then-split; one stream per split drawn by make_golden.py (no tokenizer)"
    with open(os.path.join(HERE, EVAL_DIR, "dataset.json"), "w") as f:
        json.dump(info, f, indent=2)
        f.write("\n")
    expected = {
        "made_by": "tests/golden/make_golden.py",
        "versions": versions(),
        "weights": "gpt2_tiny.safetensors",
        "data": EVAL_DIR,
        "max_seq_len": T,
        "greedy_fraction": EVAL_GREEDY,
        "min_margin_allowed": EVAL_MIN_MARGIN,
        "splits": splits,
    }
    with open(os.path.join(HERE, "gpt2_tiny_eval_expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")


def llama():
    gen = torch.Generator().manual_seed(SEED + 1)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=N_EMBD, intermediate_size=176, num_hidden_layers=N_LAYER,
                         num_attention_heads=N_HEAD, num_key_value_heads=2, max_position_embeddings=N_POSITIONS,
                         rms_norm_eps=1e-5, rope_theta=10000.0, hidden_act="silu", attention_bias=False,
                         mlp_bias=False, tie_word_embeddings=False, attention_dropout=0.0,
                         bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1)
    config._attn_implementation = "eager"
    model = LlamaForCausalLM(config)
    model.eval()
    randomize(model, gen, lambda name, p: p.dim() == 2)
    # As transformers saves it: config.json, and the weights sharded (model.safetensors.index.json
    # and 3 shards), which pax-ocl must read as a whole.
    out_dir = os.path.join(HERE, "llama_tiny")
    shutil.rmtree(out_dir, ignore_errors=True)
    model.save_pretrained(out_dir, safe_serialization=True, max_shard_size="200KB")
    with open(os.path.join(out_dir, "model.safetensors.index.json")) as f:
        shards = sorted(set(json.load(f)["weight_map"].values()))
    assert len(shards) >= 2, shards
    stored = {}
    for shard in shards:
        stored.update(safetensors.torch.load_file(os.path.join(out_dir, shard)))
    ids, targets = batch(gen, VOCAB)
    model.double()
    for name, p in model.named_parameters():
        assert torch.equal(p.detach(), stored[name].double()), name
    with torch.no_grad():
        logits, loss = forward(model, ids, targets)
    expected = {
        "made_by": "tests/golden/make_golden.py",
        "versions": versions(),
        "config": {"vocab_size": VOCAB, "hidden_size": N_EMBD, "intermediate_size": 176, "num_hidden_layers": N_LAYER,
                   "num_attention_heads": N_HEAD, "num_key_value_heads": 2, "max_position_embeddings": N_POSITIONS,
                   "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": False},
        "batch": {"B": B, "T": T, "ids": ids.reshape(-1).tolist(), "targets": targets.reshape(-1).tolist()},
        "loss": float(loss.detach()),
        **logits_and_logprobs(logits),
    }
    with open(os.path.join(HERE, "llama_tiny_expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    print(f"llama: loss {float(loss):.6f}")


if __name__ == "__main__":
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    print(versions())
    gpt2()
    gpt2_eval()
    llama()
