#!/usr/bin/env python3
"""check_layering.py ROOT — the dependency rules of the tree that the compiler cannot see.

  * deduction never reaches into the op rules: no file of compiler/deduce/ includes an op
    library header (op_int.h) or calls an op helper (rx_op_*), so the direction is op ->
    deduce (the rules reach deduction through deduce.h; deduction reaches the rules only
    through the registry's rx_op.deduce pointers);
  * the op rules' helpers live with the rules (rx_d_tensor_arg is defined in compiler/op/);
  * one HTTP client: only base/http.c drives libcurl transfers (curl_easy_setopt);
  * README.md and docs/ are self-contained: no pointer to the project's documents outside
    the repository (shared/..., DESIGN.md, STYLE.md).
Prints each violation as "path:line: rule" and exits 1 when there is any.
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
bad = []


def scan(files, pattern, rule):
    rx = re.compile(pattern)
    for f in files:
        for i, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            if rx.search(line):
                bad.append(f"{f.relative_to(root)}:{i}: {rule}")


deduce = sorted((root / "compiler/deduce").glob("*.[ch]"))
scan(deduce, r'#include\s+"[^"]*op_int\.h"', "deduce/ includes the op library's internal header")
scan(deduce, r"\brx_op_(?!find|at|count|by)\w+\s*\(", "deduce/ calls an op helper")
if not any("rx_d_tensor_arg(rx_dctx" in f.read_text() for f in (root / "compiler/op").glob("*.c")):
    bad.append("compiler/op: the rules' helpers (rx_d_tensor_arg) are not defined here")
srcs = [p for d in ("compiler", "runtime", "rpc", "clients", "server", "cache", "base")
        for p in sorted((root / d).rglob("*.c"))]
scan([p for p in srcs if p.relative_to(root).as_posix() != "base/http.c"],
     r"\bcurl_easy_setopt\s*\(", "a second HTTP client (use base/http.c, relax/http.h)")
docs = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
scan(docs, r"(\.\./)?shared/(spec|seeds|DESIGN|STYLE|MACHINE)|(?<![\w/])(DESIGN|STYLE)\.md",
     "documentation points outside the repository")
for b in bad:
    print(b)
print(f"layering: {len(bad)} violation(s)")
sys.exit(1 if bad else 0)
