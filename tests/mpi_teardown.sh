#!/usr/bin/env bash
# A collective that a peer never joins must not hang teardown (tests/mpi_teardown.cpp): rank 0's
# communicator is destroyed within seconds, its waiters get errors, and the job ends non-zero
# promptly. Usage: mpi_teardown.sh MPIEXEC MPI_TEARDOWN_BINARY MODE (mpi|averager|fsdp)
set -u
mpiexec=$1 binary=$2 mode=$3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$mpiexec" --oversubscribe -np 2 "$binary" "$mode" >"$out" 2>&1 &
launcher=$!
start=$(date +%s)
while kill -0 $launcher 2>/dev/null; do
  if (( $(date +%s) - start > 30 )); then
    echo "FAIL: the job still runs 30 s later (a destructor waits for a collective rank 1 never joins)"
    kill -TERM $launcher; sleep 3; kill -KILL $launcher 2>/dev/null
    cat "$out"; exit 1
  fi
  sleep 0.2
done
wait $launcher
rc=$?
elapsed=$(( $(date +%s) - start ))
cat "$out"
[[ $rc -ne 0 ]] || { echo "FAIL: the job exited 0"; exit 1; }
seconds=$(sed -n 's/^rank 0: past the destructor in \([0-9.]*\) s$/\1/p' "$out")
[[ -n $seconds ]] || { echo "FAIL: rank 0 never got past the communicator's destructor"; exit 1; }
awk -v s="$seconds" 'BEGIN { exit !(s < 5) }' || { echo "FAIL: the destructor took ${seconds} s"; exit 1; }
if grep -q "^rank 0: operation .* completed" "$out"; then echo "FAIL: an operation rank 1 never joined completed"; exit 1; fi
[[ $(grep -c "^rank 0: operation .* failed" "$out") -ge 1 ]] || { echo "FAIL: no waiter was released with an error"; exit 1; }
echo "PASS: the job ended with status $rc ${elapsed}s after start; the destructor took ${seconds} s"
