/* SPDX-License-Identifier: MIT */
/*
 * jump.c - static keys: the runtime side of include/dynftrace/static_key.h.
 *
 * Every object that uses static branches carries a table (section
 * `dynftrace_jump`) of entries {code, target, keyref, flags}, one per
 * branch. Its constructor hands the table to dynftrace_jump_register(); the
 * same table may be handed in several times (once per translation unit that
 * includes the header), so tables are reference-counted by start address.
 *
 *   object A (program)        object B (dlopen'd)
 *   +----------------+        +----------------+
 *   | dynftrace_jump |        | dynftrace_jump |      jtables (patch_lock)
 *   |  e0 e1 e2 ...  |<--+    |  e0 e1 ...     |<--+  A -> B -> NULL
 *   +----------------+   |    +----------------+   |
 *            registered by each object's constructor, dropped by its
 *            destructor (dlclose)
 *
 * A key's state is its enable count (static_key.enabled). The invariant kept
 * under patch_lock: every registered branch of key K holds the instruction
 * for "K.enabled > 0" (JMP or NOP, see the entry's flags). Changing K between
 * 0 and 1 gathers K's branches in every registered table and rewrites them
 * in ONE patch_batch: the breakpoint protocol, 3 syncs, safe while other
 * threads run them. Counts above 1 only change the number.
 *
 * At registration each branch's current bytes are read back (NOP or the JMP
 * to its own target, anything else is refused) and the branches whose key is
 * not in the compiled state are rewritten with patch_write_early: the
 * constructor runs before any code of the object is reachable.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "jump_internal.h"
#include "arch.h"
#include <dynftrace/static_key.h>

HIDDEN struct jump_counters jump_ctr;

/* One registered table.
 * | field       | protected by |
 * |-------------|--------------|
 * | all         | patch_lock   | */
struct jtable {
	const struct dynftrace_jump_entry *start, *stop;
	int refs; /* registrations minus unregistrations */
	struct jtable *next;
};
static struct jtable *jtables;

static uintptr_t je_code(const struct dynftrace_jump_entry *e)
{
	return rel_addr(&e->code);
}

static uintptr_t je_target(const struct dynftrace_jump_entry *e)
{
	return rel_addr(&e->target);
}

static struct static_key *je_key(const struct dynftrace_jump_entry *e)
{
	return *(struct static_key *const *)rel_addr(&e->keyref);
}

/* Does branch E hold the JMP while its key's count is > 0 (ON) or not? */
static int je_want_jmp(const struct dynftrace_jump_entry *e, int on)
{
	int jwe = (e->flags & DYNFTRACE_JUMP_F_JMP_WHEN_ENABLED) != 0;
	return on ? jwe : !jwe;
}

static void je_bytes(const struct dynftrace_jump_entry *e, int jmp, uint8_t out[ARCH_SITE_SIZE])
{
	arch_jump_label_insn(je_code(e), je_target(e), jmp, out);
}

/* 1: JMP, 0: NOP, -EFAULT: neither (not ours or corrupted). */
static int je_current(const struct dynftrace_jump_entry *e)
{
	return arch_jump_label_state(je_code(e), je_target(e));
}

int jump_engine_ready(void)
{
	static int ready;
	if (ready)
		return 0;
	int err = patch_init(dft_trap_handler_install);
	if (!err)
		ready = 1;
	return err;
}

int jump_points_add(const uintptr_t *addrs, size_t n)
{
	return n ? patch_points_add(addrs, n) : 0;
}

void jump_points_remove(const uintptr_t *addrs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		patch_points_remove_range(addrs[i], addrs[i] + 1);
}

static struct jtable *jtable_find(const struct dynftrace_jump_entry *start)
{
	for (struct jtable *t = jtables; t; t = t->next)
		if (t->start == start)
			return t;
	return NULL;
}

