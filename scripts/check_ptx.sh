#!/bin/bash
# Offline check of the programs a GPU runs, without a GPU: each program is compiled to PTX with
# clang (OpenCL C 1.2, the dtype prelude prepended as program_loader.cpp does) and assembled by
# NVIDIA's ptxas for sm_90, which validates it (inline PTX included) and reports registers, shared
# memory and spills per kernel. Exits non-zero on a compile or ptxas error, an unresolved builtin,
# any spill or a stack frame over 16 bytes (a register array demoted to local memory). A dev tool,
# not a build dependency (docs/benchmarks.md has its table).
#
#   scripts/check_ptx.sh [--table] [--portable] [PROGRAM... | TILE...]
#
# Programs (default): every kernels_cl/*_gpu.cl (built with -DPAX_WG=$PAX_WG, default 256, after
# group_reduce.cl as program_loader.cpp does; flash_attention_gpu.cl among them), gemm_direct.cl
# when it exists, gemm_mma.cl (every MmaTile candidate of
# tensor_core_gemm.cpp, A/B bf16 and f16, each C dtype, cp.async on and off; A/B TF32 on the tile that
# fits 48 KiB), flash_attention_mma.cl (its `// check_ptx:` tiles, bf16 and f16) and tensor_core_probe.cl.
# A program that stores activations (uses act_t) is built once per ACT_DTYPES (default "float32
# bfloat16"; float16 too). A program may name its build variants itself, one line each:
#   // check_ptx: -DHS=64 -DFA_WG=128
#   --portable  also the portable programs (kernels_cl/x.cl), assumed launched in PAX_WG groups.
#   --table     a Markdown table (kernel, program, build, registers, shared, stack, spills, work-group,
#               theoretical occupancy on an H100) instead of the per-build report; gemm_mma only for
#               its default tile, A/B bf16, and TF32 on its tile, C float32, cp.async (unless TILEs are given).
#   PROGRAM     only these programs (file stems, e.g. layernorm_gpu gemm_mma).
#   TILE        gemm_mma tiles "BMxBNxBKxWMxWNxSTAGES", "...xSTAGESx1" for the swizzled layout (16-bit only).
# Tools (env): CLANG (default: the newest clang-NN on PATH; clang older than 16 knows no sm_90, so
# its PTX targets sm_80 and ptxas still assembles it for sm_90), PTXAS (default: ptxas on PATH, else
# /usr/local/cuda/bin/ptxas; `pip install nvidia-cuda-nvcc-cu12` ships one), LIBDEVICE (NVIDIA's
# libdevice.10.bc for the math builtins; default: beside ptxas, ../nvvm/libdevice/), SM (sm_90).
# scripts/check_ptx_shim.cl defines the OpenCL builtins clang's NVPTX target lacks; a kernel calling
# one it does not have fails with its name.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
kdir="$root/kernels_cl"
table=0 portable=0
programs=() tiles=()
for a in "$@"; do
  case "$a" in
    --table) table=1 ;;
    --portable) portable=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    [0-9]*x[0-9]*x[0-9]*x[0-9]*x[0-9]*x[0-9]*) tiles+=("$a") ;;
    -*) echo "check_ptx.sh: unknown option $a (see --help)" >&2; exit 2 ;;
    *) programs+=("${a%.cl}") ;;
  esac
done
wg="${PAX_WG:-256}"
stack_limit=16  # bytes: a struct kept across a barrier, outside any loop (pax_softmax_chunk_stats)
sm="${SM:-sm_90}"
act_dtypes="${ACT_DTYPES:-float32 bfloat16}"

clang="${CLANG:-}"
if [ -z "$clang" ]; then
  for v in 22 21 20 19 18 17 16 15 14; do
    if command -v "clang-$v" > /dev/null; then clang="clang-$v"; break; fi
  done
  clang="${clang:-clang}"
fi
ptxas="${PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}"
libdevice="${LIBDEVICE:-$(dirname "$(readlink -f "$ptxas")")/../nvvm/libdevice/libdevice.10.bc}"
for tool in "$clang" "$ptxas"; do
  command -v "$tool" > /dev/null || { echo "check_ptx.sh: $tool not found (see the header of $0)" >&2; exit 2; }
