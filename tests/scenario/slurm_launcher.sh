# The slurm launcher against a real Slurm (slurm_lib.sh): tests/scenario/slurm_launcher_test.cpp,
# run with SLURM_CONF naming the test's own slurmctld.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/slurm_lib.sh"
: "${SLURM_LAUNCHER_TEST:?set SLURM_LAUNCHER_TEST to the slurm_launcher_test binary (ctest does)}"

# The jobs only echo and sleep: four CPUs' worth, so that the minute-long time-limited job does
# not hold back the others.
SLURM_TEST_CPUS=4 slurm_start
export SLURM_TEST_WORK=$WORK/jobs
mkdir -p "$SLURM_TEST_WORK"
"$SLURM_LAUNCHER_TEST" || slurm_fail "the slurm launcher against the test's slurmctld (above)"
pass "slurm launcher: one job per task, array job, exit codes, scancel, time limit against slurmctld $(sinfo -V)"
