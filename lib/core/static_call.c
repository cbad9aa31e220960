/* SPDX-License-Identifier: MIT */
/*
 * static_call.c - static calls: the runtime side of
 * include/dynftrace/static_call.h (the kernel's static calls).
 *
 * Each object carries two tables, registered together by its constructor:
 *
 *   dynftrace_scall   {tramp, key}       one per DEFINE_STATIC_CALL
 *   dynftrace_scsite  {marker, keyref}   one per static_call() site (C)
 *
 * Registration of the trampolines records key->tramp and points the
 * trampoline's jmp straight at key->func when it is within rel32 reach
 * (patch_write_early: the object's code cannot run yet). Registration of the
 * sites resolves each marker into the call (or tail-call jmp) instruction
 * that follows it: the first e8/e9 within 256 bytes whose rel32 lands
 * exactly on the key's trampoline. Found sites are declared as patch points
 * and brought to the current target the same way.
 *
 * An update computes the new 5 bytes of the trampoline and of every found
 * site of that key in every registered object, and applies them in ONE
 * patch_batch (3 syncs), so concurrent callers see either the old or the new
 * target, never a torn instruction:
 *
 *   target      trampoline              site (call / tail jmp)
 *   NULL        ret                     cond: nop5 / ret; else call tramp
 *   near        jmp target              call target (if near the site)
 *   far         jmp +8 -> jmp *far      call tramp
 *
 * key->far is written before the batch (it is only read through the
 * trampoline's far path), key->func after it.
 *
 * | data             | protected by |
 * |------------------|--------------|
 * | sctables, keys   | patch_lock   |
 */
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "jump_internal.h"
#include "arch.h"
#include <dynftrace/static_call.h>

#define SITE_SCAN_MAX 256

struct sc_site {
	uintptr_t addr; /* the call or jmp instruction */
	struct dynftrace_static_call_key *key;
	uint8_t tail; /* a tail call (jump), else a call */
	uint8_t cond; /* static_call_cond */
};

struct sctable {
	const void *id; /* first non-NULL start pointer: identifies the object */
	int refs;
	const struct dynftrace_scall_entry *cs, *ce;
	struct sc_site *sites;
	size_t nsites;
	uintptr_t *points; /* everything declared, for removal */
	size_t npoints;
	struct sctable *next;
};
static struct sctable *sctables;

static void *tramp_of(const struct dynftrace_scall_entry *e)
{
	return (void *)rel_addr(&e->tramp);
}

static struct dynftrace_static_call_key *key_of(const struct dynftrace_scall_entry *e)
{
	return (struct dynftrace_static_call_key *)rel_addr(&e->key);
}

/* The trampoline's 5 bytes for target FUNC. */
static void tramp_bytes(uintptr_t tramp, void *func, uint8_t out[ARCH_SITE_SIZE])
{
	arch_static_call_tramp(tramp, (uintptr_t)func, out);
}

/* A site's 5 bytes for target FUNC. */
static void site_bytes(const struct sc_site *s, void *func, uint8_t out[ARCH_SITE_SIZE])
{
	arch_static_call_site(s->addr, s->tail, s->cond, (uintptr_t)func, (uintptr_t)s->key->tramp,
			      out);
}

/* Is the trampoline at T one of ours (its far path intact)? */
static int tramp_valid(uintptr_t t, struct dynftrace_static_call_key *key)
{
	return arch_static_call_tramp_valid(t, (uintptr_t)&key->far);
}

/* Executable segment of the object containing ADDR. */
struct text_query {
	uintptr_t addr, lo, hi;
};

static int text_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct text_query *q = data;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (q->addr >= lo && q->addr < hi) {
			q->lo = lo;
			q->hi = hi;
			return 1;
		}
	}
	return 0;
}

/*
 * Find the call or jump to TRAMP after MARKER, within SITE_SCAN_MAX bytes
 * and the text segment. 0 if none.
 */
static uintptr_t site_find(uintptr_t marker, uintptr_t tramp, uintptr_t text_hi, int *tail)
{
	uintptr_t end = marker + SITE_SCAN_MAX;
	if (end > text_hi)
		end = text_hi;
	return arch_static_call_find(marker, end, tramp, tail);
}

