/* SPDX-License-Identifier: MIT */
/*
 * patch.c - live code patching with batched breakpoints (the kernel's
 * text_poke_bp_batch).
 *
 * The batch protocol, for N changes of LEN-byte instructions OLD -> NEW:
 *
 *   0. Check: every entry's current bytes equal OLD, and NEW is an
 *      instruction the trap handler can emulate. Else refuse, write nothing.
 *   1. Make every touched page writable: one mprotect per run of pages, once
 *      for the whole batch (fallback: writes through /proc/self/mem when the
 *      system refuses writable+executable mappings).
 *   2. Publish the sorted entry vector for the SIGTRAP handler.
 *   3. Write int3 over byte 0 of every entry.                     sync #1
 *   4. Write bytes 1..LEN-1 of NEW into every entry.              sync #2
 *   5. Write byte 0 of NEW into every entry.                      sync #3
 *   6. Unpublish the vector, wait until no handler still reads it, restore
 *      the protections.
 *
 *   thread at a site:  OLD ... | int3 -> handler emulates NEW | ... NEW
 *
 * So any number of sites costs exactly 3 syncs (the kernel still flushes per
 * page-sized chunk; one vector is what the kernel's batching came to). A sync is
 * membarrier(PRIVATE_EXPEDITED_SYNC_CORE): every thread of the process
 * serialises its core before it next runs user code.
 *
 * The handler finds the trapping address by binary search in the vector. A
 * thread can trap in step 3..5 yet run its handler only after step 6 (it was
 * preempted in between): the handler then finds no entry, sees that the
 * address is a declared patch point, and restarts the instruction (it traps
 * again if a newer batch holds it, and then finds that batch). The point set and the vector are
 * freed only after a Dekker-style handshake with the handlers' in-flight counter, so a handler
 * never reads freed memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "patch.h"
#include "arch.h"

#define PAGE_SIZE_MIN 4096

/* Handler-visible state.
 * | field        | written by                     | read by                  |
 * |--------------|--------------------------------|--------------------------|
 * | cur_batch    | patcher (patch_lock)           | trap handler (any thread)|
 * | points       | patcher (patch_lock)           | trap handler             |
 * | trap_active  | trap handler (atomic inc/dec)  | patcher                  |
 */
struct batch_vec {
	size_t n;
	struct patch_entry e[]; /* sorted by addr */
};
struct point_set {
	size_t n;
	uintptr_t a[]; /* sorted, unique */
};
static struct batch_vec *cur_batch;
static struct batch_vec *stuck_batch; /* a batch that could not be rolled back */
static struct point_set *points;
static unsigned long trap_active;

/* Everything below: patch_lock. */
static pthread_mutex_t plock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_t plock_owner;
static int plock_depth;
static int use_procmem = -1; /* -1 unknown: try mprotect first */
static char last_error[256];
static uintptr_t last_error_addr; /* site the last error is about, or 0 */
static long page_size;
static struct patch_counters ctr; /* updated atomically, read relaxed */
/* The signal layer's handler installer (given by patch_init, before any
 * batch): each batch checks our handler is still the kernel's. */
static int (*trap_install)(int (*handle)(siginfo_t *si, void *uc));

/* A thread holding the lock runs no callbacks (api_depth): a signal handler
 * or a destructor running traced code meanwhile cannot re-enter the runtime
 * through dispatch and deadlock on the registry. */
void patch_lock(void)
{
	dft_self.api_depth++;
	pthread_mutex_lock(&plock);
	plock_owner = pthread_self();
	plock_depth++;
}

int patch_trylock(void)
{
	dft_self.api_depth++;
	if (pthread_mutex_trylock(&plock)) {
		dft_self.api_depth--;
		return 0;
	}
	plock_owner = pthread_self();
	plock_depth++;
	return 1;
}

void patch_unlock(void)
{
	if (--plock_depth == 0)
		plock_owner = 0;
	pthread_mutex_unlock(&plock);
	dft_self.api_depth--;
}

int patch_lock_held(void)
{
	return plock_depth > 0 && pthread_equal(plock_owner, pthread_self());
}

const char *patch_last_error(void)
{
	return last_error;
}

uintptr_t patch_last_error_addr(void)
{
	return last_error_addr;
}

