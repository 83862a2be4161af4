#!/usr/bin/env python3
"""Issue #51's check on a GPU machine: the same public programs run serially and with the variant
pipeline, from two calls of scripts/device-public.sh (docs/pipeline.md, "On a GPU machine"):

    CONFIRM=no AA= RUN_ARGS="--build-jobs 0" PROGRAMS="..." bash scripts/device-public.sh   # serial
    CONFIRM=no AA= PROGRAMS="..." bash scripts/device-public.sh                             # default
    python3 scripts/pipeline-compare.py SERIAL_FOLDER DEFAULT_FOLDER

Each FOLDER holds a call's unpacked NAME.json (the run's summary). Per program: each run's wall
time (started to finished), the default's share of the serial one, the tuning stage's own figures
(its wall time and the sum of its points' steps), and whether the verdicts agree: the same
outcome, the same best, and every variant and tuned point accepted or not alike. A program whose
summary is missing from either folder (stopped by its time limit) is listed as such.
"""
import datetime
import json
import os
import sys


def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None


def wall_s(run):
    try:
        t = [datetime.datetime.strptime(run[k], "%Y-%m-%dT%H:%M:%SZ") for k in ("started", "finished")]
    except (KeyError, TypeError, ValueError):
        return None
    return (t[1] - t[0]).total_seconds()


def verdicts(run):
    """What the verdicts were: the outcome, the best, and each variant's and point's acceptance."""
    tune = run.get("tune") or {}
    return (run.get("outcome"), run.get("best") or tune.get("best"),
            tuple(sorted((v.get("key"), v.get("status")) for v in run.get("variants", []))),
            tuple(sorted((p.get("point"), bool(p.get("accepted"))) for p in tune.get("points", []))))


def main(serial_dir, default_dir):
    names = sorted({f[:-5] for d in (serial_dir, default_dir) for f in os.listdir(d)
                    if f.endswith(".json") and f.count(".") == 1})
    print("| program | serial wall | default wall | default / serial | tune: wall, steps (default) | same verdicts |")
    print("|---|---|---|---|---|---|")
    shares = []
    for name in names:
        s, d = load(os.path.join(serial_dir, name + ".json")), load(os.path.join(default_dir, name + ".json"))
        if not s or not d:
            print(f"| {name} | {'-' if not s else '%.0f s' % wall_s(s)} | {'-' if not d else '%.0f s' % wall_s(d)} "
                  "| a summary is missing | | |")
            continue
        ws, wd = wall_s(s), wall_s(d)
        overlap = (d.get("tune") or {}).get("overlap") or {}
        tune = f"{overlap['wall_s']:.0f} s, {overlap['steps_s']:.0f} s" if overlap else "-"
        share = wd / ws if ws and wd is not None else None
        if share is not None:
            shares.append(share)
        same = "yes" if verdicts(s) == verdicts(d) else f"no: {verdicts(s)[:2]} against {verdicts(d)[:2]}"
        print(f"| {name} | {ws:.0f} s | {wd:.0f} s | {share:.2f} | {tune} | {same} |")
    if shares:
        print(f"\n{len(shares)} program(s) with both runs; default / serial from {min(shares):.2f} to {max(shares):.2f}; "
              f"#51 asks at most 0.60 on programs whose serial run took more than 150 s")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