static int cmp_site(const void *a, const void *b)
{
	const struct sc_site *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void sctable_free(struct sctable *t)
{
	if (!t)
		return;
	free(t->sites);
	free(t->points);
	free(t);
}

/* Append a patch entry if the bytes change. */
static int pe_add(struct patch_entry **pe, size_t *n, size_t *cap, uintptr_t addr,
		  const uint8_t cur[ARCH_SITE_SIZE], const uint8_t want[ARCH_SITE_SIZE])
{
	if (!memcmp(cur, want, ARCH_SITE_SIZE))
		return 0;
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 16;
		struct patch_entry *np = realloc(*pe, nc * sizeof(**pe));
		if (!np)
			return -ENOMEM;
		*pe = np;
		*cap = nc;
	}
	struct patch_entry *p = &(*pe)[(*n)++];
	p->addr = addr;
	p->len = ARCH_SITE_SIZE;
	memcpy(p->old, cur, ARCH_SITE_SIZE);
	memcpy(p->new, want, ARCH_SITE_SIZE);
	return 0;
}

__attribute__((visibility("default"))) int dynftrace_static_call_register(
    const struct dynftrace_scall_entry *cs, const struct dynftrace_scall_entry *ce,
    const struct dynftrace_scsite_entry *ss, const struct dynftrace_scsite_entry *se)
{
	size_t nc = cs && ce > cs ? (size_t)(ce - cs) : 0;
	size_t ns = ss && se > ss ? (size_t)(se - ss) : 0;
	const void *id = nc ? (const void *)cs : (const void *)ss;
	struct patch_entry *pe = NULL;
	size_t npe = 0, cap = 0;
	struct sctable *t = NULL;
	int err = 0;

	if (!nc && !ns)
		return 0;
	patch_lock();
	for (t = sctables; t; t = t->next) {
		if (t->id == id) {
			t->refs++;
			patch_unlock();
			return 0;
		}
	}
	err = jump_engine_ready();
	if (err)
		goto out;
	t = calloc(1, sizeof(*t));
	if (!t || !(t->points = malloc((nc + ns) * sizeof(uintptr_t))) ||
	    (ns && !(t->sites = malloc(ns * sizeof(*t->sites))))) {
		err = -ENOMEM;
		goto out;
	}
	t->id = id;
	t->refs = 1;
	t->cs = cs;
	t->ce = ce;

	/* Trampolines: record, validate, point at the current target. */
	for (size_t i = 0; i < nc; i++) {
		uintptr_t tr = (uintptr_t)tramp_of(&cs[i]);
		struct dynftrace_static_call_key *key = key_of(&cs[i]);
		uint8_t want[ARCH_SITE_SIZE];
		if (!tramp_valid(tr, key)) {
			dft_log("static call: trampoline at %#lx is damaged", (unsigned long)tr);
			err = -EFAULT;
			goto out;
		}
		key->tramp = (void *)tr;
		t->points[t->npoints++] = tr;
		tramp_bytes(tr, key->func, want);
		err = pe_add(&pe, &npe, &cap, tr, (const uint8_t *)tr, want);
		if (err)
			goto out;
	}

	/* Sites: resolve each marker into its call instruction. */
	if (ns) {
		struct text_query q = {(uintptr_t)rel_addr(&ss[0].marker), 0, 0};
		dl_iterate_phdr(text_cb, &q);
		for (size_t i = 0; i < ns; i++) {
			uintptr_t m = rel_addr(&ss[i].marker);
			struct dynftrace_static_call_key *key =
			    *(struct dynftrace_static_call_key *const *)rel_addr(&ss[i].keyref);
			int tail = 0;
			uintptr_t a = 0;
			if (key->tramp && m >= q.lo && m < q.hi)
				a = site_find(m, (uintptr_t)key->tramp, q.hi, &tail);
			if (!a) {
				jump_ctr.call_sites_missed++;
				continue;
			}
			struct sc_site *s = &t->sites[t->nsites++];
			s->addr = a;
			s->key = key;
			s->tail = (uint8_t)tail;
			s->cond = (ss[i].flags & DYNFTRACE_SCSITE_F_COND) != 0;
		}
		/* Two markers may lead to one call: keep it once. */
		qsort(t->sites, t->nsites, sizeof(*t->sites), cmp_site);
		size_t k = 0;
		for (size_t i = 0; i < t->nsites; i++) {
			if (k && t->sites[k - 1].addr == t->sites[i].addr) {
				t->sites[k - 1].cond &= t->sites[i].cond;
				continue;
			}
			t->sites[k++] = t->sites[i];
		}
		t->nsites = k;
		for (size_t i = 0; i < k; i++) {
			struct sc_site *s = &t->sites[i];
			uint8_t want[ARCH_SITE_SIZE];
			t->points[t->npoints++] = s->addr;
			site_bytes(s, __atomic_load_n(&s->key->func, __ATOMIC_RELAXED), want);
			err = pe_add(&pe, &npe, &cap, s->addr, (const uint8_t *)s->addr, want);
			if (err)
				goto out;
		}
	}

	err = jump_points_add(t->points, t->npoints);
	if (err)
		goto out;
	if (npe)
		err = patch_write_early(pe, npe);
	if (err) {
		dft_log("static call: registering failed: %s", patch_last_error());
		jump_points_remove(t->points, t->npoints);
		goto out;
	}
	jump_ctr.call_tables++;
	jump_ctr.calls += nc;
	jump_ctr.call_sites += ns;
	jump_ctr.call_sites_inline += t->nsites;
	t->next = sctables;
	sctables = t;
	t = NULL;
out:
	if (err && t) {
		/* Trampolines stay on their far path: still correct. */
		for (size_t i = 0; i < nc; i++)
			key_of(&cs[i])->tramp = NULL;
	}
	sctable_free(t);
	free(pe);
	patch_unlock();
	return err;
}

