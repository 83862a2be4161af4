#!/usr/bin/env bash
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
./build-all.sh 2>&1 | tail -3
TIMEFORMAT='wall %R s'
S=compute-sanitizer
echo "=== sanitizer"
(cd stream && $S --tool memcheck ./stream --n 1000003 --reps 2 --seed 3 --out /tmp/s.out | tail -2)
(cd accuracy && $S --tool memcheck ./accuracy --rows 3001 --classes 777 --k 4 --reps 2 --seed 3 --out /tmp/a.out | tail -2)
(cd accuracy && $S --tool racecheck ./accuracy --rows 301 --classes 777 --k 4 --reps 1 --seed 3 --out /tmp/a.out | tail -2)
(cd shmem && $S --tool memcheck ./shmem --width 333 --height 211 --radius 4 --iters 3 --seed 3 --out /tmp/sh.out | tail -2)
(cd shmem && $S --tool racecheck ./shmem --width 333 --height 211 --radius 4 --iters 1 --seed 3 --out /tmp/sh.out | tail -2)
(cd sobol && $S --tool memcheck ./sobol --points 100003 --dims 7 --seed 3 --out /tmp/so.out | tail -2)
(cd gather && $S --tool memcheck ./gather --nuclides 20 --gridpoints 1001 --lookups 50001 --seed 3 --out /tmp/g.out | tail -2)
(cd stencil && $S --tool memcheck ./stencil --n 37 --steps 3 --seed 3 --out /tmp/st.out | tail -2)
for ex in stream accuracy shmem sobol gather stencil; do
  echo "=== $ex"
  for cfg in small default heldout large; do
    echo "--- $cfg"
    time (./run-example.sh $ex $cfg /tmp/$ex.$cfg.out 2>&1 | tail -4)
  done
  ./run-example.sh $ex default /tmp/$ex.default2.out > /tmp/$ex.log2 2>&1
  grep kernel_time /tmp/$ex.log2
  cmp /tmp/$ex.default.out /tmp/$ex.default2.out && echo "$ex: default output identical across runs"
  ls -la /tmp/$ex.*.out | awk '{print $5, $9}'
done