__attribute__((visibility("default"))) int
dynftrace_jump_register(const struct dynftrace_jump_entry *start,
			const struct dynftrace_jump_entry *stop)
{
	if (!start || !stop || stop <= start)
		return 0; /* an object without branches */
	size_t n = (size_t)(stop - start);
	int err = 0;
	uintptr_t *addrs = NULL;
	struct patch_entry *pe = NULL;
	struct jtable *t;

	patch_lock();
	if ((t = jtable_find(start))) {
		t->refs++;
		goto out;
	}
	err = jump_engine_ready();
	if (err)
		goto out;
	addrs = malloc(n * sizeof(*addrs));
	pe = malloc(n * sizeof(*pe));
	t = malloc(sizeof(*t));
	if (!addrs || !pe || !t) {
		err = -ENOMEM;
		goto out_free;
	}
	size_t np = 0;
	for (size_t i = 0; i < n; i++) {
		const struct dynftrace_jump_entry *e = &start[i];
		int cur = je_current(e);
		if (cur < 0) {
			dft_log("static key: branch at %#lx holds unexpected bytes, table refused",
				(unsigned long)je_code(e));
			err = -EFAULT;
			goto out_free;
		}
		addrs[i] = je_code(e);
		int want =
		    je_want_jmp(e, __atomic_load_n(&je_key(e)->enabled, __ATOMIC_RELAXED) > 0);
		if (want != cur) {
			struct patch_entry *p = &pe[np++];
			p->addr = je_code(e);
			p->len = ARCH_SITE_SIZE;
			je_bytes(e, cur, p->old);
			je_bytes(e, want, p->new);
		}
	}
	err = jump_points_add(addrs, n);
	if (!err && np)
		err = patch_write_early(pe, np);
	if (err) {
		dft_log("static key: registering %zu branches failed: %s", n,
			err == -EFAULT ? patch_last_error() : strerror(-err));
		jump_points_remove(addrs, n);
		goto out_free;
	}
	t->start = start;
	t->stop = stop;
	t->refs = 1;
	t->next = jtables;
	jtables = t;
	t = NULL;
	jump_ctr.jump_tables++;
	jump_ctr.jump_entries += n;
out_free:
	free(t);
	free(addrs);
	free(pe);
out:
	patch_unlock();
	return err;
}

__attribute__((visibility("default"))) void
dynftrace_jump_unregister(const struct dynftrace_jump_entry *start,
			  const struct dynftrace_jump_entry *stop)
{
	if (!start || !stop || stop <= start)
		return;
	patch_lock();
	struct jtable **pp, *t = NULL;
	for (pp = &jtables; *pp; pp = &(*pp)->next) {
		if ((*pp)->start == start) {
			t = *pp;
			break;
		}
	}
	if (t && --t->refs == 0) {
		*pp = t->next;
		for (const struct dynftrace_jump_entry *e = start; e < stop; e++)
			patch_points_remove_range(je_code(e), je_code(e) + 1);
		jump_ctr.jump_tables--;
		jump_ctr.jump_entries -= (size_t)(stop - start);
		free(t);
	}
	patch_unlock();
}

/* Rewrite every registered branch of KEY for state ON, in one batch. */
static int key_apply(struct static_key *key, int on)
{
	size_t n = 0, cap = 0;
	struct patch_entry *pe = NULL;
	int err = 0;

	for (struct jtable *t = jtables; t; t = t->next) {
		for (const struct dynftrace_jump_entry *e = t->start; e < t->stop; e++) {
			if (je_key(e) != key)
				continue;
			int want = je_want_jmp(e, on);
			if (n == cap) {
				size_t nc = cap ? 2 * cap : 16;
				struct patch_entry *np = realloc(pe, nc * sizeof(*pe));
				if (!np) {
					free(pe);
					return -ENOMEM;
				}
				pe = np;
				cap = nc;
			}
			struct patch_entry *p = &pe[n++];
			p->addr = je_code(e);
			p->len = ARCH_SITE_SIZE;
			je_bytes(e, !want, p->old);
			je_bytes(e, want, p->new);
		}
	}
	if (n) {
		err = jump_engine_ready();
		if (!err)
			err = patch_batch(pe, n);
		if (err)
			dft_log("static key: patching %zu branches failed: %s", n,
				patch_last_error());
	}
	free(pe);
	if (!err)
		jump_ctr.key_changes++;
	return err;
}

__attribute__((visibility("default"))) int dynftrace_static_key_inc(struct static_key *key)
{
	int err = 0;
	patch_lock();
	int c = key->enabled;
	if (c == INT_MAX)
		err = -EOVERFLOW;
	else if (c < 0)
		err = -EINVAL;
	else if (c == 0)
		err = key_apply(key, 1);
	if (!err)
		__atomic_store_n(&key->enabled, c + 1, __ATOMIC_RELEASE);
	patch_unlock();
	return err;
}

__attribute__((visibility("default"))) int dynftrace_static_key_dec(struct static_key *key)
{
	int err = 0;
	patch_lock();
	int c = key->enabled;
	if (c <= 0)
		err = -EINVAL;
	else if (c == 1)
		err = key_apply(key, 0);
	if (!err)
		__atomic_store_n(&key->enabled, c - 1, __ATOMIC_RELEASE);
	patch_unlock();
	return err;
}
