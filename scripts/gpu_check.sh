#!/usr/bin/env bash
# One-command device check, run from an unpacked bundle (bin/gpu_check.sh) or a build tree
# (scripts/gpu_check.sh, BUILD_DIR=build): every figure the project records about a device.
#
# Usage: gpu_check.sh [--quick] [--out DIR] [STAGE...]
#   stages (default all, in this order):
#     devices  pax-ocl devices --check
#     tests    the device tests with the device selected (bin/run-tests)
#     gemm     bench_gemm D --clblast, bench_gemm tc all and tf32 all (NVIDIA), pax-ocl bench gemm memory launch
#     step     bench_train_step all: tok/s and one step's kernel-by-kernel device times
#     train    Pile126M T1024 B8 fp32 and tf32, T1024 B16 bf16, T2048 B4 fp32, 30 steps each; start-up phases,
#              tokens/s, MFU, the training pause of one checkpoint save; each run traces its step 20 (after
#              the step-20 line, so the last line's tokens/s, steps 21-30, is untouched): the log's
#              "step 20 kernels" line gives device ms per kernel, and kernels.csv has them all
#     torch    PyTorch side by side (when python3 has torch): fp32, tf32, bf16 autocast, --compile
#   --quick    small shapes and few steps: about two minutes on PoCL (tests/bundle_test.sh runs it)
#   --budget S seconds for the whole check (default 570: a 10-minute device slot with room to copy the
#              results back); a stage that would start past it is recorded "skipped: over the time
#              budget", and the torch stage starts no run past it
# A failed stage does not stop the others; each stage's log goes to results/<date>-<device>/ (or
# --out), with summary.md (one line per stage, then the key figures), stages.csv and step.csv,
# train.csv, kernels.csv, torch.csv, tests.csv from the logs, all of them in results.json, and with gnuplot
# tokens_per_s.png.
# Exit status: 0 when every stage passed or was skipped, 1 otherwise.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
quick=0
budget=570
out=""
stages=()
while (($#)); do
  case "$1" in
    --quick) quick=1 ;;
    --out) out=$2; shift ;;
    --out=*) out=${1#--out=} ;;
    --budget) budget=$2; shift ;;
    --budget=*) budget=${1#--budget=} ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    devices|tests|gemm|step|train|torch) stages+=("$1") ;;
    *) echo "gpu_check: unknown argument '$1'; stages are devices tests gemm step train torch, flags --quick --out DIR --budget S" >&2; exit 2 ;;
  esac
  shift
