/* SPDX-License-Identifier: MIT */
/*
 * glob.c - the shell globs of filters and of the functions to patch: a
 * function's name, and optionally its object's (FUNC@OBJECT,
 * FUNC:mod:OBJECT). Pure functions, no state.
 */
#include <fnmatch.h>
#include <string.h>

#include "internal.h"

/* Reject what fnmatch would silently take literally: an unclosed '['; and
 * globs longer than DFT_GLOB_MAX. */
int dft_glob_valid(const char *g)
{
	if (strlen(g) > DFT_GLOB_MAX)
		return 0;
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
		return dft_glob_match(glob, name);
	if (!object_matches(object, path))
		return 0;
	if (!flen)
		return name != NULL; /* ":mod:libfoo" / "@libfoo": all of it */
	char func[DFT_GLOB_MAX + 1];
	if (flen > DFT_GLOB_MAX)
		return 0; /* dft_glob_valid refused it */
	memcpy(func, glob, flen);
	func[flen] = 0;
	return dft_glob_match(func, name);
}

int dft_glob_object(const char *glob, const char *path)
{
	size_t flen;
	const char *object = glob_object(glob, &flen);
	return object ? object_matches(object, path) : -1;
}
