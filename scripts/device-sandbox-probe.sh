#!/usr/bin/env bash
# On a GPU machine, from the repository root, with optimas packed by scripts/device-pack.sh: which
# step of the unshare sandbox's walls (src/evaluate/isolation.cpp) keeps the kernel tracer from
# writing its trace (session 32, an H100: every traced run behind the walls had none, while the
# programs ran). examples/stream is built once and run traced: without walls, in each namespace
# unshare adds (user, mount, network), behind the whole walls, and behind the walls less one step
# at a time (the network namespace, the read-only remounts, the private /tmp). Each line says
# whether the run left a trace, then the run's stderr (the tracer says there why it stopped).
# About 30 s.   bash scripts/device-sandbox-probe.sh
set -u
source scripts/device-lib.sh
device_env
root=$PWD
W=/tmp/optimas-sandbox-probe
rm -rf "$W"
mkdir -p "$W/o"
cp examples/stream/main.cu "$W/"
cd "$W" && nvcc -O3 -arch=sm_90 -lineinfo -o stream main.cu || exit 1
T=$root/.device/bin/liboptimas-trace.so
WALLS=$(sed -n '/R"sh(/,/)sh";/p' "$root/src/evaluate/isolation.cpp" | sed '1s/.*R"sh(//; $d')
NO_RO=$(printf '%s\n' "$WALLS" | grep -v 'remount,bind,ro')
NO_TMP=$(printf '%s\n' "$WALLS" | grep -v 'optimas-tmp /tmp')
echo "tracer $T; CUPTI ${CUPTI_DIR:-none}; $(id)"
# probe NAME COMMAND...: the stream run, traced, under COMMAND.
probe() {
  local name=$1 d=$W/trace-$1
  shift
  mkdir -p "$d"
  CUDA_INJECTION64_PATH=$T OPTIMAS_TRACE_DIR=$d OPTIMAS_TRACE_STATS=1 "$@" ./stream --n 4194304 --reps 5 --seed 1 \
    --out "$W/o/$name.out" > "$W/$name.log" 2> "$W/$name.err"
  echo "== $name: exit $?, trace files: $(ls "$d" | wc -l)"
  head -c 1500 "$W/$name.err"
}
# walls NAME SCRIPT [--net]: the walls' script, its writable folders those of a measured run.
walls() {
  local name=$1 script=$2
  shift 2
  mkdir -p "$W/trace-$name"
  probe "$name" unshare --user --map-root-user --mount "$@" /bin/sh -c "$script" optimas-sandbox "$W" 1 "" "" \
    3 "$W" "$W/o" "$W/trace-$name" 0
}
probe bare
probe user unshare --user --map-root-user
probe mount unshare --user --map-root-user --mount
probe net unshare --user --map-root-user --mount --net
walls walls "$WALLS" --net
walls walls-with-network "$WALLS"
walls walls-not-read-only "$NO_RO" --net
walls walls-machine-tmp "$NO_TMP" --net
# Did the dynamic loader find the tracer and CUPTI behind the walls? (CUDA skips an injection it
# cannot load without a word.)
echo "== loader behind the walls"
LD_DEBUG=libs LD_DEBUG_OUTPUT=$W/ld walls walls-ld "$WALLS" --net > /dev/null
grep -h -i -E "cupti|optimas-trace|error|cannot" "$W"/ld.* 2>/dev/null | head -30
echo "== inside the walls"
unshare --user --map-root-user --mount --net /bin/sh -c "$WALLS" optimas-sandbox "$W" 1 "" "" 3 "$W" "$W/o" "$W/trace-walls" 0 \
  /bin/sh -c "id; ls -l $T; ls -ld /tmp /dev/shm; ls /dev | tr '\n' ' '; echo; env | grep -E 'CUDA|LD_|OPTIMAS' | sort" 2>&1 | head -30
echo "== mounts"
awk '{print $5, $6, $9}' /proc/self/mountinfo | head -40
