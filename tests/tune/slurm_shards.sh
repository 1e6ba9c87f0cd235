#!/usr/bin/env bash
# The tuner on a real cluster scheduler: brings up a single-node Slurm (slurmctld, slurmd and
# munge from Debian) on localhost under a scratch folder, runs a tuning of ResNet-18 (32 x 32,
# the 6 best estimates of each workload) as a 4-task job array (`sbatch --array`, each task a
# `dlavm tune --shard i/4` process), merges the shards' logs and compares them with a
# single-process run: the same records (build times aside) and the same best schedules.
# Exit 77 (CTest's skip) with the reason where Slurm is not installed or does not start.
#   tests/tune/slurm_shards.sh path/to/dlavm
set -uo pipefail
dlavm=$1
skip() { echo "SKIP: $*"; exit 77; }
for cmd in munged slurmctld slurmd sbatch sinfo; do
  command -v "$cmd" >/dev/null 2>&1 || skip "$cmd is not installed (tools/setup.sh installs slurm-wlm and munge)"
done
dir=$(mktemp -d /tmp/dlavm_slurm.XXXXXX)
stop() {
  for pid in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    [[ -f $pid ]] && kill "$(cat "$pid")" 2>/dev/null
  done
  sleep 0.5
  rm -rf "$dir"
}
trap stop EXIT
mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log"
chmod 755 "$dir/munge"   # munged refuses a socket folder others can write to
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$dir/munge/munge.key"
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
  --seed-file="$dir/munge/munged.seed" || skip "munged does not start: $(tail -2 "$dir/log/munged.log")"
host=$(hostname)
user=$(id -un)
port=$((20000 + RANDOM % 20000))
cat > "$dir/slurm.conf" <<CONF
ClusterName=dlavm
SlurmctldHost=$host(127.0.0.1)
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmdSpoolDir=$dir/spool
StateSaveLocation=$dir/state
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MailProg=/bin/true
MinJobAge=4
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=tune Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$dir/slurm.conf
slurmctld || skip "slurmctld does not start: $(tail -2 "$dir/log/slurmctld.log" 2>/dev/null)"
slurmd || skip "slurmd does not start: $(tail -2 "$dir/log/slurmd.log" 2>/dev/null)"
for _ in $(seq 50); do
  sinfo -h -o %t 2>/dev/null | grep -q idle && break
  sleep 0.2
done
sinfo -h -o %t 2>/dev/null | grep -q idle || skip "the Slurm node does not come up: $(tail -2 "$dir/log/slurmd.log")"

run=(tune resnet18 --image 32 --top 6 --threads 1)
"$dlavm" "${run[@]}" --log "$dir/single.log" >/dev/null || { echo "FAIL: the single run"; exit 1; }
start=$(date +%s%N)
sbatch --array=0-3 --wait -o "$dir/log/shard%a.out" \
  --wrap "$dlavm ${run[*]} --shard \$SLURM_ARRAY_TASK_ID/4 --log $dir/shard\$SLURM_ARRAY_TASK_ID.log" \
  >/dev/null || { echo "FAIL: the job array"; cat "$dir"/log/shard*.out; exit 1; }
end=$(date +%s%N)
"$dlavm" tune-merge "$dir/merged.log" "$dir"/shard{0,1,2,3}.log >/dev/null || exit 1
records() { sed -E 's/"build_seconds":[^,]*,//' "$1" | sort; }
if ! diff <(records "$dir/single.log") <(records "$dir/merged.log") >/dev/null; then
  echo "FAIL: the merged shards' records differ from the single run's"; exit 1
fi
if ! diff <("$dlavm" tune-best "$dir/single.log") <("$dlavm" tune-best "$dir/merged.log"); then
  echo "FAIL: the best schedules differ"; exit 1
fi
for s in 0 1 2 3; do
  [[ -s $dir/shard$s.log ]] || { echo "FAIL: shard $s wrote nothing"; exit 1; }
done
echo "PASS: $(wc -l < "$dir/merged.log") records from a 4-task Slurm job array" \
  "in $(((end - start) / 1000000)) ms equal a single run's"
