#!/usr/bin/env python3
"""cmake --install: the programs, the runtime library and its public headers land under
the prefix, the installed relaxc builds an artifact and the installed relax-run runs it,
and a C program compiled against the installed headers and librxrt.a loads it (and gets
the runtime's error for a truncated one).

usage: test_install.py BUILD_DIR SOURCE_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile


def cache_compiler(build):
    """The build's C compiler and the sanitizer flags its objects need at link time."""
    cache = {}
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            if "=" in line and ":" in line.split("=")[0]:
                k, v = line.rstrip("\n").split("=", 1)
                cache[k.split(":")[0]] = v
    flags = []
    if cache.get("RX_SANITIZE", "OFF").upper() in ("ON", "1", "TRUE"):
        flags.append("-fsanitize=address,undefined")
    if cache.get("RX_FUZZ", "OFF").upper() in ("ON", "1", "TRUE"):
        flags.append("-fsanitize=fuzzer-no-link")
    return cache.get("CMAKE_C_COMPILER") or "cc", flags


def main():
    build, src = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="rx-install-")
    fails = []
    try:
        prefix = os.path.join(tmp, "prefix")
        r = subprocess.run(["cmake", "--install", build, "--prefix", prefix],
                           capture_output=True, timeout=300)
        if r.returncode:
            print("FAIL cmake --install: %s" % r.stderr.decode()[-2000:])
            return 1
        for rel in ["bin/relaxc", "bin/relaxd", "bin/relax-run", "bin/relax-agent", "bin/relax",
                    "include/relax/runtime.h", "include/relax/vm.h", "include/relax/rxa.h",
                    "include/relax/device.h", "share/doc/relaxd/README.md",
                    "share/doc/relaxd/passes.md"]:
            if not os.path.exists(os.path.join(prefix, rel)):
                fails.append("missing %s" % rel)
        libs = [d for d in ("lib", "lib64", "lib/x86_64-linux-gnu")
                if os.path.exists(os.path.join(prefix, d, "librxrt.a"))]
        if not libs:
            fails.append("missing librxrt.a")
        if fails:
            for f in fails:
                print("FAIL", f)
            return 1
        mod = os.path.join(src, "tests", "modules", "valid", "fig03_symbolic_shape.json")
        rxa = os.path.join(tmp, "fig03.rxa")
        r = subprocess.run([os.path.join(prefix, "bin", "relaxc"), "build", mod, "-o", rxa],
                           capture_output=True, timeout=300)
        if r.returncode:
            fails.append("installed relaxc build: %s" % r.stderr.decode()[-1000:])
        else:
            r = subprocess.run([os.path.join(prefix, "bin", "relax-run"), rxa, "--fn",
                                "symbolic_shape_fn", "--shape", "n=4", "--out-dir",
                                os.path.join(tmp, "out")], capture_output=True, timeout=120)
            if r.returncode:
                fails.append("installed relax-run: %s" % r.stderr.decode()[-1000:])
        if libs:
            prog = os.path.join(tmp, "load.c")
            with open(prog, "w") as f:
                f.write(r'''
#include <relax/runtime.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    FILE *f = fopen(argv[1], "rb");
    static unsigned char buf[1 << 24];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    rx_rt_ctx *ctx = rx_rt_ctx_new();
    rx_rt_err err = {""};
    rx_rt_module *m = rx_rt_load_bytes(ctx, buf, n, argv[1], &err);
    printf("full: %s\n", m ? "loaded" : err.msg);
    if (m) rx_rt_module_free(m);
    m = rx_rt_load_bytes(ctx, buf, n / 2, "half", &err);
    printf("half: %s\n", m ? "loaded" : err.msg);
    if (m) rx_rt_module_free(m);
    rx_rt_ctx_free(ctx);
    return 0;
}
''')
            exe = os.path.join(tmp, "load")
            cc, flags = cache_compiler(build)
            r = subprocess.run([cc] + flags + ["-std=c11", "-o", exe, prog, "-I",
                                os.path.join(prefix, "include"), os.path.join(prefix, libs[0],
                                                                              "librxrt.a"),
                                "-ldl", "-lm", "-pthread"], capture_output=True, timeout=120)
            if r.returncode:
                fails.append("compiling against the installed runtime: %s" %
                             r.stderr.decode()[-1500:])
            elif not r.returncode and os.path.exists(rxa):
                r = subprocess.run([exe, rxa], capture_output=True, timeout=60)
                out = r.stdout.decode()
                if r.returncode or "full: loaded" not in out or "half: loaded" in out:
                    fails.append("installed runtime: rc %d: %s %s" % (r.returncode, out,
                                                                     r.stderr.decode()[-500:]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in fails:
        print("FAIL", f)
    print("%d failures" % len(fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
