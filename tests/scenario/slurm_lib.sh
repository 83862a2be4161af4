# A private Slurm for one scenario test: munged, slurmctld and slurmd from Debian's slurm-wlm,
# started on loopback with their configuration, state, spool, logs and sockets in the test's
# temporary folder, and stopped (with every job they ran) when the test exits. Source it after
# lib.sh (which sets WORK and the EXIT trap this extends), then call slurm_start.
#
# What the test's Slurm is: one node (this machine's CPUs, or $SLURM_TEST_CPUS for a test whose
# jobs only sleep, and a gres stand-in of
# $SLURM_TEST_GPUS "GPUs" that are only counted: gres.conf names no device file, so --gres=gpu:N
# is satisfiable and nothing is bound), one partition "test", munge authentication with its own
# key and socket, no accounting database (accounting_storage/none: sacct has nothing to say, so
# finished jobs are read from slurmctld, which keeps them for MinJobAge seconds) and a job
# completion log (jobcomp/filetxt: one line per ended job, printed with the logs on failure). It runs as root (SlurmdUser=root, as at a site) and, where
# the test runs as a normal user, as that user (jobs then run as the same user, which is all
# slurmstepd can do without root).

: "${WORK:?source lib.sh before slurm_lib.sh}"
: "${SLURM_TEST_GPUS:=2}"
k_slurm_gpu_files=(/dev/null /dev/zero /dev/full /dev/random /dev/urandom)
[ "$SLURM_TEST_GPUS" -le ${#k_slurm_gpu_files[@]} ] || { echo "slurm_lib: at most ${#k_slurm_gpu_files[@]} GPU stand-ins" >&2; exit 1; }

# Exits 125 (skipped) only where slurm-wlm is not installed and cannot be: as root, it is
# installed here (apt-get), as CI's scripts/deps-debian.txt would.
slurm_require() {
  local missing=() c
  for c in slurmctld slurmd sbatch squeue sacct scancel scontrol sinfo munged; do
    command -v "$c" >/dev/null 2>&1 || [ -x "/usr/sbin/$c" ] || missing+=("$c")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "slurm_lib: ${missing[*]} missing; installing slurm-wlm and munge" >&2
    if { apt-get install -y -q slurm-wlm munge || { apt-get update -q && apt-get install -y -q slurm-wlm munge; }; } \
      >"$WORK/slurm-apt.log" 2>&1; then
      return 0
    fi
    tail -5 "$WORK/slurm-apt.log" >&2
  fi
  echo "SKIP: slurm-wlm is not installed and cannot be installed here (${missing[*]} missing)" >&2
  exit 125
}

# Two free TCP ports on loopback (asked of the kernel; released just before the daemons bind them).
slurm_free_ports() {
  python3 - <<'PY'
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks:
    s.close()
PY
}

SLURM_PIDS=()

# Prints every daemon log (a start or a test that failed shows why).
slurm_logs() {
  local f
  for f in "$SLURM_DIR"/log/*.log; do
    [ -f "$f" ] || continue
    echo "---- $f (last 60 lines)" >&2
    tail -n 60 "$f" >&2
  done
}

slurm_fail() {
  echo "FAIL: $*" >&2
  slurm_logs
  exit 1
}

# Cancels every job, waits (bounded) until slurmctld holds none running, then ends the daemons
# this test started, by their process ids.
slurm_stop() {
  [ ${#SLURM_PIDS[@]} -gt 0 ] || return 0
  if [ -n "${SLURM_CONF:-}" ] && kill -0 "${SLURM_PIDS[1]:-0}" 2>/dev/null; then
    scancel --full --quiet --user="$(id -un)" >/dev/null 2>&1 || true
    local deadline=$((SECONDS + 20))
    while [ $SECONDS -lt $deadline ] && [ -n "$(squeue -h -t running,completing -o %i 2>/dev/null)" ]; do
      sleep 0.5
    done
  fi
  local i pid
  for ((i = ${#SLURM_PIDS[@]} - 1; i >= 0; i--)); do
    pid=${SLURM_PIDS[i]}
    kill "$pid" 2>/dev/null || continue
    local deadline=$((SECONDS + 10))
    while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
  done
  SLURM_PIDS=()
}

# Starts munged, slurmctld and slurmd; exports SLURM_CONF; returns when the node is idle.
slurm_start() {
  slurm_require
  export PATH="$PATH:/usr/sbin"
  SLURM_DIR=$WORK/slurm
  mkdir -p "$SLURM_DIR"/{munge,state,spool,log,run}
  chmod 711 "$SLURM_DIR/munge"
  local user node cpus ports ctld_port slurmd_port
  user=$(id -un)
  node=$(hostname -s)
  cpus=${SLURM_TEST_CPUS:-$(nproc)}
  read -r ctld_port slurmd_port <<<"$(slurm_free_ports)"

  # munge: its own key and socket, so nothing of a system munge (if any) is used or needed.
  dd if=/dev/urandom of="$SLURM_DIR/munge/munge.key" bs=1024 count=1 status=none
  chmod 600 "$SLURM_DIR/munge/munge.key"
  local sock=$SLURM_DIR/munge/munge.socket
  munged --foreground --force --socket="$sock" --key-file="$SLURM_DIR/munge/munge.key" \
    --pid-file="$SLURM_DIR/run/munged.pid" --log-file="$SLURM_DIR/log/munged.log" \
    --seed-file="$SLURM_DIR/munge/munge.seed" --num-threads=2 >>"$SLURM_DIR/log/munged.log" 2>&1 &
  SLURM_PIDS+=($!)
  # Before whatever the test's EXIT trap already does (lib.sh's: remove $WORK).
  local before
  before=$(trap -p EXIT | sed -e "s/^trap -- '//" -e "s/' EXIT\$//")
  trap "slurm_stop; $before" EXIT

  local slurmd_user=root
  [ "$(id -u)" -eq 0 ] || slurmd_user=$user
  export SLURM_CONF=$SLURM_DIR/slurm.conf
  cat >"$SLURM_CONF" <<EOF
# A private Slurm for one test (tests/scenario/slurm_lib.sh)
ClusterName=optimas-test
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$slurmd_user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/run/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/run/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/log/slurmctld.log
SlurmdLogFile=$SLURM_DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$SLURM_DIR/log/jobcomp.log
MpiDefault=none
MailProg=/bin/true
SwitchType=switch/none
ReturnToService=2
# Finished jobs stay in slurmctld (squeue, scontrol) this long: without accounting it is how
# their end is known.
MinJobAge=600
# Jobs start when submitted or when one ends, not at the next minute's pass.
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=2
# The node is described, not measured: its sockets and memory need not match this machine.
SlurmdParameters=config_overrides
GresTypes=gpu
NodeName=$node NodeAddr=127.0.0.1 NodeHostname=$node CPUs=$cpus Gres=gpu:$SLURM_TEST_GPUS State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
  cat >"$SLURM_DIR/gres.conf" <<EOF
# GPU stand-ins: character devices every machine has, so that --gres=gpu:N is satisfiable and
# Slurm sets CUDA_VISIBLE_DEVICES for a job as it would on a GPU node; nothing is bound (task/none).
$(for ((i = 0; i < SLURM_TEST_GPUS; i++)); do echo "NodeName=$node Name=gpu File=${k_slurm_gpu_files[i]}"; done)
EOF
  : >"$SLURM_DIR/cgroup.conf"
  : >"$SLURM_DIR/plugstack.conf"

  local deadline=$((SECONDS + 30))
  until [ -S "$sock" ]; do
    kill -0 "${SLURM_PIDS[0]}" 2>/dev/null || slurm_fail "munged exited at start"
    [ $SECONDS -lt $deadline ] || slurm_fail "munged's socket $sock did not appear in 30 s"
    sleep 0.1
  done

  slurmctld -D -i -f "$SLURM_CONF" >>"$SLURM_DIR/log/slurmctld.out" 2>&1 &
  SLURM_PIDS+=($!)
  deadline=$((SECONDS + 60))
  until scontrol ping 2>/dev/null | grep -q UP; do
    kill -0 "${SLURM_PIDS[1]}" 2>/dev/null || { cat "$SLURM_DIR/log/slurmctld.out" >&2; slurm_fail "slurmctld exited at start"; }
    [ $SECONDS -lt $deadline ] || slurm_fail "slurmctld did not answer scontrol ping in 60 s"
    sleep 0.2
  done

  slurmd -D -N "$node" -f "$SLURM_CONF" >>"$SLURM_DIR/log/slurmd.out" 2>&1 &
  SLURM_PIDS+=($!)
  deadline=$((SECONDS + 60))
  local state=
  until [ "$state" = idle ]; do
    kill -0 "${SLURM_PIDS[2]}" 2>/dev/null || { cat "$SLURM_DIR/log/slurmd.out" >&2; slurm_fail "slurmd exited at start"; }
    [ $SECONDS -lt $deadline ] || slurm_fail "node $node is \"$state\", not idle, 60 s after slurmd started"
    sleep 0.2
    state=$(sinfo -h -N -n "$node" -o %T 2>/dev/null || true)
  done
  echo "slurm_lib: slurmctld on localhost:$ctld_port, node $node ($cpus CPUs, $SLURM_TEST_GPUS counted GPUs) idle" >&2
}
