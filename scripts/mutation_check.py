#!/usr/bin/env python3
"""Mutant generator for scripts/mutation_check.sh (which documents the check).

  mutation_check.py plan ROOT SEED COUNT [FILTER]  the COUNT mutants SEED picks, one per line:
                                                    id<TAB>kind<TAB>file<TAB>line<TAB>col<TAB>original<TAB>mutant
  mutation_check.py count ROOT                      candidate sites per file
  mutation_check.py apply SRC DST LINE COL ORIGINAL MUTANT
                                                    writes SRC with that one token changed to DST

Candidates are single-token changes in code only: comments, string and character literals and
preprocessor lines other than #define bodies are skipped, as are the branches of gemm_mma.cl that
only an NVIDIA PTX build compiles and its tile defaults that the launcher always overrides
(tensor_core_probe.cl, PTX only, is not a candidate file).
Operators (binary ones, written with a space on both sides as clang-format does, so pointer
declarations, dereferences, unary minus and template brackets are never taken):
  + <-> -   * <-> /   += <-> -=   *= <-> /=   < <-> <=   > <-> >=   == <-> !=   && <-> ||
Numeric literals: 0 -> 1, 1 -> 0, n -> n + 1 (integers, same base and suffix); 0.0 -> 1.0 and
x -> x / 2 otherwise (floating point, same suffix: 0.5 -> 0.25).
Subscripts a[e] (after a name, ')' or ']'; e not a literal): e -> e + 1, and e +/- 1 -> e.
Left out as equivalent by construction (seed 25 found all 9 such mutants equivalent):
  - an array declaration's sizes (`float a[4]`, `__local float bs[TK][TS]`, an array parameter):
    a larger array, or a parameter that is a pointer anyway, changes no result;
  - tightening a vector path's bound `i + W <= n` (W = 4, 8 or 16, in a for or if header) to
    `i + W+1 <= n` or `i + W < n`: every such loop or branch has a scalar tail or else-branch
    computing the same expression, so a tighter bound only moves work from one to the other.
    Loosening it (`i - W <= n`), the loop's step and the bodies stay candidates.
The pick is random.Random(SEED).sample over all sites in a fixed order (then sorted: kernel
mutants first, each kind in file order, numbered M001...), so a seed names the same mutants for
the same sources; FILTER (a regex on the file path) narrows the sites first.
"""
import glob
import os
import random
import re
import sys

KERNEL_GLOB = "kernels_cl/*.cl"
HOST_GLOBS = ["models/*.cpp", "models/layers/*.cpp"]
EXCLUDED = {"kernels_cl/tensor_core_probe.cl"}  # NVIDIA PTX only: cannot be built on the test devices

SWAPS = {"+": "-", "-": "+", "*": "/", "/": "*", "+=": "-=", "-=": "+=", "*=": "/=", "/=": "*=",
         "<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==", "&&": "||", "||": "&&"}
OPERATORS = sorted(["<<=", ">>=", "->*", "...", "::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&",
                    "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", ".*", "+", "-", "*", "/", "%", "<", ">",
                    "=", "!", "~", "&", "|", "^", "?", ":", ";", ",", ".", "(", ")", "[", "]", "{", "}", "#"],
                   key=len, reverse=True)
NUMBER = re.compile(r"\.?[0-9](?:[0-9a-zA-Z_.']|[eEpP][+-])*")
IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")

# Preprocessor conditions as the CPU (PoCL) test build sees them, for gemm_mma.cl: its PTX branches,
# and the tile defaults that tensor_core_gemm.cpp always overrides with -DBM=... and so on.
FALSE_ON_CPU = {"defined(PAX_NVIDIA_PTX)", "ASYNC_COPY"} | {
    "!defined(%s)" % m for m in ("BM", "BN", "BK", "WM", "WN", "STAGES", "ASYNC_COPY")}
TRUE_ON_CPU = {"defined(PAX_MMA_EMULATE)", "!ASYNC_COPY"}


def candidate_files(root):
    files = sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, KERNEL_GLOB)))
    for g in HOST_GLOBS:
        files += sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, g)))
    return [f for f in files if f not in EXCLUDED]


