#!/usr/bin/env python3
"""The table of docs/h200-builtin.md from the output folder of scripts/device-builtin.sh.

    python3 scripts/builtin-table.py OUT

One row per example: the run's outcome, its best variant (edit variant iNaM or tuned point tN),
what made it (the rules of its applied edits, the tuned values and flags), the speedup of its
primary configuration with the 95% interval and p, every other configuration measured (held-out
ones marked *) and the run's time (its steps' seconds). Then one row per variant and tuned point
that was measured, so that every rejected one is visible too.
"""
import json
import os
import sys


def speed(m):
    if not m or m.get("speedup") is None or not m.get("ci"):
        return "-"
    ci = m.get("ci") or [None, None]
    return f'{m["speedup"]:.3f}x [{ci[0]:.3f}, {ci[1]:.3f}]'


def others(m):
    out = []
    for name, c in sorted((m or {}).get("configs", {}).items()):
        if name == m.get("primary"):
            continue
        out.append(f'{name}{"*" if c.get("held_out") else ""} {c["speedup"]:.3f}x')
    return ", ".join(out) or "-"


def rules(v):
    names = []
    for e in v.get("applied_edits", []):
        r = e.get("rule") or "?"
        if r not in names:
            names.append(r)
    return "+".join(names) or "-"


def point(p):
    values = ", ".join(f"{k}={x}" for k, x in (p.get("values") or {}).items())
    return "; ".join(x for x in (values, p.get("flags") or "") if x) or "(as built)"


def main(out):
    rows, detail = [], []
    exits = {}
    if os.path.exists(os.path.join(out, "exits.txt")):
        for line in open(os.path.join(out, "exits.txt")):
            # "NAME RC" (device-builtin.sh) or "NAME STEP RC" (device-public.sh: init, run, aa,
            # confirm; the run's summary is NAME.json, another step's NAME.STEP.json)
            parts = line.split()
            if len(parts) == 3 and parts[1] == "init":
                continue
            ex = parts[0] if len(parts) == 2 or parts[1] == "run" else f"{parts[0]}.{parts[1]}"
            exits[ex] = parts[-1]
    for name in os.listdir(out):  # a summary whose exit code did not come back
        if name.endswith(".json"):
            exits.setdefault(name[:-5], "?")
    for ex in sorted(exits):
        path = os.path.join(out, f"{ex}.json")
        try:
            run = json.load(open(path))
        except (OSError, ValueError):
            rows.append(f"| {ex} | ERROR (exit {exits[ex]}, no summary) | | | | | | |")
            continue
        measured = []
        for v in run.get("variants", []):
            measured.append((v["key"], v.get("status", ""), rules(v), v.get("measurement")))
        tune = run.get("tune") or {}
        for p in tune.get("points", []):
            # A point's record holds its speedup and interval; its p is in the run's headline
            # when it is the best, and in its reason otherwise.
            m = {"speedup": p.get("speedup"), "ci": p.get("ci"), "p_value": float("nan")}
            measured.append((p.get("key", "?"), p.get("status", ""), "tune: " + point(p), m))
        best = run.get("best") or tune.get("best")
        made = next((what for key, _, what, _ in measured if key == best), "-")
        best_m = next((m for key, _, _, m in measured if key == best), None)
        if best_m is not None and run.get("p_value") is not None and best_m.get("p_value") != best_m.get("p_value"):
            best_m = dict(best_m, p_value=run["p_value"])
        seconds = sum(t for t in (run.get("times") or {}).values() if isinstance(t, (int, float)))
        rows.append(f'| {ex} | {run.get("outcome", "?")} | {best or "-"} | {made} | {speed(best_m)} | '
                    f'{best_m["p_value"]:.3g} | {others(best_m)} | {seconds:.0f} s |' if best_m else
                    f'| {ex} | {run.get("outcome", "?")} | - | - | - | - | - | {seconds:.0f} s |')
        for key, status, what, m in measured:
            detail.append(f'| {ex} | {key} | {status} | {what} | {speed(m)} | '
                          f'{"-" if not m else format(m.get("p_value", float("nan")), ".3g")} | {others(m) if m else "-"} |')
    print("| example | outcome | best | made by | speedup [95% CI] (primary) | p | other configurations | time |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print()
    print("| example | variant | status | made by | speedup [95% CI] | p | other configurations |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(detail))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/optimas-builtin-out")
