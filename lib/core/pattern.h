/* SPDX-License-Identifier: MIT */
/*
 * pattern.h - the function patterns of filters, triggers and -P: shell
 * globs or POSIX extended regular expressions, matched against a
 * function's symbol name and, for a C++ symbol, its demangled names (full
 * and simple). libc only (regcomp/regexec, fnmatch); shared with the CLI.
 *
 * A pattern is a regex when the mode says so (PAT_REGEX), or in PAT_AUTO
 * when it holds a character only a regex gives meaning to: one of ^ $ + |
 * ( ) { }, a '.' before * + ? {, or a '.' in a pattern without a glob
 * character (* ? [), as uftrace decides. A regex matches anywhere in the
 * name (anchor it with ^ and $); a glob matches the whole name.
 *
 * Thread safety: compiled regexes are kept in a small cache under one
 * mutex; every function may be called from any thread, but not from a
 * traced call's callback (it may allocate).
 */
#ifndef DYNFTRACE_PATTERN_H
#define DYNFTRACE_PATTERN_H

#include <stddef.h>

enum pat_mode { PAT_AUTO, PAT_GLOB, PAT_REGEX };

/* The process's mode: DYNFTRACE_MATCH=glob|regex in the runtime (read
 * once), --match in the CLI. */
void pat_set_mode(enum pat_mode mode);
enum pat_mode pat_get_mode(void);
/* "glob", "regex" or "auto" to a mode: 0, or -1 for another word. */
int pat_parse_mode(const char *word, enum pat_mode *mode);

/* Is the LEN bytes at PAT (a function's part of a pattern) a regex? */
int pat_is_regex(const char *pat, size_t len);

/* Is PAT usable as the function part of a filter? 1 or 0; on 0, WHY (if
 * not NULL) says why in one phrase naming the pattern. */
int pat_valid(const char *pat, char *why, size_t whylen);

/* Does PAT match NAME (the whole name for a glob, anywhere for a regex)? */
int pat_match(const char *pat, const char *name);

/* pat_match against a function's symbol NAME, and for a C++ symbol also
 * against its full and simple demangled names. */
int pat_match_func(const char *pat, const char *name);

#endif
