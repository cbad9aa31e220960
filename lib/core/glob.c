/* SPDX-License-Identifier: MIT */
/*
 * glob.c - the patterns of filters and of the functions to patch: a
 * function's name, and optionally its object's (FUNC@OBJECT,
 * FUNC:mod:OBJECT). The function's part is a glob or a regular
 * expression (pattern.c decides, and matches C++ names demangled too);
 * the object's part is always a glob of its file name.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "pattern.h"

static const char *glob_object(const char *glob, size_t *flen);

/* Reject what fnmatch would silently take literally: an unclosed '['. */
static int glob_classes_closed(const char *g)
{
	for (const char *p = g; *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
		} else if (*p == '[') {
			const char *q = p + 1;
			if (*q == '!' || *q == '^')
				q++;
			if (*q == ']')
				q++;
			while (*q && *q != ']')
				q++;
			if (!*q)
				return 0;
			p = q;
		}
	}
	return 1;
}

int dft_pattern_check(const char *g, char *why, size_t whylen)
{
	if (strlen(g) > DFT_GLOB_MAX) {
		if (why)
			snprintf(why, whylen, "pattern longer than %d bytes", DFT_GLOB_MAX);
		return -EINVAL;
	}
	char func[DFT_GLOB_MAX + 1];
	size_t flen = strlen(g);
	const char *object = glob_object(g, &flen);
	memcpy(func, g, flen);
	func[flen] = 0;
	if (object && !glob_classes_closed(object)) {
		if (why)
			snprintf(why, whylen, "bad glob '%s': '[' without ']'", object);
		return -EINVAL;
	}
	if (!flen && object)
		return 0; /* FUNC@OBJECT's FUNC may be empty: all of it */
	if (pat_is_regex(func, flen))
		return pat_valid(func, why, whylen) ? 0 : -EINVAL;
	if (!*func || !glob_classes_closed(func)) {
		if (why)
			snprintf(why, whylen,
				 *func ? "bad glob '%s': '[' without ']'" : "empty pattern%s",
				 func);
		return -EINVAL;
	}
	return 0;
}

int dft_glob_valid(const char *g)
{
	return dft_pattern_check(g, NULL, 0) == 0;
}

int dft_glob_match(const char *glob, const char *name)
{
	if (!name)
		return 0;
	if (!strpbrk(glob, "*?[\\"))
		return strcmp(glob, name) == 0;
	return fnmatch(glob, name, 0) == 0;
}

/* Where GLOB names an object (FUNC@OBJECT, or the kernel's FUNC:mod:OBJECT):
 * its OBJECT part, and the length of its FUNC part in *FLEN. NULL: the
 * glob names functions only. The last '@' counts, unless escaped. */
static const char *glob_object(const char *glob, size_t *flen)
{
	const char *m = strstr(glob, ":mod:");
	if (m) {
		*flen = (size_t)(m - glob);
		return m + 5;
	}
	const char *at = NULL;
	for (const char *p = glob; *p; p++) {
		if (*p == '\\' && p[1])
			p++;
		else if (*p == '@')
			at = p;
	}
	if (!at)
		return NULL;
	*flen = (size_t)(at - glob);
	return at + 1;
}

/* Does OBJECT (a glob) name the object at PATH? Its file name, or the file
 * name up to ".so" (malloc@libc matches libc.so.6). */
static int object_matches(const char *object, const char *path)
{
	if (!path)
		return 0;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (dft_glob_match(object, base))
		return 1;
	const char *so = strstr(base, ".so");
	if (!so || so == base || (size_t)(so - base) >= 256)
		return 0;
	char stem[256];
	memcpy(stem, base, (size_t)(so - base));
	stem[so - base] = 0;
	return dft_glob_match(object, stem);
}

int dft_glob_match_in(const char *glob, const char *name, const char *path)
{
	size_t flen;
	const char *object = glob_object(glob, &flen);
	if (!object)
		return pat_match_func(glob, name);
	if (!object_matches(object, path))
		return 0;
	if (!flen)
		return name != NULL; /* ":mod:libfoo" / "@libfoo": all of it */
	char func[DFT_GLOB_MAX + 1];
	if (flen > DFT_GLOB_MAX)
		return 0; /* dft_glob_valid refused it */
	memcpy(func, glob, flen);
	func[flen] = 0;
	return pat_match_func(func, name);
}

int dft_glob_object(const char *glob, const char *path)
{
	size_t flen;
	const char *object = glob_object(glob, &flen);
	return object ? object_matches(object, path) : -1;
}
