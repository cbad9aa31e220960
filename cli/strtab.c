// SPDX-License-Identifier: MIT
/* strtab.c - interned strings; see strtab.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "strtab.h"

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static int grow_slots(struct strtab *t)
{
	size_t n = t->nslot ? t->nslot * 2 : 64;
	uint32_t *slot = calloc(n, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t id = 0; id < t->n; id++) {
		size_t i = str_hash(t->str[id]) & (n - 1);

		while (slot[i])
			i = (i + 1) & (n - 1);
		slot[i] = (uint32_t)id + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->nslot = n;
	return 0;
}

int64_t strtab_intern(struct strtab *t, const char *s, int *added)
{
	size_t i;

	if (added)
		*added = 0;
	if ((t->n + 1) * 2 > t->nslot && grow_slots(t))
		return -ENOMEM;
	i = str_hash(s) & (t->nslot - 1);
	while (t->slot[i]) {
		if (!strcmp(t->str[t->slot[i] - 1], s))
			return t->slot[i] - 1;
		i = (i + 1) & (t->nslot - 1);
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		char **str = realloc(t->str, cap * sizeof(*str));

		if (!str)
			return -ENOMEM;
		t->str = str;
		t->cap = cap;
	}
	if (t->n >= UINT32_MAX - 1 || !(t->str[t->n] = strdup(s)))
		return -ENOMEM;
	t->slot[i] = (uint32_t)++t->n;
	if (added)
		*added = 1;
	return (int64_t)t->n - 1;
}

void strtab_free(struct strtab *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->str[i]);
	free(t->str);
	free(t->slot);
	memset(t, 0, sizeof(*t));
}
