/* SPDX-License-Identifier: MIT */
/*
 * glob.h - the patterns of filters and of the functions to patch (glob.c),
 * shared with the CLI, which reports the patterns that matched nothing with
 * the runtime's own rules.
 */
#ifndef DYNFTRACE_GLOB_H
#define DYNFTRACE_GLOB_H

#include <stddef.h>

/* Not the runtime's API (the CLI links glob.c too). */
#define GLOB_HIDDEN __attribute__((visibility("hidden")))

/* glob.c: shell glob match (exact compare without metachars), for objects'
 * file names. A function's pattern may be a regex (pattern.h). */
int dft_glob_match(const char *glob, const char *name) GLOB_HIDDEN;
/* The same for function NAME of the object at PATH: GLOB may name the
 * object too, as FUNC@OBJECT or FUNC:mod:OBJECT (OBJECT: a glob of the
 * file name, with or without what follows ".so"). */
int dft_glob_match_in(const char *glob, const char *name, const char *path) GLOB_HIDDEN;
/* Does GLOB name functions of the object at PATH: 1 or 0; -1: GLOB names no
 * object (a plain glob). */
int dft_glob_object(const char *glob, const char *path) GLOB_HIDDEN;
#define DFT_GLOB_MAX 1023 /* longer globs are refused */

#endif
