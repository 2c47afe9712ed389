#!/usr/bin/env python3
"""docs/passes.md's pipeline table agrees with the compiler's own (relaxc passes --json):
the same steps in the same order, each with its paper step number, minimum opt level and
paper section; the text form prints every row; and every module of the corpus passes
the verifier after every graph-level stage at every opt level (relaxc print --after
schedule --verify-each).

usage: check_table.py RELAXC SOURCE_DIR
"""
import json
import os
import re
import subprocess
import sys


def main():
    relaxc, src = sys.argv[1], sys.argv[2]
    fails = []
    rows = json.loads(subprocess.run([relaxc, "passes", "--json"], capture_output=True,
                                     check=True, timeout=60).stdout)
    text = subprocess.run([relaxc, "passes"], capture_output=True, check=True,
                          timeout=60).stdout.decode()
    for r in rows:
        if not re.search(r"^%s +%s +O%d\+ +%s " % (re.escape(r["step"]), r["name"], r["min_opt"],
                                                 r["kind"]), text, re.M):
            fails.append("relaxc passes lacks the row of %s" % r["name"])
    with open(os.path.join(src, "docs", "passes.md")) as f:
        doc = f.read()
    section = doc[doc.index("## The passes, in order"):]
    table = []
    for line in section.splitlines()[2:]:
        if not line.startswith("|"):
            if table:
                break
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] in ("#", "---"):
            continue
        table.append(cells)
    if [c[1].strip("`") for c in table] != [r["name"] for r in rows]:
        fails.append("docs/passes.md lists %s, the compiler %s" %
                     ([c[1].strip("`") for c in table], [r["name"] for r in rows]))
    for cells, r in zip(table, rows):
        name = r["name"]
        if cells[0] != r["step"]:
            fails.append("%s: docs step %s, compiler %s" % (name, cells[0], r["step"]))
        if cells[2] != str(r["min_opt"]):
            fails.append("%s: docs level %s, compiler %d" % (name, cells[2], r["min_opt"]))
        if r["paper"] and r["paper"] not in cells[3]:
            fails.append("%s: docs paper %r lacks %r" % (name, cells[3], r["paper"]))
    # the verifier over the corpus (the five deduction-only modules stop at legalize)
    mods = []
    for d in ("tests/modules/valid", "tests/e2e/modules"):
        mods += sorted(os.path.join(src, d, f) for f in os.listdir(os.path.join(src, d))
                       if f.endswith(".json"))
    runs = verified = 0
    for m in mods:
        for opt in "0123":
            runs += 1
            p = subprocess.run([relaxc, "print", m, "--after", "schedule", "--opt-level", opt,
                                "--verify-each"], capture_output=True, timeout=120)
            err = p.stderr.decode()
            if "malformed module" in err:
                fails.append("%s O%s: %s" % (os.path.basename(m), opt, err[:400]))
            elif p.returncode == 0:
                verified += 1
            elif "cannot legalize" not in err:
                fails.append("%s O%s: %s" % (os.path.basename(m), opt, err[:400]))
    if verified < runs - 8:
        fails.append("only %d of %d corpus builds got through schedule" % (verified, runs))
    for f in fails:
        print("FAIL", f)
    print("%d stages, %d corpus builds verified through schedule of %d, %d failures" %
          (len(rows), verified, runs, len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
