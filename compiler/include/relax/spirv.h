/*
 * spirv.h — GLSL compute shaders to SPIR-V at compile time, for the vulkan target
 * (compiler/codegen/spirv.c; docs/gpu.md "Vulkan").
 *
 * Vulkan runs SPIR-V, not source: the compiler turns each kernel's GLSL 4.50 compute
 * shader into a SPIR-V 1.5 module (Vulkan 1.2 environment) in-process with libshaderc,
 * and stores the modules of one artifact as one SPIR-V bundle (device.h, "SPIR-V
 * bundle"), so the runtime needs no shader compiler. Every module has the entry point
 * `main`; the bundle names it.
 *
 * libshaderc is linked statically (Debian 12's shared libshaderc.so.1 cannot be
 * loaded: it lacks glslang and SPIRV-Tools). A compiler built without it still runs;
 * rx_spirv_available then says why and every compile fails with that reason.
 */
#ifndef RELAX_SPIRV_H
#define RELAX_SPIRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "relax/support.h"

/* Whether GLSL can be compiled to SPIR-V here; false with the reason in why. */
bool rx_spirv_available(char *why, size_t cap);

/* Compiles the GLSL 4.50 compute shader glsl[0..n) of kernel `name` into SPIR-V.
 * Returns 0 with *words (malloc'd; the caller frees) and *nwords, or -1 with msg
 * "kernel NAME: GLSL -> SPIR-V failed: <shaderc's log, one line>". Thread-safe. */
int rx_spirv_compile(const char *name, const char *glsl, size_t n, uint32_t **words,
                     size_t *nwords, char *msg, size_t cap);

/* Compiles n kernels (names[i], glsl[i], NUL-terminated) and appends their SPIR-V
 * bundle (device.h) to out. 0, or -1 with msg naming the first kernel that failed. */
int rx_spirv_bundle(const char *const *names, const char *const *glsl, int n, rx_sb *out,
                    char *msg, size_t cap);

#endif
