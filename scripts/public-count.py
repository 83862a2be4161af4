#!/usr/bin/env python3
"""Issue #29's count from the unpacked results of scripts/device-public.sh, over several calls.

    python3 scripts/public-count.py FOLDER [FOLDER ...]
    python3 scripts/public-count.py docs/h200-public/*/    (the results kept in the repository)

Each FOLDER holds a call's NAME.json (the run's summary), NAME.confirm.json and NAME.aa.json.
The folder whose name sorts later replaces an earlier one's run of a program, with its confirmation; an A/A run
counts from whichever folder holds it. A program counts as run when its summary came back (a run
stopped by its time limit leaves none). An accepted run is confirmed when its confirmation
(fresh builds, the fixed rule) accepted the same best variant or point (the same values; a tuned
best is confirmed by --tune-point, that point alone); a confirmation whose
tuned points carry the first run's figures to the last digit came from the point cache and is
no confirmation. The geomean is over the confirmed figures (the fixed rule's, all kernels), and
again without the largest (issue #50's goal). Where the first variant recorded where the time is
(its `coverage`, from session 27 on), the table gives its time_addressed and the largest item it
left, with why. A run stopped by its limit leaves NAME.partial.json (`optimas runs show --json`):
it never counts as a run, but where the run counted recorded no coverage, a later stopped run's
first variant (the same deterministic edits) gives the time columns, marked "(stopped run)".
"""
import json
import math
import os
import sys


def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None


def best_of(run):
    return run.get("best") or (run.get("tune") or {}).get("best")


def best_made(run):
    """What the best is: a variant's key (its edits are deterministic), or a tuned point's values
    (a confirmation by --tune-point measures that point alone, under a key of its own)."""
    best = best_of(run)
    for p in (run.get("tune") or {}).get("points", []):
        if best and best.startswith("t") and p.get("key") == best:
            return json.dumps(p.get("values"), sort_keys=True)
    return best


def point_figures(run):
    return [p.get("speedup") for p in (run.get("tune") or {}).get("points", [])]


def figure(run):
    ci = run.get("ci") or [float("nan"), float("nan")]
    return f'{run["speedup"]:.3f}x [{ci[0]:.3f}, {ci[1]:.3f}]'


def coverage(run):
    """The first variant's (i1a1's) time_addressed and the largest item it left, or "-"."""
    for v in run.get("variants") or []:
        c = v.get("coverage")
        if v.get("key") == "i1a1" and c:
            left = c.get("unaddressed") or []
            top = "-" if not left else f'{left[0]["id"]} {left[0]["where"]} ({100 * left[0]["share"]:.0f}%): {left[0]["why"]}'
            return f'{100 * c.get("time_addressed", 0):.0f}%', top.replace("|", "/")
    return "-", "-"


def main(folders):
    runs, aa, partial = {}, {}, {}
    # In the order of their names, whatever order the shell's glob gave (a day's second session's
    # DATE-s25 sorts before DATE/ there, as '-' comes before '/').
    for folder in sorted(folders, key=os.path.normpath):
        for name in sorted(os.listdir(folder)):
            if not name.endswith(".json") or name.count(".") > 2:
                continue
            program, _, kind = name[:-5].partition(".")
            if kind not in ("", "aa", "partial"):  # a confirmation is read with its run, below
                continue
            data = load(os.path.join(folder, name))
            if data is None:
                continue
            if kind == "partial":
                partial[program] = data
            elif kind == "":
                runs[program] = (folder, data, load(os.path.join(folder, program + ".confirm.json")))
            elif kind == "aa":
                aa[program] = data
    rows, confirmed = [], []
    for program in sorted(runs):
        folder, run, confirm = runs[program]
        outcome, best = run.get("outcome", "?"), best_of(run)
        verdict, check = outcome, "-"
        if outcome == "improved":
            verdict = f"accepted {best}: {figure(run)}"
            if confirm is None:
                check = "pending"
            elif point_figures(confirm) and point_figures(confirm) == point_figures(run):
                check = "not fresh (the tuned points' figures are the first run's)"
            elif confirm.get("outcome") == "improved" and best_made(confirm) == best_made(run):
                check = f"confirmed {figure(confirm)}"
                confirmed.append((program, confirm["speedup"]))
            else:
                check = f"NOT confirmed: {confirm.get('outcome', '?')}, best {best_of(confirm) or '-'}"
        a = aa.get(program)
        a_text = "-" if a is None else ("FALSE ACCEPT" if a.get("outcome") == "improved" else "not accepted")
        addressed, top = coverage(run)
        if addressed == "-" and program in partial and coverage(partial[program])[0] != "-":
            addressed, top = coverage(partial[program])
            addressed += " (stopped run)"
        rows.append(f"| {program} | {verdict} | {check} | {a_text} | {addressed} | {top} | {folder} |")
    print("| program | verdict | confirmation | A/A | time addressed | top unaddressed | results |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    accepted = sum(1 for _, run, _ in runs.values() if run.get("outcome") == "improved")
    def geomean(figures):
        return math.exp(sum(math.log(s) for s in figures) / len(figures)) if figures else float("nan")
    figures = sorted(s for _, s in confirmed)
    print()
    print(f"{len(runs)} programs run, {accepted} accepted, {len(confirmed)} confirmed "
          f"(geomean {geomean(figures):.3f}x over the confirmed, {geomean(figures[:-1]):.3f}x without the largest), "
          f"A/A on {len(aa)} "
          f"({sum(1 for a in aa.values() if a.get('outcome') == 'improved')} false accepts)")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
