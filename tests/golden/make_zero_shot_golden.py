#!/usr/bin/env python3
"""Zero-shot golden files (issue 40) from an outside implementation: Hugging Face transformers
scoring the tiny GPT-2 of make_golden.py in float64.

Writes, into zero_shot/ next to this script:
  tokenizer.model   a SentencePiece BPE model of 90 pieces (below the GPT-2's 96 rows), trained
                    here on the verses below; `pax-ocl eval --fdl.DATA=zero_shot` finds it there
  lambada.jsonl     20 Lambada-style examples: 8 {"text"}, 4 {"inputs", "targets"} and 8 pre-tokenized
                    {"input_ids", "target_ids"}, two of them longer than MAX_SEQ_LEN allows (cut from
                    the left); half of the pre-tokenized targets are the model's own greedy
                    continuation, so acc_strict is not 0
  boolq.jsonl       20 BoolQ-style examples: 10 {"question", "passage", "answer"}, 10 pre-tokenized
                    {"input_ids", "yes_ids", "no_ids", "answer"}
  expected.json     per example, in float64: each candidate's log-likelihood, tokens and greedy
                    tokens; and the metrics pax-ocl reports (acc_strict, target token accuracy,
                    log_pplx over the targets; boolq_acc)

What pax-ocl does and this script does the same way (inputs/zero_shot_examples.h,
inputs/zero_shot_scoring.h):
  - Lambada {"text"}: the last word (after the last space) is the target, with its leading space;
    inputs and target tokenized apart.
  - BoolQ: prompt "<passage>\\nquestion: <question>?\\nanswer:" (no doubled "?"); candidates " yes"
    and " no", tokenized apart; the model answers yes when log P(yes) > log P(no).
  - The context is cut from the left to MAX_SEQ_LEN (32 = n_positions) minus the longest
    candidate; the model reads context + candidate minus its last token.
  - "Greedy" is the first argmax over the 96 real vocabulary entries.
Every greedy decision and every BoolQ comparison is at least MIN_MARGIN (1e-3) from a tie in
float64 (the script asserts it), far above float32 rounding, so pax-ocl's accuracies must match
exactly.

Run (only to regenerate; the tests need no Python), from the repository root, after make_golden.py:
  pip install torch transformers safetensors sentencepiece
  python3 tests/golden/make_zero_shot_golden.py
"""

import json
import os
import random

import sentencepiece as spm
import safetensors.torch
import torch

import make_golden as g
from transformers import GPT2LMHeadModel

OUT = os.path.join(g.HERE, "zero_shot")
T = g.N_POSITIONS
MIN_MARGIN = 1e-3
SEED = 20261126

VERSES = [
    "In the beginning God created the heaven and the earth",
    "And the earth was without form, and void; and darkness was upon the face of the deep",
    "And God said, Let there be light: and there was light",
    "And God saw the light, that it was good: and God divided the light from the darkness",
    "And God called the light Day, and the darkness he called Night",
    "And the evening and the morning were the first day",
    "And God made the firmament, and divided the waters",
    "And God called the dry land Earth; and the gathering together of the waters called he Seas",
    "And the earth brought forth grass, and herb yielding seed after his kind",
    "And God made two great lights; the greater light to rule the day",
    "And God created great whales, and every living creature that moveth",
    "So God created man in his own image, in the image of God created he him",
]


def tokenizer():
    os.makedirs(OUT, exist_ok=True)
    corpus = os.path.join(OUT, "corpus.txt")
    with open(corpus, "w") as f:
        for _ in range(20):
            for v in VERSES:
                f.write(v + "\n")
    spm.SentencePieceTrainer.train(input=corpus, model_prefix=os.path.join(OUT, "tokenizer"), vocab_size=90,
                                   model_type="bpe", character_coverage=1.0, num_threads=1, seed_sentencepiece_size=1000,
                                   shuffle_input_sentence=False, normalization_rule_name="identity",
                                   minloglevel=2)
    os.remove(corpus)
    os.remove(os.path.join(OUT, "tokenizer.vocab"))
    return spm.SentencePieceProcessor(model_file=os.path.join(OUT, "tokenizer.model"))


