#!/usr/bin/env bash
# A real Slurm cluster of N emulated nodes on this one machine (slurmctld + N slurmd, munge), for
# trying the sbatch scripts and for the integration test. No systemd needed: the daemons are
# started directly and stopped by the PIDs they wrote. Everything lives under DIR (config, state,
# logs), on its own ports, so it does not touch a system Slurm.
#   scripts/slurm/local_cluster.sh up DIR [NODES (default 2)] [CPUS_PER_NODE (default 2)]
#   export SLURM_CONF=DIR/slurm.conf    # then sbatch, squeue, scontrol ... talk to it
#   scripts/slurm/local_cluster.sh down DIR
# Env: SLURM_PORT_BASE (default 16817: controller, +1 slurmd, +10.. one per node).
# Installs slurmctld, slurmd, slurm-client and munge from Debian when they are missing (root).
set -euo pipefail
action=${1:?usage: local_cluster.sh up|down DIR [NODES] [CPUS_PER_NODE]}
dir=${2:?usage: local_cluster.sh up|down DIR [NODES] [CPUS_PER_NODE]}
nodes=${3:-2}
cpus=${4:-2}
base=${SLURM_PORT_BASE:-16817}

down() {
  for pidfile in "$dir"/slurmd-*.pid "$dir"/slurmctld.pid "$dir"/munged.pid; do
    [[ -f $pidfile ]] || continue
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile"
  done
}

if [[ $action == down ]]; then
  down
  exit 0
fi
[[ $action == up ]] || { echo "local_cluster.sh: unknown action '$action' (up or down)" >&2; exit 2; }

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch >/dev/null ||
   ! command -v munged >/dev/null; then
  [[ $(id -u) == 0 ]] || { echo "local_cluster.sh: Slurm is not installed; as root: apt-get install slurmctld slurmd slurm-client munge" >&2; exit 2; }
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge \
    </dev/null >/dev/null
fi
[[ -d /sys/fs/cgroup ]] || { echo "local_cluster.sh: slurmd needs /sys/fs/cgroup mounted" >&2; exit 2; }

mkdir -p "$dir/state"
chmod 755 "$dir"  # munged runs as the munge user and needs to reach its socket directory
down  # a previous cluster in the same directory

# munge: its own daemon and socket under DIR, with the system key (the package created it).
install -d -o munge -g munge "$dir/munge"
runuser -u munge -- /usr/sbin/munged --socket="$dir/munge/munge.socket" --pid-file="$dir/munge/munged.pid" \
  --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"
for _ in $(seq 50); do [[ -f $dir/munge/munged.pid ]] && break; sleep 0.1; done
cp "$dir/munge/munged.pid" "$dir/munged.pid"

{
  cat <<CONF
ClusterName=paxocl
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
SlurmctldPort=$base
SlurmdPort=$((base + 1))
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool-%n
TmpFS=$dir/tmp-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=pmix
MailProg=/bin/true
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SwitchType=switch/none
InactiveLimit=0
KillWait=5
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=30
Waittime=0
CONF
  for n in $(seq 1 "$nodes"); do
    echo "NodeName=node$n NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((base + 9 + n)) CPUs=$cpus RealMemory=1000 State=UNKNOWN"
  done
  echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
} >"$dir/slurm.conf"
for n in $(seq 1 "$nodes"); do mkdir -p "$dir/spool-node$n" "$dir/tmp-node$n"; done

export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF" -c -i
for n in $(seq 1 "$nodes"); do slurmd -f "$SLURM_CONF" -N "node$n"; done
for _ in $(seq 100); do
  states=$(sinfo -h -o %t 2>/dev/null | sort -u | paste -sd, -)
  [[ $states == idle ]] && { echo "local Slurm cluster up: $nodes node(s); export SLURM_CONF=$SLURM_CONF"; exit 0; }
  sleep 0.1
done
echo "local_cluster.sh: nodes did not become idle (sinfo: ${states:-nothing}); logs in $dir" >&2
exit 1