done
((${#stages[@]})) || stages=(devices tests gemm step train torch)
[[ $budget =~ ^[0-9]+$ ]] || { echo "gpu_check: --budget $budget: give whole seconds, e.g. --budget 570" >&2; exit 2; }

# Programs: a bundle's launchers, or a build tree's binaries.
if [[ -f "$here/../env.sh" ]]; then
  bundle=$(cd "$here/.." && pwd)
  run() { "$bundle/bin/run" "$@"; }
  torch_reference=$bundle/share/torch_reference.py
  run_tests=$bundle/bin/run-tests
else
  src=$(cd "$here/.." && pwd)
  build=$(cd "${BUILD_DIR:-$src/build}" && pwd)
  run() {
    local p=$1; shift
    local f
    for f in "$build/$p" "$build/tests/$p" "$build/bench/$p"; do [[ -x $f ]] && { "$f" "$@"; return; }; done
    echo "gpu_check: no program $p in $build" >&2; return 127
  }
  torch_reference=$src/bench/torch_reference.py
  run_tests=$src/scripts/bundle/run_tests.sh
  export PAX_OCL_TEST_BIN_DIR=$build/tests
fi

gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)
device_slug=$(echo "${gpu_name:-$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)}" | tr -cs 'A-Za-z0-9' '-' | sed 's/^-//; s/-$//')
out=${out:-results/$(date -u +%Y-%m-%d)-${device_slug:-device}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary=$out/summary.md
status_file=$out/stages.csv
echo "stage,status,seconds" >"$status_file"
export PAX_OCL_CACHE_DIR=${PAX_OCL_CACHE_DIR:-$out/program-cache}
# The GPU when there is one; PoCL's CPU devices otherwise.
devices_flag="--devices=auto"

stage() {  # name command...: runs one stage, logs to $out/<name>.log, records pass/fail/skipped
  local name=$1; shift
  local t0=$SECONDS rc
  if ((SECONDS >= budget)); then
    echo "$name,skipped: over the time budget ($budget s),0" >>"$status_file"
    echo "gpu_check: $name: skipped: over the time budget ($budget s)" >&2
    return
  fi
  echo "gpu_check: $name ..." >&2
  "$@" >"$out/$name.log" 2>&1
  rc=$?
  local s=pass
  ((rc == 0)) || s="fail (exit $rc)"
  ((rc == 77)) && s="skipped: $(tail -n1 "$out/$name.log")"
  echo "$name,$s,$((SECONDS - t0))" >>"$status_file"
  echo "gpu_check: $name: $s ($((SECONDS - t0)) s)" >&2
}

stage_devices() {
  run pax-ocl devices --check $devices_flag
}

stage_tests() {
  local flags=(--jobs 4)  # four binaries at once: mostly the driver compiling programs on the host
  ((quick)) && flags=(--quick)
  "$run_tests" "${flags[@]}" --out "$out/tests"
}

stage_gemm() {
  local reps=5 rc=0
  ((quick)) && reps=1
  if ((quick)); then
    run bench_gemm B "$reps" --clblast || rc=1
  else
    run bench_gemm D "$reps" --clblast || rc=1
    run bench_gemm tc 3 all || rc=1     # each prints its own "skipped" line without such tensor cores
    run bench_gemm tf32 3 all || rc=1
  fi
  local q=()
  ((quick)) && q=(--quick)
  run pax-ocl bench gemm memory launch "${q[@]}" $devices_flag --output="$out/bench" || rc=1
  return $rc
}

stage_step() {
  if ((quick)); then run bench_train_step A 2; else run bench_train_step all 5; fi
}

# One training run: NAME and --fdl flags; keeps its log and pulls tokens/s out of it.
train_run() {
  local name=$1; shift
  local dir=$out/train-$name
  rm -rf "$dir"
  run pax-ocl train "$@" --fdl.ICI_MESH_SHAPE=[1,1,1] --fdl.DCN_MESH_SHAPE=[1,1,1] \
    --fdl.EVAL_INTERVAL_STEPS=0 --job_log_dir="$dir" $devices_flag 2>&1 | tee "$out/train-$name.log"
  return "${PIPESTATUS[0]}"
}

stage_train() {
  local rc=0
  if ((quick)); then
    train_run default-3 --fdl_config=Default --fdl.MAX_STEPS=3 --fdl.TRACE_STEPS=[2] || rc=1
    train_run default-ckpt --fdl_config=Default --fdl.MAX_STEPS=4 --fdl.CHECKPOINT_EVERY_N_STEPS=2 \
      --fdl.ENABLE_CHECKPOINT_SAVING=true || rc=1
    return $rc
  fi
  local common=(--fdl_config=Pile126M --fdl.MAX_STEPS=30 --fdl.CHECKPOINT_EVERY_N_STEPS=1000000 --fdl.TRACE_STEPS=[20])
  train_run t1024-b8-fp32 "${common[@]}" --fdl.MAX_SEQ_LEN=1024 --fdl.PERCORE_BATCH_SIZE=8 --fdl.FPROP_DTYPE=float32 || rc=1
  train_run t1024-b8-tf32 "${common[@]}" --fdl.MAX_SEQ_LEN=1024 --fdl.PERCORE_BATCH_SIZE=8 --fdl.FPROP_DTYPE=float32 \
    --fdl.MATMUL_PRECISION=tf32 || rc=1
  train_run t1024-b16-bf16 "${common[@]}" --fdl.MAX_SEQ_LEN=1024 --fdl.PERCORE_BATCH_SIZE=16 --fdl.FPROP_DTYPE=bfloat16 || rc=1
  train_run t2048-b4-fp32 "${common[@]}" --fdl.MAX_SEQ_LEN=2048 --fdl.PERCORE_BATCH_SIZE=4 --fdl.FPROP_DTYPE=float32 || rc=1
  train_run t1024-b8-ckpt --fdl_config=Pile126M --fdl.MAX_STEPS=12 --fdl.CHECKPOINT_EVERY_N_STEPS=10 \
    --fdl.ENABLE_CHECKPOINT_SAVING=true --fdl.MAX_SEQ_LEN=1024 --fdl.PERCORE_BATCH_SIZE=8 --fdl.FPROP_DTYPE=float32 || rc=1
  return $rc
}

stage_torch() {
  local py
  py=$(command -v python3) || { echo "no python3"; return 77; }
  "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
    { echo "no PyTorch with CUDA in $py"; return 77; }
  # Eager: the train stage's shapes, D and LD in fp32, tf32 and bf16 autocast, in one process
  # (CUDA and the imports start once); then torch.compile (about a minute of compiling per shape) on
  # the two Pile126M shapes the targets name, as long as the budget lasts.
  local rc=0 steps=10 eager=P1024B8,P1024B16,P2048B4,D,LD compiled=P1024B16,P1024B8
  ((quick)) && { steps=2; eager=A; compiled=A; }
  # A run starts only with its expected length left in the budget: 20 s eager, 90 s compiled.
  local left=$((budget - SECONDS - 20))
  ((left > 0)) || { echo "skipped: over the time budget"; return 77; }
  "$py" "$torch_reference" --device cuda --precision fp32,tf32,bf16 --config "$eager" --steps "$steps" --warmup 2 \
    --sdpa --deadline "$left" || rc=1
  left=$((budget - SECONDS - 90))
  ((left > 0)) || { echo "skipped torch.compile: over the time budget"; return $rc; }
  "$py" "$torch_reference" --device cuda --precision bf16 --compile --config "$compiled" --steps "$steps" --warmup 3 \
    --sdpa --deadline "$left" || rc=1
  return $rc
}

for s in "${stages[@]}"; do
  stage "$s" "stage_$s"
done

# Tables from the logs: step.csv, train.csv, torch.csv, tests.csv (when their stage ran), then
# results.json (every table as an array of objects) and, with gnuplot, tokens_per_s.png.
if [[ -f $out/step.log ]]; then
  awk 'BEGIN { print "config,shape,step_ms,tok_s,gemm_share_pct" }
       $0 ~ / tok\/s / && $0 ~ / GEMM / {
         shape = $2 " " $3 " " $4 " " $5 " " $6 " " $7; ms = ""; tok = ""; g = ""
         for (i = 1; i <= NF; i++) {
           if ($i == "step" && ms == "") ms = $(i + 1)
           if ($i == "tok/s") tok = $(i - 1)
           if ($i == "GEMM") { g = $(i + 1); sub(/%/, "", g) }
         }
         print $1 "," shape "," ms "," tok "," g
       }' "$out/step.log" >"$out/step.csv"
fi
if compgen -G "$out/train-*.log" >/dev/null; then
  echo "run,tok_s,mfu_pct,first_step_ms,checkpoint_pauses_ms" >"$out/train.csv"
  for f in "$out"/train-*.log; do
    awk -v run="$(basename "$f" .log | sed 's/^train-//')" '
      / tok\/s / && /^step / { for (i = 1; i <= NF; i++) { if ($i == "tok/s") tok = $(i - 1); if ($i == "MFU") { m = $(i + 1); sub(/%/, "", m) } } }
      /first step done/ { for (i = 1; i <= NF; i++) if ($i == "done") first = $(i + 1) }
      /training paused/ { for (i = 1; i <= NF; i++) if ($i == "paused") p = p (p == "" ? "" : " ") $(i + 1) }
      END { print run "," tok "," m "," first "," p }' "$f" >>"$out/train.csv"
  done
fi
if compgen -G "$out/train-*.log" >/dev/null; then
  # One row per kernel of each traced step: "step N kernels (...): name ms (calls)  name ms (calls) ...".
  echo "run,step,kernel,device_ms,calls" >"$out/kernels.csv"
  for f in "$out"/train-*.log; do
    awk -v run="$(basename "$f" .log | sed 's/^train-//')" '
      / kernels \(device ms, calls; / {
        step = ""; for (i = 1; i < NF; i++) if ($i == "step") { step = $(i + 1); break }
        sub(/.*devices?\): /, "")
        n = split($0, f, " ")
        for (i = 1; i + 2 <= n; i += 3) { c = f[i + 2]; gsub(/[()]/, "", c); print run "," step "," f[i] "," f[i + 1] "," c }
      }' "$f" >>"$out/kernels.csv"
  done
fi
if [[ -f $out/torch.log ]]; then
  awk 'BEGIN { print "impl,config,step_ms,tok_s" }
       /^torch/ && / tok\/s / { ms = ""; tok = ""
         for (i = 1; i <= NF; i++) { if ($i == "step") ms = $(i + 1); if ($i == "tok/s") tok = $(i - 1) }
         print $1 "," $2 "," ms "," tok }' "$out/torch.log" >"$out/torch.csv"
fi
if [[ -f $out/tests/summary.txt ]]; then
  awk 'BEGIN { print "binary,passed,failed,skipped" } /passed/ && !/^ / { print $1 "," $2 "," $4 "," $6 }' \
    "$out/tests/summary.txt" >"$out/tests.csv"
fi
{
  echo "{"
  echo "  \"date\": \"$(date -u +%Y-%m-%dT%H:%MZ)\", \"device\": \"${gpu_name:-none}\","
  first=1
  for t in stages step train kernels torch tests; do
    [[ -f $out/$t.csv ]] || continue
    ((first)) || echo ","
    first=0
    printf '  "%s": ' "$t"
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) h[i] = $i; n = NF; printf "["; next }
             { printf "%s{", (NR > 2 ? ", " : ""); for (i = 1; i <= n; i++) {
                 v = $i; gsub(/"/, "", v)
                 if (v ~ /^-?[0-9]+(\.[0-9]+)?$/) printf "%s\"%s\": %s", (i > 1 ? ", " : ""), h[i], v
                 else printf "%s\"%s\": \"%s\"", (i > 1 ? ", " : ""), h[i], v }
               printf "}" }
             END { if (NR == 0) printf "["; printf "]" }' "$out/$t.csv"
  done
  echo
  echo "}"
} >"$out/results.json"
if command -v gnuplot >/dev/null && [[ -s $out/step.csv ]]; then
  gnuplot -e "set terminal png size 800,450; set output '$out/tokens_per_s.png'; set datafile separator ',';
              set style data histograms; set style fill solid; set ylabel 'tokens/s'; set key off;
              set title 'bench_train_step: tokens/s per config'; plot '$out/step.csv' using 4:xtic(1) skip 1" 2>/dev/null || true
fi

{
  echo "# gpu_check: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "device: ${gpu_name:-no NVIDIA GPU} ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores)"
  [[ -n ${bundle:-} ]] && echo "bundle: $(cat "$bundle/VERSION" 2>/dev/null)"
  echo
  echo "| stage | status | seconds |"
  echo "|---|---|---|"
  tail -n +2 "$status_file" | awk -F, '{ printf "| %s | %s | %s |\n", $1, $2, $3 }'
  echo
  [[ -f $out/devices.log ]] && { echo '## devices'; echo '```'; grep -v '^\[' "$out/devices.log" | head -40; echo '```'; }
  [[ -f $out/tests/summary.txt ]] && { echo '## tests'; echo '```'; cat "$out/tests/summary.txt"; echo '```'; }
  [[ -f $out/step.log ]] && { echo '## training step (bench_train_step)'; echo '```'; grep -vE '^\[' "$out/step.log" | head -60; echo '```'; }
  for f in "$out"/train-*.log; do
    [[ -f $f ]] || continue
    echo "## $(basename "$f" .log)"; echo '```'
    grep -iE 'tok/s|tokens/s|mfu|start-up|first step|checkpoint|paused|error|kernels \(' "$f" | tail -n 12
    echo '```'
  done
  [[ -f $out/torch.log ]] && { echo '## PyTorch'; echo '```'; grep -E '^torch' "$out/torch.log"; echo '```'; }
} >"$summary"
cat "$summary"
grep -q ',fail' "$status_file" && exit 1
exit 0
