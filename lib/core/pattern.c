/* SPDX-License-Identifier: MIT */
/*
 * pattern.c - globs and regular expressions of function patterns (see
 * pattern.h).
 *
 * | state            | protected by                                    |
 * |------------------|-------------------------------------------------|
 * | mode             | atomic int (set at start-up or by --match)      |
 * | cache[], next    | cache_lock (compiled regexes, in use under it)  |
 * | dm_name, dm_*    | cache_lock (the last name demangled)            |
 */
#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "pattern.h"

static int mode = -1; /* enum pat_mode; -1: not read from the environment yet */

void pat_set_mode(enum pat_mode m)
{
	__atomic_store_n(&mode, (int)m, __ATOMIC_RELAXED);
}

int pat_parse_mode(const char *w, enum pat_mode *m)
{
	if (!strcmp(w, "glob"))
		*m = PAT_GLOB;
	else if (!strcmp(w, "regex"))
		*m = PAT_REGEX;
	else if (!strcmp(w, "auto"))
		*m = PAT_AUTO;
	else
		return -1;
	return 0;
}

/* The runtime's own setting is DYNFTRACE_MATCH; the command sets its mode
 * before any match (weak: the command does not define dft_getenv). */
const char *dft_getenv(const char *name) __attribute__((weak));

enum pat_mode pat_get_mode(void)
{
	int m = __atomic_load_n(&mode, __ATOMIC_RELAXED);
	if (m < 0) {
		enum pat_mode pm = PAT_AUTO;
		const char *v =
		    dft_getenv ? dft_getenv("DYNFTRACE_MATCH") : getenv("DYNFTRACE_MATCH");
		if (v)
			pat_parse_mode(v, &pm);
		m = (int)pm;
		__atomic_store_n(&mode, m, __ATOMIC_RELAXED);
	}
	return (enum pat_mode)m;
}

int pat_is_regex(const char *p, size_t n)
{
	enum pat_mode m = pat_get_mode();
	if (m != PAT_AUTO)
		return m == PAT_REGEX;
	int dot = 0, globc = 0;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (c == '\\' && i + 1 < n) {
			i++;
			continue;
		}
		if (strchr("^$+|(){}", c))
			return 1;
		if (c == '.') {
			if (i + 1 < n && strchr("*+?{", p[i + 1]))
				return 1;
			dot = 1;
		}
		if (c == '*' || c == '?' || c == '[')
			globc = 1;
	}
	return dot && !globc;
}

/* ---- compiled regexes ---------------------------------------------------- */

#define CACHE_N 32
static struct {
	char *pat;
	regex_t re;
	int err; /* regcomp's result */
} cache[CACHE_N];
static unsigned cache_next;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* PAT compiled (cache_lock held): its slot, or NULL without memory. */
static int cache_get(const char *pat)
{
	for (int i = 0; i < CACHE_N; i++)
		if (cache[i].pat && !strcmp(cache[i].pat, pat))
			return i;
	char *copy = strdup(pat);
	if (!copy)
		return -1;
	int i = (int)(cache_next++ % CACHE_N);
	if (cache[i].pat) {
		if (!cache[i].err)
			regfree(&cache[i].re);
		free(cache[i].pat);
	}
	cache[i].pat = copy;
	cache[i].err = regcomp(&cache[i].re, pat, REG_EXTENDED | REG_NOSUB);
	return i;
}

int pat_valid(const char *pat, char *why, size_t whylen)
{
	if (!*pat) {
		if (why)
			snprintf(why, whylen, "empty pattern");
		return 0;
	}
	if (!pat_is_regex(pat, strlen(pat)))
		return 1;
	pthread_mutex_lock(&cache_lock);
	int i = cache_get(pat), ok = i >= 0 && !cache[i].err;
	if (!ok && why) {
		char msg[128] = "out of memory";
		if (i >= 0)
			regerror(cache[i].err, &cache[i].re, msg, sizeof(msg));
		snprintf(why, whylen, "bad regular expression '%s': %s", pat, msg);
	}
	pthread_mutex_unlock(&cache_lock);
	return ok;
}

/* pat_match with cache_lock held for a regex (LOCKED), or taken here. */
static int match(const char *pat, const char *name, int locked)
{
	if (!name)
		return 0;
	if (!pat_is_regex(pat, strlen(pat))) {
		if (!strpbrk(pat, "*?[\\"))
			return strcmp(pat, name) == 0;
		return fnmatch(pat, name, 0) == 0;
	}
	if (!locked)
		pthread_mutex_lock(&cache_lock);
	int i = cache_get(pat);
	int m = i >= 0 && !cache[i].err && regexec(&cache[i].re, name, 0, NULL, 0) == 0;
	if (!locked)
		pthread_mutex_unlock(&cache_lock);
	return m;
}

int pat_match(const char *pat, const char *name)
{
	return match(pat, name, 0);
}

/* ---- demangled names ----------------------------------------------------- */

/* The last C++ name demangled (filters ask for the same name once per
 * pattern). */
#define DM_MAX 4096
static char *dm_name, *dm_full, *dm_simple;
static int dm_ok;

int pat_match_func(const char *pat, const char *name)
{
	if (!name)
		return 0;
	if (pat_match(pat, name))
		return 1;
	if (strncmp(name, "_Z", 2))
		return 0;
	pthread_mutex_lock(&cache_lock);
	if (!dm_name || strcmp(dm_name, name)) {
		free(dm_name);
		dm_name = strdup(name);
		if (!dm_full)
			dm_full = malloc(DM_MAX);
		if (!dm_simple)
			dm_simple = malloc(DM_MAX);
		dm_ok = dm_name && dm_full && dm_simple &&
			dft_demangle(name, DM_FULL, dm_full, DM_MAX) >= 0 &&
			dft_demangle(name, DM_SIMPLE, dm_simple, DM_MAX) >= 0;
		if (!dm_name) {
			pthread_mutex_unlock(&cache_lock);
			return 0;
		}
	}
	int m = dm_ok && (match(pat, dm_simple, 1) || match(pat, dm_full, 1));
	pthread_mutex_unlock(&cache_lock);
	return m;
}
