/*
 * nvrtc.h — CUDA C to PTX in-process with NVRTC, loaded at run time (nvrtc.c).
 *
 * The compiler links no CUDA library: NVRTC is found with dlopen the first time it is
 * needed ($RX_NVRTC_LIB when set, else libnvrtc.so.13 / libnvrtc.so on the loader
 * path, else /usr/local/cuda/lib64), so relaxc and relaxd run where CUDA is absent and
 * only the cuda target is unavailable there, with the reason.
 */
#ifndef RELAX_NVRTC_H
#define RELAX_NVRTC_H

#include <stdbool.h>
#include <stddef.h>

#include "relax/support.h"

/* Whether NVRTC can be loaded; when not, why[0..cap) says what was tried and why it
 * failed ("no NVRTC for cuda: cannot load libnvrtc.so.13 ..."). */
bool rx_nvrtc_available(char *why, size_t cap);

/* The "major.minor" version of the loaded NVRTC, or NULL when it cannot be loaded. */
const char *rx_nvrtc_version(void);

/* Compiles CUDA C src[0..n) (NUL-terminated) for arch ("sm_80") to PTX text, appended
 * to *ptx (no trailing NUL), and, when cubin is not NULL, the cubin for arch to *cubin
 * (left empty when NVRTC gives none). false with a diagnostic in d: NVRTC missing, an
 * arch this NVRTC does not support (listing those it does), or a compile error carrying
 * NVRTC's log (which names the kernel and line). */
bool rx_nvrtc_ptx(const char *src, size_t n, const char *arch, rx_sb *ptx, rx_sb *cubin,
                  rx_diags *d);

#endif