void patch_get_counters(struct patch_counters *c)
{
	c->batches = READ_ONCE(ctr.batches);
	c->syncs = READ_ONCE(ctr.syncs);
	c->sites_patched = READ_ONCE(ctr.sites_patched);
	c->traps = READ_ONCE(ctr.traps);
	c->late_traps = READ_ONCE(ctr.late_traps);
	c->early_writes = READ_ONCE(ctr.early_writes);
	c->last_batch_ns = READ_ONCE(ctr.last_batch_ns);
	c->last_batch_sites = READ_ONCE(ctr.last_batch_sites);
}

static void stat_add(unsigned long *p, unsigned long v)
{
	__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

/* Wait until no trap handler can still hold a pointer read before now. */
static void wait_handlers(void)
{
	while (__atomic_load_n(&trap_active, __ATOMIC_SEQ_CST) != 0)
		sched_yield();
}

static const struct patch_entry *batch_find(const struct batch_vec *b, uintptr_t addr)
{
	size_t lo = 0, hi = b->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (b->e[mid].addr == addr)
			return &b->e[mid];
		if (b->e[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int points_has(const struct point_set *p, uintptr_t addr)
{
	size_t lo = 0, hi = p ? p->n : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->a[mid] == addr)
			return 1;
		if (p->a[mid] < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/*
 * SIGTRAP entry (installed by interpose.c, which also keeps the program's own
 * SIGTRAP handler). Returns 1 when the trap was ours and has been handled.
 */
HIDDEN int patch_handle_trap(siginfo_t *si, void *uc)
{
	if (si->si_code != ARCH_TRAP_CODE)
		return 0; /* kill(), tgkill(), raise(): never ours */
	uintptr_t addr = arch_trap_addr(uc);
	int handled = 0;

	__atomic_add_fetch(&trap_active, 1, __ATOMIC_SEQ_CST);
	const struct batch_vec *b = __atomic_load_n(&cur_batch, __ATOMIC_SEQ_CST);
	const struct patch_entry *e = b ? batch_find(b, addr) : NULL;
	if (!e && (b = __atomic_load_n(&stuck_batch, __ATOMIC_SEQ_CST)))
		e = batch_find(b, addr);
	if (e) {
		arch_emulate(uc, e->addr, e->new, e->len);
		stat_add(&ctr.traps, 1);
		handled = 1;
	} else if (points_has(__atomic_load_n(&points, __ATOMIC_SEQ_CST), addr)) {
		/* Late: the int3 this thread met belonged to a batch that has
		 * finished. Whatever is at ADDR now (the final instruction, or
		 * the int3 of a newer batch we did not see published yet) is
		 * right to run: restart the instruction. Only the engine puts
		 * int3 on a declared point, so this is never a foreign trap. */
		arch_set_ip(uc, addr);
		stat_add(&ctr.late_traps, 1);
		handled = 1;
	}
	__atomic_sub_fetch(&trap_active, 1, __ATOMIC_SEQ_CST);
	return handled;
}

static int cmp_uptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

static void publish_points(struct point_set *np)
{
	struct point_set *old = points;
	__atomic_store_n(&points, np, __ATOMIC_SEQ_CST);
	wait_handlers();
	free(old);
}

/* The new points are sorted apart and merged into the old, already sorted
 * set: objects are added one at a time, and sorting the whole set again
 * for each made loading N objects quadratic. */
int patch_points_add(const uintptr_t *addrs, size_t n)
{
	size_t on = points ? points->n : 0;
	struct point_set *np = malloc(sizeof(*np) + (on + n) * sizeof(uintptr_t));
	uintptr_t *add = malloc((n ? n : 1) * sizeof(uintptr_t));
	if (!np || !add) {
		free(np);
		free(add);
		return -ENOMEM;
	}
	memcpy(add, addrs, n * sizeof(uintptr_t));
	qsort(add, n, sizeof(uintptr_t), cmp_uptr);
	size_t i = 0, j = 0, k = 0;
	while (i < on || j < n) {
		uintptr_t v =
		    j >= n || (i < on && points->a[i] < add[j]) ? points->a[i++] : add[j++];
		if (k == 0 || np->a[k - 1] != v)
			np->a[k++] = v;
	}
	free(add);
	np->n = k;
	publish_points(np);
	return 0;
}

void patch_points_remove_range(uintptr_t lo, uintptr_t hi)
{
	if (!points)
		return;
	struct point_set *np = malloc(sizeof(*np) + points->n * sizeof(uintptr_t));
	if (!np)
		return; /* keeping stale points is harmless: they are never int3 */
	size_t k = 0;
	for (size_t i = 0; i < points->n; i++)
		if (points->a[i] < lo || points->a[i] >= hi)
			np->a[k++] = points->a[i];
	np->n = k;
	publish_points(np);
}

/* ---- writing code ---------------------------------------------------- */

/* A run of pages made writable for one batch, with the protection to restore. */
struct prot_range {
	uintptr_t start, end;
	int prot;
};

struct writer {
	int procmem_fd; /* -1: direct stores into pages made writable */
	struct prot_range *r;
	size_t nr;
};

static int maps_prot(const char *perms)
{
	return (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
	       (perms[2] == 'x' ? PROT_EXEC : 0);
}

/*
 * Find the current protection of every page the entries touch, from
 * /proc/self/maps, and merge them into ranges of equal protection.
 */
static int collect_ranges(struct writer *w, const struct patch_entry *e, size_t n)
{
	size_t cap = 16;
	w->r = malloc(cap * sizeof(*w->r));
	w->nr = 0;
	if (!w->r)
		return -ENOMEM;
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	char line[512];
	uintptr_t ms = 0, me = 0;
	int mprot = 0;
	size_t i = 0;
	int err = 0;
	while (i < n) {
		uintptr_t p0 = e[i].addr & ~(uintptr_t)(page_size - 1);
		uintptr_t p1 = (e[i].addr + e[i].len - 1) & ~(uintptr_t)(page_size - 1);
		for (uintptr_t pg = p0; pg <= p1; pg += (uintptr_t)page_size) {
			while (!(pg >= ms && pg < me)) {
				unsigned long a, b;
				char perms[8];
				if (!fgets(line, sizeof(line), f)) {
					snprintf(last_error, sizeof(last_error),
						 "address %#lx is not mapped", (unsigned long)pg);
					err = -EFAULT;
					goto out;
				}
				if (sscanf(line, "%lx-%lx %7s", &a, &b, perms) != 3)
					continue;
				ms = a;
				me = b;
				mprot = maps_prot(perms);
				if (pg < ms) {
					snprintf(last_error, sizeof(last_error),
						 "address %#lx is not mapped", (unsigned long)pg);
					err = -EFAULT;
					goto out;
				}
			}
			struct prot_range *last = w->nr ? &w->r[w->nr - 1] : NULL;
			if (last && last->end == pg && last->prot == mprot) {
				last->end = pg + (uintptr_t)page_size;
			} else if (!(last && pg < last->end)) {
				if (w->nr == cap) {
					void *nr = realloc(w->r, 2 * cap * sizeof(*w->r));
					if (!nr) {
						err = -ENOMEM;
						goto out;
					}
					w->r = nr;
					cap *= 2;
				}
				w->r[w->nr++] =
				    (struct prot_range){pg, pg + (uintptr_t)page_size, mprot};
			}
		}
		i++;
	}
out:
	fclose(f);
	return err;
}

/* Give the pages their protection back (or close /proc/self/mem); the
 * ranges stay for another activation. No allocation. */
static void writer_deactivate(struct writer *w)
{
	if (w->procmem_fd >= 0) {
		close(w->procmem_fd);
		w->procmem_fd = -1;
	} else {
		for (size_t i = 0; i < w->nr; i++)
			mprotect((void *)w->r[i].start, w->r[i].end - w->r[i].start, w->r[i].prot);
	}
}

static void writer_close(struct writer *w)
{
	writer_deactivate(w);
	free(w->r);
	w->r = NULL;
}

/* Make the collected ranges writable, or open /proc/self/mem. No
 * allocation, no stdio: usable while every other thread is stopped
 * wherever it was (holding the allocator's locks, say). */
static int writer_activate(struct writer *w)
{
	int err;
	w->procmem_fd = -1;
	if (use_procmem != 1) {
		size_t i;
		for (i = 0; i < w->nr; i++) {
			if (mprotect((void *)w->r[i].start, w->r[i].end - w->r[i].start,
				     w->r[i].prot | PROT_WRITE) != 0)
				break;
		}
		if (i == w->nr) {
			use_procmem = 0;
			return 0;
		}
		err = -errno;
		while (i-- > 0)
			mprotect((void *)w->r[i].start, w->r[i].end - w->r[i].start, w->r[i].prot);
		if (err != -EACCES && err != -EPERM) {
			snprintf(last_error, sizeof(last_error), "mprotect of code failed: %s",
				 strerror(-err));
			goto fail;
		}
		dft_debug("writable code refused (%s): writing through /proc/self/mem",
			  strerror(-err));
		use_procmem = 1;
	}
	w->procmem_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (w->procmem_fd < 0) {
		err = -errno;
		snprintf(last_error, sizeof(last_error), "cannot open /proc/self/mem: %s",
			 strerror(errno));
		goto fail;
	}
	return 0;
fail:
	return err;
}

static int writer_open(struct writer *w, const struct patch_entry *e, size_t n)
{
	w->procmem_fd = -1;
	w->r = NULL;
	w->nr = 0;
	int err = collect_ranges(w, e, n);
	if (!err)
		err = writer_activate(w);
	if (err) {
		free(w->r);
		w->r = NULL;
	}
	return err;
}

/* Write LEN bytes at ADDR. Direct stores are byte stores of code the
 * protocol guarantees no thread executes in a torn state, except an
 * aligned word, which is one single-copy atomic store (a whole aarch64
 * instruction: see arch_insn_swappable). Then the architecture's cache
 * maintenance (arch_code_written). */
static int code_write(struct writer *w, uintptr_t addr, const uint8_t *src, size_t len)
{
	if (w->procmem_fd >= 0) {
		ssize_t r = pwrite(w->procmem_fd, src, len, (off_t)addr);
		if (r != (ssize_t)len) {
			snprintf(last_error, sizeof(last_error),
				 "write of %zu bytes at %#lx through /proc/self/mem failed: %s",
				 len, (unsigned long)addr, r < 0 ? strerror(errno) : "short write");
			return -EIO;
		}
		arch_code_written(addr, len);
		return 0;
	}
	if (len == 4 && !(addr & 3)) {
		uint32_t v;
		memcpy(&v, src, 4);
		__atomic_store_n((uint32_t *)addr, v, __ATOMIC_RELAXED);
	} else {
		volatile uint8_t *dst = (volatile uint8_t *)addr;
		for (size_t i = 0; i < len; i++)
			dst[i] = src[i];
	}
	arch_code_written(addr, len);
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct patch_entry *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Sort by address. Callers usually pass entries in site-table order,
 * already sorted: then skip qsort (a quarter of a 100,000-site batch). */
static void sort_entries(struct patch_entry *e, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		if (e[i].addr < e[i - 1].addr) {
			qsort(e, n, sizeof(*e), cmp_entry);
			return;
		}
	}
}

/* Step 0 of the protocol. */
/* RAW: NEW may be any code (written with every other thread stopped, never
 * met by a breakpoint), else an instruction the trap handler emulates. */
static int check_entries(const struct patch_entry *e, size_t n, int raw)
{
	for (size_t i = 0; i < n; i++) {
		if (e[i].len < 1 || e[i].len > PATCH_MAX_LEN ||
		    (!raw && !arch_insn_emulatable(e[i].new, e[i].len))) {
			snprintf(last_error, sizeof(last_error),
				 "refusing to write a non-emulatable instruction at %#lx",
				 (unsigned long)e[i].addr);
			return -EINVAL;
		}
		if (i && e[i].addr < e[i - 1].addr + e[i - 1].len) {
			snprintf(last_error, sizeof(last_error),
				 "overlapping patch entries at %#lx", (unsigned long)e[i].addr);
			return -EINVAL;
		}
		if (!points_has(points, e[i].addr)) {
			snprintf(last_error, sizeof(last_error),
				 "%#lx is not a declared patch point", (unsigned long)e[i].addr);
			return -EINVAL;
		}
		const uint8_t *cur = (const uint8_t *)e[i].addr;
		if (memcmp(cur, e[i].old, e[i].len) != 0) {
			last_error_addr = e[i].addr;
			char got[3 * PATCH_MAX_LEN + 1] = "", want[3 * PATCH_MAX_LEN + 1] = "";
			for (int k = 0; k < e[i].len; k++) {
				sprintf(got + 3 * k, "%02x ", cur[k]);
				sprintf(want + 3 * k, "%02x ", e[i].old[k]);
			}
			snprintf(last_error, sizeof(last_error),
				 "unexpected bytes at %#lx: found %sexpected %s",
				 (unsigned long)e[i].addr, got, want);
			return -EFAULT;
		}
	}
	return 0;
}

static unsigned long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long)ts.tv_sec * 1000000000UL + (unsigned long)ts.tv_nsec;
}

static void do_sync(void)
{
	arch_sync_core();
	stat_add(&ctr.syncs, 1);
}

int patch_batch(const struct patch_entry *entries, size_t n)
{
	if (n == 0)
		return 0;
	unsigned long t0 = now_ns();
	struct batch_vec *b = malloc(sizeof(*b) + n * sizeof(b->e[0]));
	if (!b)
		return -ENOMEM;
	b->n = n;
	memcpy(b->e, entries, n * sizeof(b->e[0]));
	sort_entries(b->e, n);

	int err = check_entries(b->e, n, 0);
	if (err) {
		free(b);
		return err;
	}
	/* A raw rt_sigaction may have replaced our handler: reclaim it (and
	 * chain the newcomer) before any thread can meet an int3. */
	err = trap_install(patch_handle_trap);
	if (err) {
		snprintf(last_error, sizeof(last_error), "cannot install the SIGTRAP handler: %s",
			 strerror(-err));
		free(b);
		return err;
	}
	struct writer w;
	err = writer_open(&w, b->e, n);
	if (err) {
		free(b);
		return err;
	}
	/* Every change one store the architecture allows on running code
	 * (aarch64: NOP/B/BL words), and a direct writer: one store each and
	 * one sync, no breakpoint. */
	size_t nswap = 0;
	while (w.procmem_fd < 0 && nswap < n &&
	       arch_insn_swappable(b->e[nswap].addr, b->e[nswap].old, b->e[nswap].new,
				   b->e[nswap].len))
		nswap++;
	if (nswap == n) {
		for (size_t k = 0; k < n && !err; k++)
			err = code_write(&w, b->e[k].addr, b->e[k].new, b->e[k].len);
		do_sync();
		writer_close(&w);
		free(b);
		if (!err) {
			stat_add(&ctr.batches, 1);
			stat_add(&ctr.sites_patched, n);
			WRITE_ONCE(ctr.last_batch_sites, n);
			WRITE_ONCE(ctr.last_batch_ns, now_ns() - t0);
		}
		return err;
	}
	__atomic_store_n(&cur_batch, b, __ATOMIC_SEQ_CST);

	/* BK: the breakpoint's bytes, the first ones of every entry. */
	const size_t bk = ARCH_BRK_LEN;
	size_t i = 0, done1 = 0, done2 = 0;
	for (i = 0; i < n && !err; i++, done1++)
		err = code_write(&w, b->e[i].addr, arch_breakpoint, bk);
	if (!err) {
		do_sync();
		for (i = 0; i < n && !err; i++, done2++)
			if (b->e[i].len > bk)
				err = code_write(&w, b->e[i].addr + bk, b->e[i].new + bk,
						 b->e[i].len - bk);
	}
	if (!err) {
		do_sync();
		for (i = 0; i < n && !err; i++)
			err = code_write(&w, b->e[i].addr, b->e[i].new, bk);
		if (!err)
			do_sync();
	}
	if (err) {
		/* Roll back: the handler emulates OLD from now on, then the old
		 * bytes go back in the same order (tails, then first bytes). */
		for (i = 0; i < n; i++)
			memcpy(b->e[i].new, b->e[i].old, b->e[i].len);
		int rerr = 0;
		arch_sync_memory();
		for (i = 0; i < done2 && !rerr; i++)
			if (b->e[i].len > bk)
				rerr = code_write(&w, b->e[i].addr + bk, b->e[i].old + bk,
						  b->e[i].len - bk);
		arch_sync_core();
		for (i = 0; i < done1 && !rerr; i++)
			rerr = code_write(&w, b->e[i].addr, b->e[i].old, bk);
		arch_sync_core();
		if (rerr) {
			/* Some int3 may remain: keep emulating OLD there forever. */
			__atomic_store_n(&stuck_batch, b, __ATOMIC_SEQ_CST);
			__atomic_store_n(&cur_batch, NULL, __ATOMIC_SEQ_CST);
			writer_close(&w);
			return err;
		}
	}
	__atomic_store_n(&cur_batch, NULL, __ATOMIC_SEQ_CST);
	wait_handlers();
	writer_close(&w);
	free(b);
	if (!err) {
		stat_add(&ctr.batches, 1);
		stat_add(&ctr.sites_patched, n);
		WRITE_ONCE(ctr.last_batch_sites, n);
		WRITE_ONCE(ctr.last_batch_ns, now_ns() - t0);
	}
	return err;
}

int patch_write_early(const struct patch_entry *entries, size_t n)
{
	if (n == 0)
		return 0;
	struct patch_entry *v = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, entries, n * sizeof(*v));
	sort_entries(v, n);
	int err = check_entries(v, n, 0);
	struct writer w;
	if (!err)
		err = writer_open(&w, v, n);
	if (!err) {
		for (size_t i = 0; i < n && !err; i++)
			err = code_write(&w, v[i].addr, v[i].new, v[i].len);
		arch_sync_core();
		writer_close(&w);
		if (!err)
			stat_add(&ctr.early_writes, n);
	}
	free(v);
	return err;
}

struct patch_prep {
	struct patch_entry *v; /* sorted, checked when prepared and again at commit */
	size_t n;
	int raw;	 /* patch_early_prepare_raw's */
	struct writer w; /* ranges collected; inactive between uses */
};

/*
 * Make the commit's pages private copies now, while the program runs: the
 * first write to a page of a file's text takes a copy-on-write fault, and a
 * 100,000-site commit would take hundreds of them with every thread
 * stopped. Each page gets one of its bytes written back unchanged, which no
 * thread running it can tell from no write at all.
 */
static int prefault_pages(struct patch_prep *p)
{
	int err = writer_activate(&p->w);
	if (err)
		return err;
	uintptr_t last = 0;
	for (size_t i = 0; i < p->n && !err; i++) {
		uintptr_t pg = p->v[i].addr & ~(uintptr_t)(page_size - 1);
		if (pg == last)
			continue;
		last = pg;
		uint8_t b = *(volatile const uint8_t *)p->v[i].addr;
		err = code_write(&p->w, p->v[i].addr, &b, 1);
	}
	writer_deactivate(&p->w);
	return err;
}

static int early_prepare(const struct patch_entry *entries, size_t n, struct patch_prep **out,
			 int raw)
{
	*out = NULL;
	struct patch_prep *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->raw = raw;
	p->w.procmem_fd = -1;
	p->v = malloc((n ? n : 1) * sizeof(*p->v));
	if (!p->v) {
		free(p);
		return -ENOMEM;
	}
	int err = 0;
	if (n) {
		memcpy(p->v, entries, n * sizeof(*p->v));
		p->n = n;
		sort_entries(p->v, n);
		err = check_entries(p->v, n, raw);
		if (!err)
			err = collect_ranges(&p->w, p->v, n);
		if (!err)
			err = prefault_pages(p);
	}
	if (err) {
		patch_early_free(p);
		return err;
	}
	*out = p;
	return 0;
}

int patch_early_prepare(const struct patch_entry *entries, size_t n, struct patch_prep **out)
{
	return early_prepare(entries, n, out, 0);
}

int patch_early_prepare_raw(const struct patch_entry *entries, size_t n, struct patch_prep **out)
{
	return early_prepare(entries, n, out, 1);
}

int patch_early_commit(struct patch_prep *p)
{
	if (!p->n)
		return 0;
	int err = check_entries(p->v, p->n, p->raw);
	if (!err)
		err = writer_activate(&p->w);
	if (err)
		return err;
	for (size_t i = 0; i < p->n && !err; i++)
		err = code_write(&p->w, p->v[i].addr, p->v[i].new, p->v[i].len);
	arch_sync_core();
	writer_deactivate(&p->w);
	if (!err)
		stat_add(&ctr.early_writes, p->n);
	return err;
}

void patch_early_free(struct patch_prep *p)
{
	if (!p)
		return;
	free(p->w.r);
	free(p->v);
	free(p);
}

int patch_write_atomic(const struct patch_entry *e, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (e[i].len != 8 || (e[i].addr & 7) || (i && e[i].addr <= e[i - 1].addr)) {
			snprintf(last_error, sizeof(last_error), "bad atomic entry at %#lx",
				 (unsigned long)e[i].addr);
			return -EINVAL;
		}
		if (memcmp((const void *)e[i].addr, e[i].old, 8)) {
			last_error_addr = e[i].addr;
			snprintf(last_error, sizeof(last_error), "unexpected bytes at %#lx",
				 (unsigned long)e[i].addr);
			return -EFAULT;
		}
	}
	unsigned long t0 = now_ns();
	struct writer w;
	int err = writer_open(&w, e, n);
	if (err)
		return err;
	if (w.procmem_fd >= 0) {
		writer_close(&w);
		return -EOPNOTSUPP;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t v;
		memcpy(&v, e[i].new, 8);
		__atomic_store_n((uint64_t *)e[i].addr, v, __ATOMIC_RELEASE);
		arch_code_written(e[i].addr, 8);
	}
	writer_close(&w);
	arch_sync_core();
	stat_add(&ctr.batches, 1);
	stat_add(&ctr.syncs, 1);
	stat_add(&ctr.sites_patched, n);
	WRITE_ONCE(ctr.last_batch_sites, n);
	WRITE_ONCE(ctr.last_batch_ns, now_ns() - t0);
	return 0;
}

int patch_write_data(const struct patch_entry *e, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (e[i].len < 1 || e[i].len > PATCH_MAX_LEN || (i && e[i].addr <= e[i - 1].addr)) {
			snprintf(last_error, sizeof(last_error), "bad data entry at %#lx",
				 (unsigned long)e[i].addr);
			return -EINVAL;
		}
		if (memcmp((const void *)e[i].addr, e[i].old, e[i].len)) {
			last_error_addr = e[i].addr;
			snprintf(last_error, sizeof(last_error),
				 "unexpected data at %#lx (a CALL_OPS literal)",
				 (unsigned long)e[i].addr);
			return -EFAULT;
		}
	}
	struct writer w;
	int err = writer_open(&w, e, n);
	if (err)
		return err;
	for (size_t i = 0; i < n && !err; i++) {
		if (w.procmem_fd < 0 && e[i].len == 8 && !(e[i].addr & 7)) {
			uint64_t v;
			memcpy(&v, e[i].new, 8);
			__atomic_store_n((uint64_t *)e[i].addr, v, __ATOMIC_RELEASE);
		} else {
			err = code_write(&w, e[i].addr, e[i].new, e[i].len);
		}
	}
	writer_close(&w);
	return err;
}

int patch_init(int (*install)(int (*handle)(siginfo_t *si, void *uc)))
{
	trap_install = install;
	if (!page_size) {
		page_size = sysconf(_SC_PAGESIZE);
		if (page_size < PAGE_SIZE_MIN)
			page_size = PAGE_SIZE_MIN;
		const char *m = dft_getenv("DYNFTRACE_POKE");
		if (m && !strcmp(m, "procmem"))
			use_procmem = 1;
	}
	int err = arch_sync_init();
	if (err)
		return err;
	return trap_install(patch_handle_trap);
}

/* After fork the child is single-threaded and owns nothing in flight. */
HIDDEN void patch_atfork_child(void)
{
	plock_depth = 0;
	plock_owner = 0;
	pthread_mutex_t fresh = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	plock = fresh;
	/* The lock taken by atfork_prepare is gone with it: else this thread
	 * never runs a callback again. */
	dft_self.api_depth = 0;
	/* A handler of a thread that no longer exists may have been counted
	 * (a late trap after the last batch): nobody would ever uncount it. */
	__atomic_store_n(&trap_active, 0, __ATOMIC_RELAXED);
}

/* Detach: no site left to patch, no thread in a handler (the caller
 * checked): the point set goes. */
void patch_detach_free(void)
{
	free(points);
	points = NULL;
}