done
[ -f "$libdevice" ] || { echo "check_ptx.sh: no libdevice at $libdevice (set LIBDEVICE)" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The PTX target: sm_90 where this clang knows it, else sm_80 (everything the kernels use exists
# there; ptxas -arch=sm_90 takes PTX of an older target).
ptx_sm="$sm"
echo '__kernel void k(__global float* p) { p[0] = 1.0f; }' > "$work/probe.cl"
if ! "$clang" -target nvptx64-nvidia-cuda -march="$sm" -x cl -cl-std=CL1.2 -S -o /dev/null "$work/probe.cl" 2> /dev/null; then
  ptx_sm=sm_80
  echo "note: $clang knows no $sm: PTX for $ptx_sm, assembled by ptxas for $sm" >&2
fi

rows="$work/rows.tsv"  # program, build, kernel, registers, smem, stack, spill stores, spill loads, work-group
: > "$rows"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# compile_check PROGRAM LABEL DEFINES...: clang -> LLVM IR (libdevice linked) -> PTX, the kernels'
# reqd_work_group_size written into the PTX as .reqntid (NVIDIA's compiler does; clang's OpenCL
# path does not), then ptxas -v; one row per kernel into $rows.
compile_check() {
  local program=$1 label=$2
  shift 2
  # Programs built with -DPAX_WG also get the work-group helpers (program_loader.cpp does the same).
  {
    cat "$kdir/dtype.cl" "$kdir/gelu_math.cl"
    case " $* " in *" -DPAX_WG="*) cat "$kdir/group_reduce.cl" ;; esac
    case "$program" in gemm_mma | flash_attention_mma) cat "$kdir/mma_ops.cl" ;; esac
    case "$program" in gemm_mma | gemm_direct) cat "$kdir/gemm_epilogue.cl" ;; esac
    echo '#line 1'
    cat "$kdir/$program.cl"
  } > "$work/in.cl"
  # -fgnu-keywords: clang's OpenCL mode lacks the `asm` keyword NVIDIA's compiler takes.
  if ! "$clang" -target nvptx64-nvidia-cuda -march="$ptx_sm" -x cl -cl-std=CL1.2 -cl-mad-enable \
      -Xclang -fdeclare-opencl-builtins -Xclang -finclude-default-header -fgnu-keywords \
      -include "$root/scripts/check_ptx_shim.cl" -Xclang -mlink-builtin-bitcode -Xclang "$libdevice" \
      -fgnu89-inline -Wno-unknown-cuda-version -DPAX_NVIDIA_PTX "$@" -emit-llvm -S -O2 -o "$work/in.ll" "$work/in.cl" 2> "$work/clang.err"; then
    sed 's/^/  /' "$work/clang.err" >&2
    fail "$program [$label]: clang error"
    return
  fi
  "$clang" -target nvptx64-nvidia-cuda -march="$ptx_sm" -Wno-override-module -S -O2 -o "$work/raw.ptx" "$work/in.ll"
  # kernel -> "x, y, z" from !reqd_work_group_size.
  awk '/^define .*spir_kernel/ && /!reqd_work_group_size/ {
         match($0, /@[A-Za-z0-9_]+\(/); name = substr($0, RSTART + 1, RLENGTH - 2)
         match($0, /!reqd_work_group_size ![0-9]+/); split(substr($0, RSTART, RLENGTH), m, " "); md[name] = m[2] }
       /^![0-9]+ = !\{i32 [0-9]+, i32 [0-9]+, i32 [0-9]+\}$/ { node[$1] = $0 }
       END { for (k in md) if (md[k] in node) { s = node[md[k]]; gsub(/.*\{|\}|i32 /, "", s); print k "\t" s } }' \
    "$work/in.ll" > "$work/reqd.tsv"
  awk -F'\t' 'FILENAME == ARGV[1] { reqd[$1] = $2; next }
       /\.entry [A-Za-z0-9_]+\(/ { match($0, /\.entry [A-Za-z0-9_]+/); cur = substr($0, RSTART + 7, RLENGTH - 7)
                                   if ($0 ~ /\)$/) { print; if (cur in reqd) print ".reqntid " reqd[cur]; cur = ""; next } }
       cur != "" && /^\)$/ { print; if (cur in reqd) print ".reqntid " reqd[cur]; cur = ""; next }
       { print }' "$work/reqd.tsv" "$work/raw.ptx" > "$work/out.ptx"
  local unresolved
  unresolved=$(awk '/^\.extern \.func/ { print $NF }' "$work/out.ptx" | sort -u | tr '\n' ' ')
  if [ -n "$unresolved" ]; then
    fail "$program [$label]: builtins missing from scripts/check_ptx_shim.cl: $unresolved"
    return
  fi
  if ! "$ptxas" -arch="$sm" -v -o /dev/null "$work/out.ptx" > "$work/ptxas.log" 2>&1; then
    sed 's/^/  /' "$work/ptxas.log" >&2
    fail "$program [$label]: ptxas error"
    return
  fi
  awk -v program="$program" -v label="$label" -v wg="$wg" '
       FILENAME == ARGV[1] { split($0, t, "\t"); split(t[2], d, ", "); reqd[t[1]] = d[1] * d[2] * d[3]; next }
       /Compiling entry function/ { split($0, q, "\047"); cur = q[2]; entry[cur] = 1 }
       /Function properties for/ { cur = $NF }
       /bytes stack frame/ { split($0, w, " "); stack[cur] = w[1]; st[cur] = w[5]; ld[cur] = w[9] }
       /Used [0-9]+ registers/ && (cur in entry) {
         regs = $0; sub(/.*Used /, "", regs); sub(/ registers.*/, "", regs)
         smem = 0; if ($0 ~ /bytes smem/) { smem = $0; sub(/ bytes smem.*/, "", smem); sub(/.*, /, "", smem) }
         print program "\t" label "\t" cur "\t" regs "\t" smem "\t" stack[cur] + 0 "\t" st[cur] + 0 "\t" ld[cur] + 0 "\t" ((cur in reqd) ? reqd[cur] : wg "*")
       }
       END { for (f in st) if (!(f in entry) && st[f] + ld[f] > 0) print program "\t" label "\t" f "\t-\t-\t" stack[f] + 0 "\t" st[f] "\t" ld[f] "\t-" }' \
    "$work/reqd.tsv" "$work/ptxas.log" >> "$rows"
}

