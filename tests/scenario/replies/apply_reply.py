#!/usr/bin/env python3
"""Applies a reply's find/replace edits (docs/reply.schema.json) to a copy of an application.

Usage: apply_reply.py REPLY.json APP-DIR OUT-DIR

Copies APP-DIR to OUT-DIR and applies every edit there the way Optimas does: the text to find
must occur exactly once in the file the edit names. Edits are applied one after another, which
is what Optimas does (it judges each against the original text) as long as none overlaps another.
Only the find/replace form is supported (the hand-written replies here use it). For checking a reply by hand before it goes to the
manual backend; Optimas itself never runs this.
"""
import json
import shutil
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    reply_path, app, out = sys.argv[1:]
    reply = json.load(open(reply_path))
    shutil.copytree(app, out)
    for k, e in enumerate(reply["edits"], 1):
        if e.get("find") is None:
            sys.exit(f"edit {k}: only the find/replace form is supported")
        path = f"{out}/{e['file']}"
        text = open(path).read()
        n = text.count(e["find"])
        if n != 1:
            sys.exit(f"edit {k}: the text to find occurs {n} times in {e['file']}; it must occur once")
        open(path, "w").write(text.replace(e["find"], e["replace"]))
        print(f"edit {k}: {e['file']} ({e['kernel']}) applied")


if __name__ == "__main__":
    main()