__attribute__((visibility("default"))) void dynftrace_static_call_unregister(
    const struct dynftrace_scall_entry *cs, const struct dynftrace_scall_entry *ce,
    const struct dynftrace_scsite_entry *ss, const struct dynftrace_scsite_entry *se)
{
	size_t nc = cs && ce > cs ? (size_t)(ce - cs) : 0;
	size_t ns = ss && se > ss ? (size_t)(se - ss) : 0;
	const void *id = nc ? (const void *)cs : (const void *)ss;
	if (!nc && !ns)
		return;
	patch_lock();
	for (struct sctable **pp = &sctables; *pp; pp = &(*pp)->next) {
		struct sctable *t = *pp;
		if (t->id != id)
			continue;
		if (--t->refs == 0) {
			*pp = t->next;
			jump_points_remove(t->points, t->npoints);
			for (size_t i = 0; i < nc; i++)
				key_of(&cs[i])->tramp = NULL;
			jump_ctr.call_tables--;
			jump_ctr.calls -= nc;
			jump_ctr.call_sites -= ns;
			jump_ctr.call_sites_inline -= t->nsites;
			sctable_free(t);
		}
		break;
	}
	patch_unlock();
}

/* Caller holds patch_lock. */
int static_call_update_locked(struct dynftrace_static_call_key *key, void *func)
{
	uintptr_t tr = (uintptr_t)key->tramp;
	struct patch_entry *pe = NULL;
	size_t npe = 0, cap = 0;
	uint8_t want[ARCH_SITE_SIZE];
	int err;

	if (!tr)
		return -ENOENT;
	tramp_bytes(tr, func, want);
	err = pe_add(&pe, &npe, &cap, tr, (const uint8_t *)tr, want);
	for (struct sctable *t = sctables; t && !err; t = t->next) {
		for (size_t i = 0; i < t->nsites && !err; i++) {
			struct sc_site *s = &t->sites[i];
			if (s->key != key)
				continue;
			site_bytes(s, func, want);
			err = pe_add(&pe, &npe, &cap, s->addr, (const uint8_t *)s->addr, want);
		}
	}
	if (!err) {
		/* Only the far path reads it; a stale value there is as good as a
		 * thread that already took the old jmp. */
		if (func)
			__atomic_store_n(&key->far, func, __ATOMIC_RELEASE);
		err = patch_batch(pe, npe);
		if (err)
			dft_log("static call: update failed: %s", patch_last_error());
	}
	if (!err) {
		__atomic_store_n(&key->func, func, __ATOMIC_RELEASE);
		jump_ctr.call_updates++;
	}
	free(pe);
	return err;
}

__attribute__((visibility("default"))) int
dynftrace_static_call_update(struct dynftrace_static_call_key *key, void *func)
{
	patch_lock();
	int err = jump_engine_ready();
	if (!err)
		err = static_call_update_locked(key, func);
	patch_unlock();
	return err;
}
