#!/usr/bin/env python3
"""check_exports.py LIB RUNTIME_DIR — librelaxrt.so exports the runtime's public API and
nothing else.

The public API is every function declared in RUNTIME_DIR/include/relax/*.h (the headers
that `cmake --install` ships). The library's dynamic symbol table (nm -D) must hold each
of those that the library defines, and no other function or object of ours: an internal
symbol (one declared in RUNTIME_DIR/*_int.h, for instance) exported means
-fvisibility=hidden or a header's visibility pragma was lost. Symbols of the toolchain
(leading '_', sanitizer and libgcc helpers) are not ours and are skipped.
"""
import pathlib
import re
import subprocess
import sys

lib, rt = sys.argv[1], pathlib.Path(sys.argv[2])
decl = re.compile(r"\b(rx\w*)\s*\(")
public = set()
for h in sorted((rt / "include/relax").glob("*.h")):
    text = re.sub(r"/\*.*?\*/", "", h.read_text(), flags=re.S)
    text = re.sub(r"^\s*#.*$", "", text, flags=re.M)
    text = re.sub(r"static\s+inline[^(]*\(", "(", text)  # header-only helpers: nothing to export
    public |= set(decl.findall(text))
internal = set()
for h in sorted(rt.glob("*_int.h")):
    text = re.sub(r"/\*.*?\*/", "", h.read_text(), flags=re.S)
    internal |= set(decl.findall(text))

out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                     check=True).stdout
exported = {line.split()[-1] for line in out.splitlines() if len(line.split()) >= 3}
ours = {s for s in exported if not s.startswith("_") and s.startswith("rx")}
bad = sorted(ours - public)
missing = sorted(s for s in public if s not in exported and s in out)
# every public function must be exported when the library defines it at all
defined = subprocess.run(["nm", "--defined-only", lib], capture_output=True, text=True,
                         check=True).stdout
defined_names = {line.split()[-1] for line in defined.splitlines() if len(line.split()) >= 3}
missing = sorted((public & defined_names) - exported)
hidden_internal = sorted(internal & defined_names - exported)
for s in bad:
    print(f"exported but not public: {s}")
for s in missing:
    print(f"public but not exported: {s}")
print(f"rt_exports: {len(ours)} exported, {len(public & defined_names)} public defined, "
      f"{len(hidden_internal)} internal hidden, {len(bad) + len(missing)} problem(s)")
if len(ours) < 20 or not hidden_internal:
    print("rt_exports: implausible symbol sets (is this librelaxrt.so?)")
    sys.exit(1)
sys.exit(1 if bad or missing else 0)