def code_mask(text):
    """A copy of text with comments, string and char literals blanked (same length, newlines kept),
    plus the set of 1-based line numbers whose code may be mutated."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif c == 'R' and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            d = text.index("(", i)
            delim = ")" + text[i + 2:d] + '"'
            j = text.find(delim, d) + len(delim)
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif c in "\"'":
            # A digit separator (1'000) is no char literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and text[i - 1] not in "uUL":
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            for k in range(i, min(j + 1, n)):
                out[k] = " "
            i = j + 1
        else:
            i += 1
    masked = "".join(out)

    # Lines: drop preprocessor directives except #define bodies, and dead PTX-only branches.
    lines = masked.split("\n")
    ok = set()
    stack = []  # per open #if: (whether the current branch is dead on the CPU build, the #if's condition)
    continuing = None  # inside a directive's backslash continuation: whether its lines may be mutated
    for number, line in enumerate(lines, start=1):
        dead = any(d for d, _ in stack)
        if continuing is not None:
            if continuing and not dead:
                ok.add(number)
            if not line.rstrip().endswith("\\"):
                continuing = None
            continue
        stripped = line.strip()
        if stripped.startswith("#"):
            words = stripped[1:].strip().split(None, 1)
            directive = words[0] if words else ""
            rest = re.sub(r"\s+", "", words[1]) if len(words) > 1 else ""
            if directive in ("if", "ifdef", "ifndef"):
                cond = {"ifdef": "defined(%s)" % rest, "ifndef": "!defined(%s)" % rest}.get(directive, rest)
                stack.append((cond in FALSE_ON_CPU, cond))
            elif directive in ("else", "elif") and stack:
                # After a branch the CPU build always takes, every later one is dead.
                stack[-1] = (stack[-1][1] in TRUE_ON_CPU, stack[-1][1])
            elif directive == "endif" and stack:
                stack.pop()
            is_define = directive == "define"
            if is_define and not any(d for d, _ in stack):
                ok.add(number)
            if line.rstrip().endswith("\\"):
                continuing = is_define
            continue
        if not any(d for d, _ in stack):
            ok.add(number)
    return masked, ok


def tokens(masked_line):
    """(col, text, kind) of each token of a code line (0-based columns)."""
    i, n = 0, len(masked_line)
    while i < n:
        c = masked_line[i]
        if c.isspace():
            i += 1
            continue
        m = NUMBER.match(masked_line, i)
        if m and (c.isdigit() or (c == "." and i + 1 < n and masked_line[i + 1].isdigit())):
            yield i, m.group(0), "number"
            i = m.end()
            continue
        m = IDENT.match(masked_line, i)
        if m:
            yield i, m.group(0), "ident"
            i = m.end()
            continue
        for op in OPERATORS:
            if masked_line.startswith(op, i):
                yield i, op, "op"
                i += len(op)
                break
        else:
            yield i, c, "other"
            i += 1


INT = re.compile(r"^(0[xX][0-9a-fA-F']+|[0-9][0-9']*)([uUlLzZ]*)$")
FLOAT = re.compile(r"^([0-9]*\.?[0-9]*(?:[eE][+-]?[0-9]+)?)([fFlL]?)$")


def mutate_number(text):
    m = INT.match(text)
    if m:
        digits, suffix = m.group(1), m.group(2)
        if digits.lower().startswith("0x"):
            value = int(digits.replace("'", ""), 16)
            new = 1 if value == 0 else 0 if value == 1 else value + 1
            return ("0x%x" % new) + suffix
        if len(digits) > 1 and digits.startswith("0"):
            return None  # octal: leave it
        value = int(digits.replace("'", ""))
        new = 1 if value == 0 else 0 if value == 1 else value + 1
        return str(new) + suffix
    if text.lower().startswith("0x"):
        return None  # hex float
    m = FLOAT.match(text)
    if m and m.group(1) not in ("", "."):
        value = float(m.group(1))
        if value == 0.0:
            return "1.0" + m.group(2)
        half = repr(value / 2)
        return half + m.group(2)
    return None


TYPE_WORD = re.compile(r"^(?:bool|char|uchar|short|ushort|int|uint|long|ulong|half|float|double|size_t|"
                       r"u?int(?:8|16|32|64)_t)(?:2|3|4|8|16)?$")
VECTOR_BOUND = re.compile(r"\b\w+ \+ (4|8|16) (<=) [\w.>-]+")


def closing_bracket(line, col):
    """Column of the `]` closing the `[` at col, or len(line) if the line does not close it."""
    depth = 0
    for j in range(col, len(line)):
        if line[j] == "[":
            depth += 1
        elif line[j] == "]":
            depth -= 1
            if depth == 0:
                return j
    return len(line)


def equivalent_spans(line, toks):
    """[start, end) column spans of a code line whose mutants are equivalent by construction."""
    spans = []
    if re.search(r"\b(?:for|if) \(", line):
        for m in VECTOR_BOUND.finditer(line):
            spans += [(m.start(1), m.end(1)), (m.start(2), m.end(2))]
    for idx, (col, tok, _) in enumerate(toks):
        if tok != "[" or idx < 2 or toks[idx - 1][2] != "ident":
            continue
        # `type name[` or, in a declaration list, `type a[4], name[`.
        before = toks[idx - 2][1]
        if before == ",":
            k = idx - 2
            while k > 0 and toks[k][1] not in (";", "{", "}", "("):
                k -= 1
            first = toks[k + 1][1] if toks[k][1] in (";", "{", "}") else toks[k][1] if k == 0 else ""
            if not TYPE_WORD.match(first) and not (k + 2 < len(toks) and toks[k + 1][1] in ("__local", "__private", "const") and TYPE_WORD.match(toks[k + 2][1])):
                continue
        elif not TYPE_WORD.match(before):
            continue
        # A declaration `type name[...][...]`: skip every bracket group that follows the name.
        j = closing_bracket(line, col)
        while line.startswith("[", j + 1):
            j = closing_bracket(line, j + 1)
        spans.append((col, j + 1))
    return spans


def sites(root, rel):
    path = os.path.join(root, rel)
    text = open(path, encoding="utf-8").read()
    masked, ok = code_mask(text)
    original_lines = text.split("\n")
    kind = "kernel" if rel.endswith(".cl") else "host"
    for number, line in enumerate(masked.split("\n"), start=1):
        if number not in ok:
            continue
        toks = list(tokens(line))
        skip = equivalent_spans(line, toks)
        for idx, (col, tok, tkind) in enumerate(toks):
            end = col + len(tok)
            if any(a <= col < b for a, b in skip):
                continue
            spaced = col > 0 and line[col - 1] == " " and end < len(line) and line[end] == " "
            if tkind == "op" and tok in SWAPS and spaced:
                yield kind, rel, number, col, tok, SWAPS[tok]
            elif tkind == "number":
                new = mutate_number(tok)
                if new is not None and (idx == 0 or toks[idx - 1][1] != "#"):
                    yield kind, rel, number, col, tok, new
            elif tok == "[" and col > 0 and (line[col - 1].isalnum() or line[col - 1] in "_)]"):
                j = closing_bracket(line, col)
                if j >= len(line):
                    continue
                inner = original_lines[number - 1][col + 1:j]
                if not inner.strip() or inner.strip() in ("&", "=") or INT.match(inner.strip()):
                    continue  # empty, a lambda capture, or a literal (the number mutation covers it)
                whole = "[" + inner + "]"
                m = re.match(r"^(.*\S)\s*[+-]\s*1$", inner)
                new = "[" + (m.group(1) if m else inner + " + 1") + "]"
                yield kind, rel, number, col, whole, new


def all_sites(root, pattern=None):
    out = []
    for rel in candidate_files(root):
        if pattern and not re.search(pattern, rel):
            continue
        out.extend(sites(root, rel))
    return out


def main(argv):
    if len(argv) >= 2 and argv[1] == "count":
        counts = {}
        for s in all_sites(argv[2]):
            counts[s[1]] = counts.get(s[1], 0) + 1
        for f, c in counts.items():
            print("%5d %s" % (c, f))
        print("%5d total" % sum(counts.values()))
        return 0
    if len(argv) in (5, 6) and argv[1] == "plan":
        root, seed, count = argv[2], int(argv[3]), int(argv[4])
        candidates = all_sites(root, argv[5] if len(argv) == 6 else None)
        picked = random.Random(seed).sample(range(len(candidates)), min(count, len(candidates)))
        # Kernel mutants first, then host ones, each in file order: fewer rebuilds, readable reports.
        picked.sort(key=lambda i: (candidates[i][0] != "kernel", i))
        for n, i in enumerate(picked, start=1):
            kind, rel, line, col, orig, new = candidates[i]
            print("\t".join(["M%03d" % n, kind, rel, str(line), str(col), orig, new]))
        return 0
    if len(argv) == 8 and argv[1] == "apply":
        src, dst, line, col, orig, new = argv[2], argv[3], int(argv[4]), int(argv[5]), argv[6], argv[7]
        lines = open(src, encoding="utf-8").read().split("\n")
        text = lines[line - 1]
        if text[col:col + len(orig)] != orig:
            sys.exit("mutation_check.py: %s:%d:%d does not hold %r (sources changed since the plan?)" % (src, line, col, orig))
        lines[line - 1] = text[:col] + new + text[col + len(orig):]
        with open(dst, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        return 0
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