act_flag() {
  case "$1" in
    float32) echo -DPAX_ACT_F32 ;; bfloat16) echo -DPAX_ACT_BF16 ;; float16) echo -DPAX_ACT_F16 ;;
    *) echo "check_ptx.sh: unknown ACT_DTYPES entry $1" >&2; exit 2 ;;
  esac
}

# build_program PROGRAM [DEFINES...]: every variant (its `// check_ptx:` lines) x act dtype.
build_program() {
  local program=$1
  shift
  local src="$kdir/$program.cl"
  local variants=()
  mapfile -t variants < <(sed -n 's|^// check_ptx: *||p' "$src")
  [ ${#variants[@]} -gt 0 ] || variants=("")
  local dtypes=(none)
  if grep -q '\bact_\(t\|load\|store\)' "$src"; then read -ra dtypes <<< "$act_dtypes"; fi
  for v in "${variants[@]}"; do
    for dt in "${dtypes[@]}"; do
      local defs=("$@") label="$v"
      # shellcheck disable=SC2206
      [ -n "$v" ] && defs+=($v)
      if [ "$dt" != none ]; then defs+=("$(act_flag "$dt")"); label="$dt${v:+ $v}"; fi
      compile_check "$program" "${label:--}" "${defs[@]}"
    done
  done
}

wanted() {  # wanted PROGRAM: on the command line's list, or no list given
  [ ${#programs[@]} -eq 0 ] && return 0
  local p
  for p in "${programs[@]}"; do [ "$p" = "$1" ] && return 0; done
  return 1
}

gpu_programs=()
for f in "$kdir"/*_gpu.cl; do [ -e "$f" ] && gpu_programs+=("$(basename "$f" .cl)"); done
for p in gemm_direct; do
  if [ -f "$kdir/$p.cl" ]; then gpu_programs+=("$p")
  elif wanted "$p"; then echo "note: kernels_cl/$p.cl does not exist yet: skipped" >&2; fi
done
for p in "${gpu_programs[@]}"; do wanted "$p" && build_program "$p" "-DPAX_WG=$wg"; done
if [ "$portable" = 1 ]; then
  for f in "$kdir"/*.cl; do
    p="$(basename "$f" .cl)"
    case "$p" in dtype | gelu_math | group_reduce | mma_ops | gemm_epilogue | *_cpu | *_gpu | gemm_mma | flash_attention_mma | tensor_core_probe | gemm_direct) continue ;; esac
    wanted "$p" && build_program "$p" "-DPAX_WG=$wg"
  done
fi

if wanted tensor_core_probe; then
  for p in BF16 F16 TF32; do compile_check tensor_core_probe "PROBE_$p" -DPROBE_$p; done
fi
if wanted flash_attention_mma; then
  # Its `// check_ptx:` tiles, operands and activations in the same 16-bit dtype.
  mapfile -t mma_variants < <(sed -n 's|^// check_ptx: *||p' "$kdir/flash_attention_mma.cl")
  for v in "${mma_variants[@]}"; do
    for ab in BF16 F16; do
      # shellcheck disable=SC2086
      compile_check flash_attention_mma "$ab $v" -DMMA_AB_$ab -DPAX_ACT_$ab $v
    done
  done
fi
if wanted gemm_mma; then
  # TF32 (MATMUL_PRECISION=tf32): 4-byte tiles, so only the candidate that fits 48 KiB of shared
  # memory (NVIDIA's OpenCL limit), unless TILEs are given.
  tf32_tiles=()
  for t in "${tiles[@]}"; do [[ "$t" == *x*x*x*x*x*x1 ]] || tf32_tiles+=("$t"); done  # TF32 rows are never swizzled
  [ ${#tf32_tiles[@]} -gt 0 ] || tf32_tiles=(128x128x16x64x32x2)
  mma_ab=(BF16 F16) mma_c=(float32 bfloat16 float16) mma_async=(1 0)
  if [ "$table" = 1 ]; then
    mma_ab=(BF16) mma_c=(float32) mma_async=(1)
    [ ${#tiles[@]} -gt 0 ] || tiles=(128x128x32x64x32x2)  # MmaTile's default
  fi
  [ ${#tiles[@]} -gt 0 ] || tiles=(128x128x32x64x32x2 128x128x32x64x32x3x1 128x128x32x64x64x3x1 256x128x32x64x64x2x1
                                    128x256x32x64x64x2x1 128x128x16x64x32x3 128x128x16x64x32x4 128x256x16x64x64x2
                                    256x128x16x64x64x2 128x128x32x32x64x2 128x128x16x64x32x2)
  mma_builds() {  # AB TILE...
    local ab=$1 t c async; shift
    for t in "$@"; do
      IFS=x read -r bm bn bk wm wn st sw <<< "$t"
      for c in "${mma_c[@]}"; do
        for async in "${mma_async[@]}"; do
          compile_check gemm_mma "$t AB=$ab C=$c async=$async" -DMMA_AB_$ab "$(act_flag "$c")" -DASYNC_COPY=$async \
            -DBM="$bm" -DBN="$bn" -DBK="$bk" -DWM="$wm" -DWN="$wn" -DSTAGES="$st" -DSWIZZLE="${sw:-0}"
        done
      done
    done
  }
  for ab in "${mma_ab[@]}"; do mma_builds "$ab" "${tiles[@]}"; done
  mma_builds TF32 "${tf32_tiles[@]}"
  # The bias / GELU epilogue (-DGEMM_EPILOGUE=1: TensorCoreGemm::run_fused) on the first tile.
  for ab in "${mma_ab[@]}" TF32; do
    t=${tiles[0]}
    [ "$ab" = TF32 ] && t=${tf32_tiles[0]}
    IFS=x read -r bm bn bk wm wn st sw <<< "$t"
    c=float32
    [ "$ab" = TF32 ] || c=$(echo "$ab" | sed 's/BF16/bfloat16/; s/F16/float16/')
    compile_check gemm_mma "$t AB=$ab C=$c async=1 epilogue" -DMMA_AB_$ab "$(act_flag "$c")" -DASYNC_COPY=1 \
      -DBM="$bm" -DBN="$bn" -DBK="$bk" -DWM="$wm" -DWN="$wn" -DSTAGES="$st" -DSWIZZLE="${sw:-0}" -DGEMM_EPILOGUE=1
  done
fi

# Theoretical occupancy on an H100 (SM 9.0), as CUDA's occupancy calculator: 65536 registers per
# SM in 4 sub-partitions, allocated per warp in units of 256; 64 warps, 32 blocks and 2048
# threads per SM; 228 KiB of shared memory per SM, 227 KiB per block, 1 KiB reserved per block.
occupancy_awk='
function occupancy(regs, smem, wg,    w, rpw, br, bs, bw, b, lim) {
  if (regs == "-") return "-"
  regs += 0; smem += 0; wg += 0
  w = int((wg + 31) / 32)
  if (regs > 255 || wg > 1024 || smem > 232448) return "0% (launch fails)"
  rpw = int((regs * 32 + 255) / 256) * 256; if (rpw == 0) rpw = 256
  br = int(int(16384 / rpw) * 4 / w)
  bs = int(233472 / (smem + 1024))
  bw = int(64 / w)
  b = 32; lim = "blocks"
  if (bw < b) { b = bw; lim = "warps" }
  if (br < b) { b = br; lim = "registers" }
  if (bs < b) { b = bs; lim = "shared" }
  return sprintf("%d%% (%d blocks, %s)", int(100 * b * w / 64 + 0.5), b, lim)
}'
if [ "$table" = 1 ]; then
  echo "| kernel | program | build | registers | shared bytes | stack bytes | spills (st/ld bytes) | work-group | occupancy (H100) |"
  echo "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"
  # group_reduce.cl's kernels (pax_*) come with every GPU twin: listed once per build, as group_reduce.
  awk -F'\t' "$occupancy_awk"'
    $3 ~ /^pax_/ { $1 = "group_reduce"; split($2, w, " "); $2 = w[1]; if (seen[$3 "\t" $2]++) next }
    { wgn = $9; sub(/\*/, "", wgn)
      printf "| %s | %s | %s | %s | %s | %s | %s/%s | %s | %s |\n", $3, $1, $2, $4, $5, $6, $7, $8, $9, occupancy($4, $5, wgn) }' "$rows"
  if grep -q '\*$' "$rows"; then
    echo
    echo "\\* no reqd_work_group_size: assumed launched in groups of $wg (PAX_WG)."
  fi
else
  awk -F'\t' "$occupancy_awk"'
    { if ($1 "\t" $2 != last) { print "== " $1 " [" $2 "]"; last = $1 "\t" $2 }
      wgn = $9; sub(/\*/, "", wgn)
      printf "  %-32s %3s registers, %6s bytes smem, %4s bytes stack, spills %s/%s bytes, group %s: %s\n",
             $3, $4, $5, $6, $7, $8, $9, occupancy($4, $5, wgn) }' "$rows"
fi
spills=$(awk -F'\t' '$7 + $8 > 0' "$rows" | wc -l)
[ "$spills" -eq 0 ] || fail "$spills kernel(s) spill registers (spill stores/loads above)"
# A stack frame beyond a small struct is a register array the compiler could not keep in registers
# (a loop indexing it not unrolled, or a brace initialiser turned memset): its loads and stores go
# to local memory on every use (flash attention's forward had 480 bytes, in its main loop).
stacked=$(awk -F'\t' -v limit="$stack_limit" '$6 > limit { print $1 " " $3 " (" $6 " bytes)" }' "$rows" | sort -u)
[ -z "$stacked" ] || fail "stack frames over $stack_limit bytes (register arrays in local memory): $(echo "$stacked" | tr '\n' ';' | sed 's/;$//; s/;/, /g')"
kernels=$(wc -l < "$rows")
if [ "$failures" -gt 0 ]; then
  echo "check_ptx.sh: $failures failure(s), $kernels kernel(s) assembled" >&2
  exit 1
fi
echo "check_ptx.sh: $kernels kernel(s) assembled for $sm, no spills, no stack frame over $stack_limit bytes" >&2