def model():
    m = GPT2LMHeadModel(g.gpt2_config())
    m.eval()
    stored = safetensors.torch.load_file(os.path.join(g.HERE, "gpt2_tiny.safetensors"))
    missing, unexpected = m.load_state_dict(stored, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
    return m.double()


def cut(context, candidates):
    room = T - max(len(c) for c in candidates)
    assert room >= 1
    return context[-room:]


def score(m, context, candidate):
    """(log-likelihood, tokens, greedy tokens, smallest margin of a greedy decision)."""
    tokens = context + candidate
    with torch.no_grad():
        logits = m(input_ids=torch.tensor([tokens[:-1]])).logits[0]  # (n - 1, V) float64
    logp = torch.log_softmax(logits, dim=-1)
    ll, greedy, margin = 0.0, 0, float("inf")
    for i, token in enumerate(candidate):
        pos = len(context) - 1 + i
        ll += float(logp[pos, token])
        best = int(logits[pos].argmax())
        greedy += best == token
        others = torch.cat([logits[pos, :token], logits[pos, token + 1:]])
        margin = min(margin, abs(float(logits[pos, token] - others.max())))
    return ll, len(candidate), greedy, margin


def greedy_continuation(m, context, n):
    tokens = list(context)
    for _ in range(n):
        with torch.no_grad():
            logits = m(input_ids=torch.tensor([tokens[-(T - 1):]])).logits[0, -1]
        tokens.append(int(logits.argmax()))
    return tokens[len(context):]


def lambada(m, sp, rng):
    lines, examples = [], []
    for v in VERSES[:8]:
        lines.append({"text": v})
        cut_at = v.rfind(" ")
        examples.append((sp.encode(v[:cut_at]), [sp.encode(v[cut_at:])]))
    for v in VERSES[8:12]:
        words = v.split(" ")
        inputs, targets = " ".join(words[:-2]), " " + " ".join(words[-2:])
        lines.append({"inputs": inputs, "targets": targets})
        examples.append((sp.encode(inputs), [sp.encode(targets)]))
    for i in range(8):
        context = [rng.randrange(g.VOCAB) for _ in range(40 if i < 2 else rng.randrange(3, 12))]
        n = rng.randrange(1, 4)
        while True:  # a target whose every decision is clear of a tie
            target = (greedy_continuation(m, context[-(T - n):], n) if i % 2 == 0
                      else [rng.randrange(g.VOCAB) for _ in range(n)])
            if score(m, cut(context, [target]), target)[3] >= MIN_MARGIN:
                break
            context = [rng.randrange(g.VOCAB) for _ in range(len(context))]
        lines.append({"input_ids": context, "target_ids": target})
        examples.append((context, [target]))
    return lines, examples


def boolq(m, sp, rng):
    lines, examples, answers = [], [], []
    for i, v in enumerate(VERSES[:10]):
        words = v.split(" ")
        question = "is it said that " + " ".join(words[1:4]).lower()
        answer = i % 3 != 0
        lines.append({"question": question, "passage": v + ".", "answer": answer})
        prompt = v + "." + "\nquestion: " + question + "?" + "\nanswer:"
        examples.append((sp.encode(prompt), [sp.encode(" yes"), sp.encode(" no")]))
        answers.append(answer)
    for i in range(10):
        context = [rng.randrange(g.VOCAB) for _ in range(rng.randrange(4, 30))]
        yes, no = [rng.randrange(g.VOCAB)], [rng.randrange(g.VOCAB) for _ in range(rng.randrange(1, 3))]
        answer = rng.random() < 0.5
        lines.append({"input_ids": context, "yes_ids": yes, "no_ids": no, "answer": answer})
        examples.append((context, [yes, no]))
        answers.append(answer)
    return lines, examples, answers


def main():
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    rng = random.Random(SEED)
    sp = tokenizer()
    assert sp.get_piece_size() <= g.VOCAB
    m = model()

    out = {"source": "tests/golden/make_zero_shot_golden.py", "versions": g.versions(), "max_seq_len": T}
    lines, examples = lambada(m, sp, rng)
    scores = [score(m, cut(c, cands), cands[0]) for c, cands in examples]
    assert min(s[3] for s in scores) >= MIN_MARGIN, "a greedy decision within MIN_MARGIN of a tie: change the data"
    tokens = sum(s[1] for s in scores)
    out["lambada"] = {
        "examples": [{"log_likelihood": s[0], "tokens": s[1], "greedy": s[2]} for s in scores],
        "acc_strict": sum(s[2] == s[1] for s in scores) / len(scores),
        "target_token_accuracy": sum(s[2] for s in scores) / tokens,
        "log_pplx": -sum(s[0] for s in scores) / tokens,
        "target_tokens": tokens,
    }
    with open(os.path.join(OUT, "lambada.jsonl"), "w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")

    lines, examples, answers = boolq(m, sp, rng)
    per, right = [], 0
    for (context, cands), answer in zip(examples, answers):
        context = cut(context, cands)
        yes, no = score(m, context, cands[0])[0], score(m, context, cands[1])[0]
        assert abs(yes - no) >= MIN_MARGIN, "a BoolQ comparison within MIN_MARGIN of a tie: change the data"
        right += (yes > no) == answer
        per.append({"yes_log_likelihood": yes, "no_log_likelihood": no, "answer": answer})
    out["boolq"] = {"examples": per, "boolq_acc": right / len(per)}
    with open(os.path.join(OUT, "boolq.jsonl"), "w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"lambada: acc_strict {out['lambada']['acc_strict']:.4f}, token accuracy "
          f"{out['lambada']['target_token_accuracy']:.4f}, log_pplx {out['lambada']['log_pplx']:.6f}; "
          f"boolq_acc {out['boolq']['boolq_acc']:.4f}")


if __name__ == "__main__":
    main()
