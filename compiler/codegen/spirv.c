/*
 * spirv.c — GLSL 4.50 compute shaders to SPIR-V with libshaderc, and SPIR-V bundles
 * (spirv.h; the bundle format is in runtime/include/relax/device.h).
 *
 * One compile: a shaderc compiler and options object per call (so calls on several
 * threads share nothing), the Vulkan 1.2 environment (SPIR-V 1.5: before 1.4 a 64-bit
 * conversion of the work-group size is no valid specialization constant, and index
 * arithmetic is 64-bit), no optimization (the driver optimizes; spirv-opt would drop an
 * unused binding, which the launch ABI binds anyway), and the kernel's name as the
 * input file name so shaderc's log says `NAME:LINE: error: ...`. The log is folded to
 * one line (newlines become "; ") and cut at the message capacity.
 *
 * A bundle is written word by word in little-endian order: the header, then per
 * kernel its name (NUL-terminated, zero-padded to whole words) and its module.
 *
 * Cost: shaderc parses, links and optimizes each shader (a few ms for a small kernel);
 * the bundle is linear in the modules' size.
 */
#include "relax/spirv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relax/device.h"

#if defined(RX_HAVE_SHADERC)
#include <shaderc/shaderc.h>

bool rx_spirv_available(char *why, size_t cap)
{
    (void)why;
    (void)cap;
    return true;
}

/* Copies shaderc's log into msg after the prefix, as one line. */
static void fold_log(char *msg, size_t cap, const char *name, const char *log)
{
    int at = snprintf(msg, cap, "kernel %s: GLSL -> SPIR-V failed: ", name);
    size_t o = at > 0 && (size_t)at < cap ? (size_t)at : cap ? cap - 1 : 0;
    for (const char *s = log ? log : ""; *s && o + 3 < cap; s++) {
        if (*s == '\n') {
            if (s[1]) {
                msg[o++] = ';';
                msg[o++] = ' ';
            }
        } else if (*s != '\r') {
            msg[o++] = *s;
        }
    }
    if (cap) msg[o < cap ? o : cap - 1] = '\0';
}

int rx_spirv_compile(const char *name, const char *glsl, size_t n, uint32_t **words,
                     size_t *nwords, char *msg, size_t cap)
{
    shaderc_compiler_t c = shaderc_compiler_initialize();
    shaderc_compile_options_t o = shaderc_compile_options_initialize();
    if (!c || !o) {
        if (o) shaderc_compile_options_release(o);
        if (c) shaderc_compiler_release(c);
        snprintf(msg, cap, "kernel %s: GLSL -> SPIR-V failed: shaderc cannot start", name);
        return -1;
    }
    shaderc_compile_options_set_source_language(o, shaderc_source_language_glsl);
    shaderc_compile_options_set_target_env(o, shaderc_target_env_vulkan,
                                           shaderc_env_version_vulkan_1_2);
    shaderc_compile_options_set_optimization_level(o, shaderc_optimization_level_zero);
    /* warnings only: the log of a failed compile is cut at cap, and the reserved-name
     * warnings of ONNX names (v__Where_output_0: "__" is reserved in GLSL) came first
     * and hid the error of retina_post's kernel */
    shaderc_compile_options_set_suppress_warnings(o);
    shaderc_compilation_result_t r =
        shaderc_compile_into_spv(c, glsl, n, shaderc_glsl_compute_shader, name, "main", o);
    int rc = -1;
    if (!r) {
        snprintf(msg, cap, "kernel %s: GLSL -> SPIR-V failed: shaderc returned nothing", name);
    } else if (shaderc_result_get_compilation_status(r) != shaderc_compilation_status_success) {
        fold_log(msg, cap, name, shaderc_result_get_error_message(r));
    } else {
        size_t bytes = shaderc_result_get_length(r);
        *words = malloc(bytes ? bytes : 4);
        if (!*words || bytes % 4) {
            free(*words);
            *words = NULL;
            snprintf(msg, cap, "kernel %s: GLSL -> SPIR-V failed: %s", name,
                     bytes % 4 ? "a module that is not whole words" : "out of memory");
        } else {
            memcpy(*words, shaderc_result_get_bytes(r), bytes);
            *nwords = bytes / 4;
            rc = 0;
        }
    }
    if (r) shaderc_result_release(r);
    shaderc_compile_options_release(o);
    shaderc_compiler_release(c);
    return rc;
}

#else

bool rx_spirv_available(char *why, size_t cap)
{
    snprintf(why, cap, "this compiler was built without libshaderc (GLSL -> SPIR-V): install "
                       "libshaderc-dev, glslang-dev and spirv-tools and rebuild");
    return false;
}

int rx_spirv_compile(const char *name, const char *glsl, size_t n, uint32_t **words,
                     size_t *nwords, char *msg, size_t cap)
{
    (void)glsl;
    (void)n;
    (void)words;
    (void)nwords;
    char why[200];
    rx_spirv_available(why, sizeof why);
    snprintf(msg, cap, "kernel %s: GLSL -> SPIR-V failed: %s", name, why);
    return -1;
}

#endif

/* ---- bundles ---- */

static void put_word(rx_sb *out, uint32_t w)
{
    char b[4] = {(char)(w & 0xff), (char)(w >> 8 & 0xff), (char)(w >> 16 & 0xff), (char)(w >> 24)};
    rx_sb_putn(out, b, 4);
}

int rx_spirv_bundle(const char *const *names, const char *const *glsl, int n, rx_sb *out,
                    char *msg, size_t cap)
{
    put_word(out, RX_SPIRV_BUNDLE_MAGIC);
    put_word(out, RX_SPIRV_BUNDLE_VERSION);
    put_word(out, (uint32_t)n);
    for (int i = 0; i < n; i++) {
        uint32_t *w = NULL;
        size_t nw = 0;
        if (rx_spirv_compile(names[i], glsl[i], strlen(glsl[i]), &w, &nw, msg, cap)) return -1;
        size_t len = strlen(names[i]) + 1, nname = (len + 3) / 4;
        put_word(out, (uint32_t)nname);
        rx_sb_putn(out, names[i], len);
        for (size_t p = len; p < nname * 4; p++) rx_sb_putc(out, '\0');
        put_word(out, (uint32_t)nw);
        for (size_t k = 0; k < nw; k++) put_word(out, w[k]);
        free(w);
    }
    return 0;
}
