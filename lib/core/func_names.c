/* SPDX-License-Identifier: MIT */
/*
 * func_names.c - function names (and addresses) by site id for the readers of the rings
 * (control's `trace`, the profile table): a copy of each name, made the
 * first time an id is asked for, kept after its object closes because the
 * events in the rings outlive it. Written under patch_lock (the site table
 * is read there); the cache itself is the control thread's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "func_names.h"
#include "patch.h"
#include "sites.h"

static char **names;
static uintptr_t *addrs; /* the sites' addresses (ip), 0: unknown */
static uint32_t names_n;

/* patch_lock held */
static void names_refresh(void)
{
	uint32_t n = site_next_id;
	if (n <= names_n)
		return;
	char **nv = realloc(names, n * sizeof(*nv));
	if (!nv)
		return;
	memset(nv + names_n, 0, (n - names_n) * sizeof(*nv));
	names = nv;
	uintptr_t *av = realloc(addrs, n * sizeof(*av));
	if (!av)
		return;
	memset(av + names_n, 0, (n - names_n) * sizeof(*av));
	addrs = av;
	for (size_t i = 0; i < site_count; i++) {
		const struct site *s = &site_tab[i];
		if (s->id < names_n || s->id >= n)
			continue;
		addrs[s->id] = s->addr;
		const char *nm = site_func_name(s);
		if (nm) {
			names[s->id] = strdup(nm);
		} else {
			char buf[64];
			/* As `sites --all` names an entry without a symbol. */
			snprintf(buf, sizeof(buf), "sub_%lx", (unsigned long)site_func_start(s));
			names[s->id] = strdup(buf);
		}
	}
	names_n = n;
}

const char *func_name(uint32_t id)
{
	if (id >= names_n) {
		patch_lock();
		names_refresh();
		patch_unlock();
	}
	return id < names_n ? names[id] : NULL;
}

uintptr_t func_addr(uint32_t id)
{
	if (id >= names_n) {
		patch_lock();
		names_refresh();
		patch_unlock();
	}
	return id < names_n ? addrs[id] : 0;
}

void func_names_free(void)
{
	for (uint32_t i = 0; i < names_n; i++)
		free(names[i]);
	free(names);
	names = NULL;
	free(addrs);
	addrs = NULL;
	names_n = 0;
}
