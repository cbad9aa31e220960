/* SPDX-License-Identifier: MIT */
/*
 * sites.c - finding the sites of every loaded object and making them NOPs
 * (no daemon; conversion happens when the object is found, before
 * its code can run on another thread).
 *
 * Objects are found with dl_iterate_phdr at start-up and after every
 * dlopen/dlclose (interpose.c). For each new object:
 *   1. elf_load() reads its records and symbols (from memory: relocated);
 *   2. every site is checked: the NOPs the compiler left (gcc: 90 x5,
 *      clang: 0f 1f 44 00 08), `call __fentry__` (e8, or the 6-byte
 *      ff 15 / 67 e8 forms in PIE code) or an existing canonical NOP;
 *      anything else is refused and reported, never overwritten;
 *   3. all accepted sites become the canonical 5-byte NOP in one early write
 *      (a 6-byte site becomes NOP5 + 90);
 *   4. a copy of the common trampoline is placed within rel32 reach;
 *   5. the sites join the sorted table and registered ops get their say.
 *
 * All of it runs under patch_lock.
 */
#include <errno.h>
#include <link.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "patch.h"
#include "sites.h"
#include "hooks.h"
#include "arch.h"

HIDDEN struct site *site_tab;
HIDDEN size_t site_count;
HIDDEN struct dft_object **obj_tab;
HIDDEN size_t obj_count;
HIDDEN unsigned long sites_converted, sites_refused;
/* Set by sites_init_deferred() for its scan only (patch_lock held). */
static int sites_defer;
static uintptr_t self_base; /* the runtime's load bias (sites_rescan) */
HIDDEN uint32_t site_next_id;
HIDDEN unsigned long sites_gen;

HIDDEN struct id_hash *id_hash;

uint32_t site_id_lookup(uintptr_t ip)
{
	return site_id_lookup_inline(ip);
}

static void id_hash_rebuild(void)
{
	size_t n = 16;
	while (n < 2 * site_count + 2)
		n <<= 1;
	struct id_hash *h = calloc(1, sizeof(*h) + n * sizeof(h->slot[0]));
	if (!h) {
		dft_log("out of memory for the site index: tracers lose events");
		return;
	}
	h->mask = n - 1;
	for (size_t k = 0; k < site_count; k++) {
		size_t i = id_hash_fn(site_tab[k].addr, h->mask);
		while (h->slot[i].ip)
			i = (i + 1) & h->mask;
		h->slot[i].ip = site_tab[k].addr;
		h->slot[i].id = site_tab[k].id;
	}
	struct id_hash *old = id_hash;
	__atomic_store_n(&id_hash, h, __ATOMIC_RELEASE);
	if (old) {
		rcu_synchronize();
		free(old);
	}
}

uint64_t site_func_size(const struct site *s)
{
	if (s->flags & SITE_FL_RELOC)
		return s->obj->img.entries[s->func].size;
	if (s->func < 0 || (size_t)s->func >= s->obj->img.nfuncs)
		return 0;
	return s->obj->img.funcs[s->func].size;
}

/* ---- trampoline regions ---------------------------------------------- */

/*
 * A region is REGION_SIZE bytes of executable memory within rel32 reach of
 * the objects that use it, holding (never rewritten once made):
 *   +0     common trampoline copy whose C entry is dft_dispatch
 *   +1024  common trampoline copy whose C entry is dft_callops_entry
 *   +2048  per-ops body (dft_ops_tmpl) whose C entry is dft_stub_entry
 *   +3072  graph shortcut entry (dft_gentry_tmpl), +4096 its exit; 512
 *          bytes into each, the preserving thunks' (relocated entries)
 *   +5120  light per-ops body (dft_ops_light_tmpl): general registers only,
 *          the common case in assembly, else it jumps to the +2048 body
 *   +6144  light CALL_OPS body (dft_callops_light_tmpl): general registers
 *          only, for a literal holding a GPR_ONLY ops, else the +1024 copy;
 *          512 bytes into it, the relocated entries' light body
 *   +7168  REGION_STUBS stubs, stub k hands `region << 12 | k` to its body,
 *          body +2048 for the first REGION_STUBS_FULL, +5120 for the rest
 * Each template has REGION_COPY_MAX (1 KiB) of room: the full ones keep
 * the ymm/zmm upper halves too (EVEX instructions are long).
 * Regions are never unmapped: a thread may be inside one at any time. Stubs
 * are handed to ops and taken back (ops.c), never rewritten.
 */
#ifndef ARCH_REGION_GAP
#define ARCH_REGION_GAP 0
#endif

HIDDEN struct region regions[MAX_REGIONS];
HIDDEN size_t nregions;

static struct sites_client client; /* sites_set_client */

void sites_set_client(const struct sites_client *c)
{
	client = *c;
}

static void put_slot(char *base, size_t off, const char *tmpl, const char *slot, void *fn)
{
	memcpy(base + off + (slot - tmpl), &fn, sizeof(fn));
}

static void put_copy(char *base, size_t off, const char *tmpl, const char *end, const char *slot,
		     void *fn)
{
	_Static_assert(REGION_CALLOPS - REGION_CALLER == REGION_COPY_MAX &&
			   REGION_GRAPH - REGION_OPS == REGION_COPY_MAX &&
			   REGION_GEXIT - REGION_GRAPH == REGION_COPY_MAX &&
			   REGION_OPS_LIGHT - REGION_GEXIT == REGION_COPY_MAX &&
			   REGION_CALLOPS_LIGHT - REGION_OPS_LIGHT == REGION_COPY_MAX &&
			   REGION_STUB0 - REGION_CALLOPS_LIGHT >= REGION_COPY_MAX,
		       "region layout");
	if (end - tmpl > REGION_COPY_MAX) /* a template grew: never overlap */
		abort();
	memcpy(base + off, tmpl, (size_t)(end - tmpl));
	put_slot(base, off, tmpl, slot, fn);
}

static uintptr_t region_new(uintptr_t lo, uintptr_t hi, uint32_t rno)
{
	long pg = sysconf(_SC_PAGESIZE);
	/* Try just above the object, then below it, moving out 1 MiB at a time;
	 * first ARCH_REGION_GAP away when the backend gives one (its direct
	 * calls reach less far than its sites' longest form: riscv64). */
	for (int i = ARCH_REGION_GAP ? -2 : 0; i < 2048; i++) {
		uintptr_t step = i < 0 ? ARCH_REGION_GAP : (uintptr_t)(i / 2 + 1) << 20;
		uintptr_t hint = (i & 1) ? ((lo - step) & ~(uintptr_t)(pg - 1))
					 : ((hi + step) & ~(uintptr_t)(pg - 1));
		if ((i & 1) && lo < step + REGION_SIZE)
			continue;
		void *p = mmap((void *)hint, REGION_SIZE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p == MAP_FAILED)
			continue;
		uintptr_t base = (uintptr_t)p;
		if (!sites_reaches(base, lo, hi) || base != hint) {
			munmap(p, REGION_SIZE);
			continue;
		}
		char *b = p;
		arch_fill_trap(b, REGION_SIZE);
		put_copy(b, REGION_CALLER, dft_caller_tmpl, dft_caller_tmpl_end,
			 dft_caller_tmpl_slot, client.dispatch);
		put_copy(b, REGION_CALLOPS, dft_caller_tmpl, dft_caller_tmpl_end,
			 dft_caller_tmpl_slot, client.callops_entry);
		put_copy(b, REGION_OPS, dft_ops_tmpl, dft_ops_tmpl_end, dft_ops_tmpl_slot,
			 client.stub_entry);
		/* which vector uppers the full copies keep (tramp.S) */
		void *vec = (void *)(uintptr_t)arch_vec_kind();
		put_slot(b, REGION_CALLER, dft_caller_tmpl, dft_caller_tmpl_vec, vec);
		put_slot(b, REGION_CALLOPS, dft_caller_tmpl, dft_caller_tmpl_vec, vec);
		put_slot(b, REGION_OPS, dft_ops_tmpl, dft_ops_tmpl_vec, vec);
		put_copy(b, REGION_GRAPH, dft_gentry_tmpl, dft_gentry_tmpl_end,
			 dft_gentry_tmpl_fast, (void *)dft_graph_entry);
		put_copy(b, REGION_GEXIT, dft_gexit_tmpl, dft_gexit_tmpl_end, dft_gexit_tmpl_fast,
			 (void *)dft_graph_exit);
		put_copy(b, REGION_GRAPH_WIDE, dft_gentry_tmpl, dft_gentry_tmpl_end,
			 dft_gentry_tmpl_fast, (void *)dft_graph_entry_wide);
		if (dft_gentry_tmpl_end - dft_gentry_tmpl > REGION_GRAPH_WIDE - REGION_GRAPH ||
		    dft_gexit_tmpl_end - dft_gexit_tmpl > REGION_GEXIT_ALL - REGION_GEXIT)
			abort(); /* the two copies would overlap */
		put_copy(b, REGION_GRAPH_ALL, dft_gentry_tmpl, dft_gentry_tmpl_end,
			 dft_gentry_tmpl_fast, (void *)dft_graph_entry_all);
		put_copy(b, REGION_GRAPH_ALL_WIDE, dft_gentry_tmpl, dft_gentry_tmpl_end,
			 dft_gentry_tmpl_fast, (void *)dft_graph_entry_all_wide);
		put_copy(b, REGION_GEXIT_ALL, dft_gexit_tmpl, dft_gexit_tmpl_end,
			 dft_gexit_tmpl_fast, (void *)dft_graph_exit_all);
		put_copy(b, REGION_OPS_LIGHT, dft_ops_light_tmpl, dft_ops_light_tmpl_end,
			 dft_ops_light_tmpl_full, b + REGION_OPS);
		intptr_t tls;
		const void *seq, *gp;
		client.light_slots(&tls, &seq, &gp);
		put_slot(b, REGION_OPS_LIGHT, dft_ops_light_tmpl, dft_ops_light_tmpl_table,
			 regions[rno].stub_ops);
		put_slot(b, REGION_OPS_LIGHT, dft_ops_light_tmpl, dft_ops_light_tmpl_stub0,
			 b + REGION_STUB0);
		put_slot(b, REGION_OPS_LIGHT, dft_ops_light_tmpl, dft_ops_light_tmpl_tls,
			 (void *)tls);
		put_slot(b, REGION_OPS_LIGHT, dft_ops_light_tmpl, dft_ops_light_tmpl_seq,
			 (void *)seq);
		put_slot(b, REGION_OPS_LIGHT, dft_ops_light_tmpl, dft_ops_light_tmpl_gp,
			 (void *)gp);
		put_copy(b, REGION_CALLOPS_LIGHT, dft_callops_light_tmpl,
			 dft_callops_light_tmpl_end, dft_callops_light_tmpl_full,
			 b + REGION_CALLOPS);
		put_slot(b, REGION_CALLOPS_LIGHT, dft_callops_light_tmpl,
			 dft_callops_light_tmpl_tls, (void *)tls);
		put_slot(b, REGION_CALLOPS_LIGHT, dft_callops_light_tmpl,
			 dft_callops_light_tmpl_seq, (void *)seq);
		put_slot(b, REGION_CALLOPS_LIGHT, dft_callops_light_tmpl, dft_callops_light_tmpl_gp,
			 (void *)gp);
		if (dft_callops_light_tmpl_end - dft_callops_light_tmpl >
			REGION_RELOC_LIGHT - REGION_CALLOPS_LIGHT ||
		    dft_reloc_light_tmpl_end - dft_reloc_light_tmpl >
			REGION_STUB0 - REGION_RELOC_LIGHT)
			abort(); /* the copies would overlap */
		memcpy(b + REGION_RELOC_LIGHT, dft_reloc_light_tmpl,
		       (size_t)(dft_reloc_light_tmpl_end - dft_reloc_light_tmpl));
		put_slot(b, REGION_RELOC_LIGHT, dft_reloc_light_tmpl, dft_reloc_light_tmpl_tls,
			 (void *)tls);
		put_slot(b, REGION_RELOC_LIGHT, dft_reloc_light_tmpl, dft_reloc_light_tmpl_seq,
			 (void *)seq);
		put_slot(b, REGION_RELOC_LIGHT, dft_reloc_light_tmpl, dft_reloc_light_tmpl_gp,
			 (void *)gp);
		for (uint32_t k = 0; k < REGION_STUBS; k++) {
			uint8_t *st = (uint8_t *)b + REGION_STUB0 + ARCH_STUB_SIZE * k;
			uintptr_t body =
			    base + (k < REGION_STUBS_FULL ? REGION_OPS : REGION_OPS_LIGHT);
			arch_stub_write(st, rno << 12 | k, body);
		}
		if (mprotect(p, REGION_SIZE, PROT_READ | PROT_EXEC) != 0) {
			munmap(p, REGION_SIZE);
			return 0;
		}
		__builtin___clear_cache(b, b + REGION_SIZE);
		return base;
	}
	return 0;
}

uintptr_t region_far_jump(struct region *r, uintptr_t addr)
{
	long pg = sysconf(_SC_PAGESIZE);
	if (!r->direct_page) {
		/* next to the region: try the pages right after it, then before */
		for (int i = 0; i < 64 && !r->direct_page; i++) {
			uintptr_t hint = i < 32
					     ? r->base + REGION_SIZE + (uintptr_t)i * (uintptr_t)pg
					     : r->base - (uintptr_t)(i - 31) * (uintptr_t)pg;
			void *p = mmap((void *)hint, (size_t)pg, PROT_READ | PROT_EXEC,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p != MAP_FAILED && (uintptr_t)p != hint)
				munmap(p, (size_t)pg); /* a kernel that took it as a hint */
			else if (p != MAP_FAILED)
				r->direct_page = (uintptr_t)p;
		}
		if (!r->direct_page)
			return 0;
	}
	uintptr_t page = r->direct_page;
	/* reuse a jump to the same target */
	for (uint32_t i = 0; i < r->direct_used; i++)
		if (arch_far_jump_target((const uint8_t *)(page + ARCH_FAR_JUMP_SIZE * i)) == addr)
			return page + ARCH_FAR_JUMP_SIZE * i;
	if (r->direct_used >= (uint32_t)(pg / ARCH_FAR_JUMP_SIZE))
		return 0;
	uint8_t j[ARCH_FAR_JUMP_SIZE];
	arch_far_jump_write(j, addr);
	if (mprotect((void *)page, (size_t)pg, PROT_READ | PROT_WRITE) != 0)
		return 0;
	memcpy((void *)(page + ARCH_FAR_JUMP_SIZE * r->direct_used), j, sizeof(j));
	mprotect((void *)page, (size_t)pg, PROT_READ | PROT_EXEC);
	return page + ARCH_FAR_JUMP_SIZE * r->direct_used++;
}

/*
 * Graph shortcut thunks (tramp.S shows one): THUNK_SIZE bytes per site of
 * O, made all at once the first time one of its sites takes the shortcut,
 * next to its region (so that both the region's common code and the
 * object's code are within rel32 reach), and never rewritten: a traced
 * call returns through its thunk however long it runs. Unmapped with the
 * object.
 */
static void thunk_write(uint8_t *t, const struct site *s, const struct region *r)
{
	int wide = s->id > SITE_ID16_MAX;
	if (s->flags & SITE_FL_RELOC)
		arch_graph_thunk_write(t, s->id, s->at,
				       r->base + (wide ? REGION_GRAPH_ALL_WIDE : REGION_GRAPH_ALL),
				       r->base + REGION_GEXIT_ALL, 1);
	else
		arch_graph_thunk_write(t, s->id, s->at,
				       r->base + (wide ? REGION_GRAPH_WIDE : REGION_GRAPH),
				       r->base + REGION_GEXIT, 0);
}

/* The thunks of O's compiler sites (RELOC 0: ids id0 ..) or of its
 * relocated entries (1: ids rel_id0 ..), into *AT and *LEN. */
static int thunks_make(struct dft_object *o, int reloc, uintptr_t *at, size_t *len_out)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t n = reloc ? o->nreloc : o->nsites;
	uint32_t id0 = reloc ? o->rel_id0 : o->id0;
	size_t len = (n * THUNK_SIZE + (size_t)pg - 1) & ~(size_t)(pg - 1);
	uint8_t *p = (uint8_t *)sites_map_near(o, len);
	if (!p)
		return -ENOMEM;
	for (size_t k = 0; k < site_count; k++) {
		const struct site *s = &site_tab[k];
		if (s->obj == o && !(s->flags & SITE_FL_RELOC) == !reloc)
			thunk_write(p + (size_t)(s->id - id0) * THUNK_SIZE, s, o->region);
	}
	if (mprotect(p, len, PROT_READ | PROT_EXEC) != 0) {
		munmap(p, len);
		return -errno;
	}
	__builtin___clear_cache((char *)p, (char *)p + len);
	*at = (uintptr_t)p;
	*len_out = len;
	return 0;
}

uintptr_t site_thunk(struct site *s)
{
	struct dft_object *o = s->obj;
	int reloc = (s->flags & SITE_FL_RELOC) != 0;
	uintptr_t *at = reloc ? &o->rthunks : &o->thunks;
	size_t *len = reloc ? &o->rthunks_len : &o->thunks_len;
	if (!THUNK_SIZE || !o->region || *len == SIZE_MAX)
		return 0; /* no graph shortcut on this architecture */
	if (!*at && thunks_make(o, reloc, at, len)) {
		dft_debug("%s: no memory for graph thunks within reach: the per-ops route",
			  o->path);
		*len = SIZE_MAX; /* tried */
		return 0;
	}
	return *at + (uintptr_t)(s->id - (reloc ? o->rel_id0 : o->id0)) * THUNK_SIZE;
}

/* Within ARCH_SITE_NEAR of every byte of [LO, HI)? (Where a backend's
 * sites reach less far with their shorter form, a region that close is
 * preferred to sharing a farther one: riscv64's jal.) */
#ifndef ARCH_SITE_NEAR
#define ARCH_SITE_NEAR ARCH_SITE_REACH
#endif
static int region_near(uintptr_t base, uintptr_t lo, uintptr_t hi)
{
	uintptr_t a = base < lo ? lo - base : base - lo;
	uintptr_t b = base < hi ? hi - base : base - hi;
	return a + REGION_SIZE < ARCH_SITE_NEAR && b + REGION_SIZE < ARCH_SITE_NEAR;
}

static struct region *region_for(uintptr_t lo, uintptr_t hi)
{
	for (size_t i = 0; i < nregions; i++)
		if (region_near(regions[i].base, lo, hi) && sites_reaches(regions[i].base, lo, hi))
			return &regions[i];
	uintptr_t b = nregions < MAX_REGIONS ? region_new(lo, hi, (uint32_t)nregions) : 0;
	if (!b) {
		for (size_t i = 0; i < nregions; i++)
			if (sites_reaches(regions[i].base, lo, hi))
				return &regions[i];
		return NULL;
	}
	struct region *r = &regions[nregions];
	r->base = b;
	r->no = (uint32_t)nregions;
	/* Publish after the fields: dft_stub_entry reads regions[] lock-free. */
	__atomic_store_n(&nregions, nregions + 1, __ATOMIC_RELEASE);
	return r;
}

/* ---- objects ----------------------------------------------------------- */

const char *site_func_name(const struct site *s)
{
	if (s->flags & SITE_FL_RELOC)
		return elf_entry_name(&s->obj->img, &s->obj->img.entries[s->func]);
	return elf_func_name(&s->obj->img, s->func);
}

uint64_t site_func_start(const struct site *s)
{
	const struct elf_image *img = &s->obj->img;
	uint64_t a = s->addr - s->obj->bias;
	if (s->flags & SITE_FL_RELOC)
		return img->entries[s->func].addr;
	size_t lo = 0, hi = img->nsites;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (img->sites[mid].addr < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < img->nsites && img->sites[lo].addr == a)
		return a - img->sites[lo].marker;
	return a;
}

static int cmp_site(const void *a, const void *b)
{
	const struct site *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* site_tab is sorted up to OLD; the sites after it (one object's) are
 * sorted apart and merged in: sorting the whole table again for each
 * object made loading N objects quadratic. */
static void site_tab_merge(size_t old)
{
	size_t n = site_count - old;
	qsort(site_tab + old, n, sizeof(*site_tab), cmp_site);
	if (!old || !n || site_tab[old - 1].addr < site_tab[old].addr)
		return;
	struct site *tmp = malloc(n * sizeof(*tmp));
	if (!tmp) {
		qsort(site_tab, site_count, sizeof(*site_tab), cmp_site);
		return;
	}
	memcpy(tmp, site_tab + old, n * sizeof(*tmp));
	size_t i = old, j = n, k = site_count;
	while (j) {
		if (i && site_tab[i - 1].addr > tmp[j - 1].addr)
			site_tab[--k] = site_tab[--i];
		else
			site_tab[--k] = tmp[--j];
	}
	free(tmp);
}

/* Is the call at AT (5 bytes, e8) a call of __fentry__ / mcount? */
static int is_fentry_target(uintptr_t target)
{
	Dl_info info;
	if (dladdr((void *)target, &info) && info.dli_sname && info.dli_saddr == (void *)target)
		return !strcmp(info.dli_sname, "__fentry__") || !strcmp(info.dli_sname, "mcount") ||
		       !strcmp(info.dli_sname, "_mcount");
	return -1; /* unknown: a PLT stub has no symbol */
}

/*
 * Is TARGET a PLT stub whose GOT slot leads to __fentry__/mcount, or still
 * points back into the object (lazy binding, not resolved yet)?
 */
static int plt_to_fentry(const struct dft_object *o, uintptr_t target)
{
	if (!object_code_has(o, target, 16))
		return 0;
	uintptr_t slot = arch_plt_got_slot(target);
	if (!slot)
		return 0;
	uintptr_t val = *(const uintptr_t *)slot;
	if (val >= o->lo && val < o->hi)
		return 1; /* lazy: the stub's resolver path */
	return is_fentry_target(val) == 1;
}

/*
 * Decide what the bytes at a site are. Returns 1 if it must be rewritten to
 * the canonical NOP (OLD filled), 0 if it already is one, -1 to refuse.
 */
static int classify(const struct dft_object *o, const struct elf_site *es, uintptr_t a,
		    struct patch_entry *pe)
{
	const uint8_t *p = (const uint8_t *)a;
	pe->addr = a;
	pe->len = es->len;
	memcpy(pe->old, p, es->len);
	arch_nop_fill(pe->new, es->len);
	uintptr_t target = 0;
	switch (arch_site_compiled(p, es->len, a, &target)) {
	case ARCH_SITE_CANONICAL:
		return 0;
	case ARCH_SITE_NOPS:
		return 1;
	case ARCH_SITE_CALL:
	case ARCH_SITE_CALL_GOT:
		if (es->kind == SITE_FENTRY)
			break;
		return -1;
	default:
		return -1;
	}
	int f = is_fentry_target(target);
	if (f == 0)
		return -1;
	if (f < 0 && !plt_to_fentry(o, target))
		return -1;
	return 1;
}

static void object_free(struct dft_object *o)
{
	patch_early_free(o->pending);
	patch_early_free(o->committed);
	patch_early_free(o->rel_pending);
	patch_early_free(o->rel_committed);
	patch_early_free(o->rel_restore);
	entries_free(o);
	/* Its thunks: only a thread running the object's own code (gone
	 * now) could still be in one. */
	if (o->thunks && o->thunks_len != SIZE_MAX)
		munmap((void *)o->thunks, o->thunks_len);
	if (o->rthunks && o->rthunks_len != SIZE_MAX)
		munmap((void *)o->rthunks, o->rthunks_len);
	if (o->blocks)
		munmap((void *)o->blocks, o->blocks_len);
	elf_free(&o->img);
	free(o->path);
	free(o);
}

/* Add the sites of a newly found object. patch_lock held. */
static int object_add(const char *path, uintptr_t bias, const ElfW(Phdr) * ph, int phnum, int main)
{
	struct dft_object *o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->path = strdup(path);
	o->bias = bias;
	o->main = main;
	o->lo = UINTPTR_MAX;
	for (int i = 0; i < phnum; i++) {
		if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X))
			continue;
		uintptr_t s = bias + ph[i].p_vaddr, e = s + ph[i].p_memsz;
		if (s < o->lo)
			o->lo = s;
		if (e > o->hi)
			o->hi = e;
		if (o->nxseg < DFT_XSEG_MAX) {
			o->xseg[o->nxseg][0] = s;
			o->xseg[o->nxseg++][1] = e;
		} else if (e > o->xseg[DFT_XSEG_MAX - 1][1]) {
			o->xseg[DFT_XSEG_MAX - 1][1] = e;
		}
	}
	int err = o->path ? elf_load(&o->img, path, bias, 1) : -ENOMEM;
	if (err) {
		/* Unreadable objects (the vDSO, deleted files) cannot be traced. */
		if (err != -ENOENT)
			dft_debug("%s: %s", path, o->img.err);
		object_free(o);
		return err;
	}
	if (o->img.err[0])
		dft_debug("%s", o->img.err);

	struct dft_object **nt = realloc(obj_tab, (obj_count + 1) * sizeof(*nt));
	if (!nt) {
		object_free(o);
		return -ENOMEM;
	}
	obj_tab = nt;
	obj_tab[obj_count++] = o;
	o->seen = 1;
	size_t nrcap =
	    entries_wanted() && entries_object_wanted(o, main) && !elf_load_entries(&o->img)
		? o->img.nentries
		: 0;
	if (o->img.nsites == 0 && !nrcap)
		return 0;

	size_t n = o->img.nsites;
	uintptr_t *addrs = malloc((n + 2 * nrcap + 1) * sizeof(*addrs));
	uintptr_t *pro = malloc((n + 1) * sizeof(*pro)); /* prologues' addresses */
	size_t npro = 0;
	struct patch_entry *pe = malloc((2 * n + nrcap + 1) * sizeof(*pe));
	struct patch_entry *lits = malloc((n + 1) * sizeof(*lits));
	size_t nlit = 0;
	struct site *nst = realloc(site_tab, (site_count + n + nrcap + 1) * sizeof(*nst));
	if (!addrs || !pe || !nst || !lits || !pro) {
		free(pro);
		free(addrs);
		free(pe);
		free(lits);
		if (nst)
			site_tab = nst;
		return -ENOMEM;
	}
	site_tab = nst;
	o->region = region_for(o->lo, o->hi);
	o->caller = o->region ? o->region->base + REGION_CALLER : 0;
	if (!o->caller)
		dft_log("%s: no memory within reach of its code for a trampoline; "
			"its functions cannot be traced",
			path);

	size_t nconv = 0, nadd = 0, nref = 0;
	for (size_t i = 0; i < n; i++)
		addrs[i] = bias + o->img.sites[i].addr;
	err = patch_points_add(addrs, n);
	for (size_t i = 0; i < n && !err; i++) {
		const struct elf_site *es = &o->img.sites[i];
		uintptr_t a = bias + es->addr;
		struct site *s = &site_tab[site_count + nadd];
		if (!object_code_has(o, a, es->len))
			continue;
		int c = classify(o, es, a, &pe[nconv]);
		if (c < 0) {
			const uint8_t *p = (const uint8_t *)a;
			dft_log("%s: refusing site %#lx in %s: unexpected bytes "
				"%02x %02x %02x %02x %02x",
				path, (unsigned long)a,
				elf_func_name(&o->img, es->func) ? elf_func_name(&o->img, es->func)
								 : "?",
				p[0], p[1], p[2], p[3], p[4]);
			nref++;
			continue;
		}
		if (c > 0)
			nconv++;
		/* CALL_OPS: the compiler left 8+ NOP bytes before the function
		 * (-fpatchable-function-entry=13,8); an aligned 8-byte slot
		 * just before the entry becomes the site's ops literal. */
		uintptr_t fstart = a - es->marker;
		s->lit = 0;
		s->lit_val = 0;
		s->owner = NULL;
		s->direct = NULL;
		s->route = ROUTE_NONE;
		if (bias + es->record + 8 <= fstart && !((fstart - 8) & 7) && fstart - 8 >= o->lo &&
		    arch_is_nops((const uint8_t *)(fstart - 8), 8)) {
			struct patch_entry *le = &lits[nlit];
			le->addr = fstart - 8;
			le->len = 8;
			memcpy(le->old, (const void *)le->addr, 8);
			memset(le->new, 0, 8);
			s->lit = le->addr;
		}
		/* The instruction the site needs before it (aarch64's
		 * `mov x9, x30`, riscv64's `auipc t0` aimed at the trampoline
		 * the site calls by default), written with the NOPs. */
		uintptr_t pat, anchor = 0;
		if (o->region)
			anchor = o->region->base + (s->lit ? REGION_CALLOPS : REGION_CALLER);
		uint8_t pold[4], pnew[4];
		int pl = arch_site_prologue(a, anchor, &pat, pold, pnew);
		if (pl < 0) {
			if (c > 0)
				nconv--;
			dft_log("%s: refusing site %#lx: unexpected bytes before it", path,
				(unsigned long)a);
			nref++;
			continue;
		}
		if (pl > 0) {
			struct patch_entry *ppe = &pe[nconv++];
			ppe->addr = pat;
			ppe->len = (uint8_t)pl;
			memcpy(ppe->old, pold, (size_t)pl);
			memcpy(ppe->new, pnew, (size_t)pl);
			pro[npro++] = pat;
		}
		if (s->lit)
			nlit++;
		s->addr = a;
		s->at = a;
		s->flags = o->caller ? 0 : SITE_FL_DISABLED;
		s->func = es->func;
		s->obj = o;
		s->target = 0;
		s->id = site_next_id + (uint32_t)nadd;
		nadd++;
	}
	if (!err && npro)
		err = patch_points_add(pro, npro);
	/* Functions built without a site: relocated entries (entries.c),
	 * their ids after the compiler sites'. */
	size_t nrel = 0, ncomp = nadd;
	if (!err && nrcap && o->caller) {
		err = entries_relocate(o, self_base, main, sites_defer, client.dispatch,
				       &site_tab[site_count + nadd], nrcap, &pe[nconv], &nrel);
		for (size_t i = 0; i < nrel; i++) {
			site_tab[site_count + nadd + i].id = site_next_id + (uint32_t)(nadd + i);
			addrs[2 * i] = site_tab[site_count + nadd + i].at;
			addrs[2 * i + 1] = pe[nconv + i].addr; /* the entry's jump */
		}
		if (!err && nrel)
			err = patch_points_add(addrs, 2 * nrel);
		if (!err) {
			nadd += nrel;
			nconv += nrel;
		}
	}
	if (!err && nconv && sites_defer) {
		/* Running code (an attach): written by sites_commit_deferred()
		 * with every other thread stopped out of the sequences; until
		 * then the sites are not patched (DISABLED). */
		size_t nc = nconv - nrel; /* pe: the compiler sites', then the entries' */
		err = nc ? patch_early_prepare(pe, nc, &o->pending) : 0;
		if (!err && nrel)
			err = patch_early_prepare(pe + nc, nrel, &o->rel_pending);
		for (size_t i = 0; !err && i < nadd; i++)
			site_tab[site_count + i].flags |= SITE_FL_DISABLED;
		nconv = 0;
	} else if (!err && nconv) {
		err = patch_write_early(pe, nconv);
	}
	/* Literals are data: never executed, an aligned store each, safe
	 * while the object runs. */
	if (!err && nlit)
		err = patch_write_data(lits, nlit);
	if (err) {
		dft_log("%s: cannot convert its sites to NOPs: %s", path, patch_last_error());
		nadd = ncomp = 0;
	}
	free(pe);
	free(lits);
	free(addrs);
	free(pro);
	o->nsites = ncomp;
	o->id0 = site_next_id;
	o->nreloc = nadd - ncomp;
	o->rel_id0 = site_next_id + (uint32_t)ncomp;
	sites_converted += nconv;
	sites_refused += nref;
	site_count += nadd;
	site_next_id += (uint32_t)nadd;
	site_tab_merge(site_count - nadd);
	if (nadd) {
		sites_gen++;
		id_hash_rebuild();
		void (*added)(struct dft_object *) = CORE_HOOK(object_added);
		if (added)
			added(o);
		client.added(o->lo, o->hi);
	}
	return err;
}

static void object_remove(size_t idx)
{
	struct dft_object *o = obj_tab[idx];
	if (object_has_sites(o)) {
		client.removed(o->lo, o->hi);
		if (o->blocks) /* the relocated entries' sites */
			patch_points_remove_range(o->blocks, o->blocks + o->blocks_len);
		size_t k = 0;
		for (size_t i = 0; i < site_count; i++)
			if (site_tab[i].obj != o)
				site_tab[k++] = site_tab[i];
		site_count = k;
		patch_points_remove_range(o->lo, o->hi);
		sites_gen++;
		id_hash_rebuild();
	}
	obj_tab[idx] = obj_tab[--obj_count];
	object_free(o);
}

/* ---- scanning ---------------------------------------------------------- */

struct found {
	char *path;
	uintptr_t bias;
	const ElfW(Phdr) * ph;
	int phnum;
	int main; /* the program itself */
};
struct scan {
	struct found *v;
	size_t n, cap;
	unsigned long long adds, subs;
};

static int scan_cb(struct dl_phdr_info *info, size_t size UNUSED, void *data)
{
	struct scan *sc = data;
	sc->adds = info->dlpi_adds;
	sc->subs = info->dlpi_subs;
	if (info->dlpi_addr == self_base && self_base)
		return 0; /* ourselves */
	const char *name = info->dlpi_name;
	char exe[PATH_MAX];
	if (!name || !name[0]) {
		/* The main program (first entry), or an unnamed vDSO. */
		if (sc->n)
			return 0;
		ssize_t r = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (r <= 0)
			return 0;
		exe[r] = 0;
		name = exe;
	}
	if (sc->n == sc->cap) {
		size_t nc = sc->cap ? 2 * sc->cap : 16;
		struct found *nv = realloc(sc->v, nc * sizeof(*nv));
		if (!nv)
			return 1;
		sc->v = nv;
		sc->cap = nc;
	}
	sc->v[sc->n].path = strdup(name);
	sc->v[sc->n].bias = info->dlpi_addr;
	sc->v[sc->n].ph = info->dlpi_phdr;
	sc->v[sc->n].phnum = info->dlpi_phnum;
	sc->v[sc->n].main = name == exe;
	if (sc->v[sc->n].path)
		sc->n++;
	return 0;
}

static unsigned long long last_adds = ~0ULL, last_subs = ~0ULL;

int sites_rescan(void)
{
	dft_ensure_init();
	if (!self_base) {
		Dl_info info;
		if (dladdr((void *)sites_rescan, &info))
			self_base = (uintptr_t)info.dli_fbase;
	}
	patch_lock();
	struct scan sc = {0};
	dl_iterate_phdr(scan_cb, &sc);
	int err = 0;
	if (sc.adds == last_adds && sc.subs == last_subs)
		goto out;
	last_adds = sc.adds;
	last_subs = sc.subs;
	for (size_t i = 0; i < obj_count; i++)
		obj_tab[i]->seen = 0;
	for (size_t i = 0; i < sc.n; i++) {
		size_t j;
		for (j = 0; j < obj_count; j++)
			if (obj_tab[j]->bias == sc.v[i].bias &&
			    !strcmp(obj_tab[j]->path, sc.v[i].path))
				break;
		if (j < obj_count) {
			obj_tab[j]->seen = 1;
			continue;
		}
		int e =
		    object_add(sc.v[i].path, sc.v[i].bias, sc.v[i].ph, sc.v[i].phnum, sc.v[i].main);
		if (e == -ENOMEM)
			err = e;
	}
	for (size_t j = obj_count; j-- > 0;)
		if (!obj_tab[j]->seen)
			object_remove(j);
out:
	for (size_t i = 0; i < sc.n; i++)
		free(sc.v[i].path);
	free(sc.v);
	patch_unlock();
	return err;
}

int sites_init(void)
{
	return sites_rescan();
}

int sites_init_deferred(void)
{
	sites_defer = 1;
	int err = sites_rescan();
	sites_defer = 0;
	return err;
}

/*
 * The conversion that sites_init_deferred() left for now. The caller
 * guarantees that no other thread runs and none is stopped inside a
 * multi-instruction site (the attaching agent moved them past it: for
 * NOPs that is exactly what running them would have done). So nothing here
 * may wait for another thread: patch_lock only by trylock (a thread stopped
 * inside our dlopen wrapper could hold it: -EAGAIN, the agent lets the
 * program run a moment and tries again), and no allocation.
 */
/* Write O's prepared conversion (RELOC 0) or relocated entries' jumps (1),
 * then enable those sites. No allocation: the world is stopped. */
static int commit_one(struct dft_object *o, int reloc, size_t *converted)
{
	struct patch_prep **pend = reloc ? &o->rel_pending : &o->pending;
	struct patch_prep **done = reloc ? &o->rel_committed : &o->committed;
	int err = patch_early_commit(*pend);
	if (err) {
		dft_log("%s: cannot %s: %s", o->path,
			reloc ? "patch the entries of its functions" : "convert its sites to NOPs",
			patch_last_error());
		return err; /* its sites stay DISABLED */
	}
	size_t n = 0;
	for (size_t k = 0; k < site_count; k++)
		if (site_tab[k].obj == o && o->caller &&
		    !(site_tab[k].flags & SITE_FL_RELOC) == !reloc) {
			site_tab[k].flags &= ~SITE_FL_DISABLED;
			n++;
		}
	*converted += n;
	sites_converted += n;
	/* freed later, outside this stopped world */
	*done = *pend;
	*pend = NULL;
	return 0;
}

/* entries_move_ip for the object holding *IP. */
static int move_ip(uintptr_t *ip)
{
	for (size_t i = 0; i < obj_count; i++) {
		const struct dft_object *o = obj_tab[i];
		if (o->nmoves && *ip >= o->lo && *ip < o->hi)
			return entries_move_ip(o, ip);
	}
	return 0;
}

int sites_commit_deferred(size_t *converted, uint64_t *ips, size_t nips, size_t *moved)
{
	*converted = 0;
	*moved = 0;
	if (!patch_trylock())
		return -EAGAIN;
	/* Before any entry's jump: every thread stopped inside the bytes it
	 * replaces goes to their copy in the block, where it runs on as it
	 * would have. One that is not at an instruction there cannot be:
	 * then no entry is patched. */
	int err = 0, movable = 1;
	for (size_t i = 0; i < nips && movable; i++) {
		uintptr_t ip = (uintptr_t)ips[i];
		if (move_ip(&ip) < 0)
			movable = 0;
	}
	for (size_t i = 0; i < nips && movable; i++) {
		uintptr_t ip = (uintptr_t)ips[i];
		if (move_ip(&ip) > 0) {
			ips[i] = ip;
			(*moved)++;
		}
	}
	if (!movable)
		dft_log("a thread is stopped inside an entry to relocate, not at an instruction: "
			"no entry is patched");
	for (size_t i = 0; i < obj_count; i++) {
		struct dft_object *o = obj_tab[i];
		int e = o->pending ? commit_one(o, 0, converted) : 0;
		if (!e && o->rel_pending && movable)
			e = commit_one(o, 1, converted);
		if (e && !err)
			err = e;
	}
	patch_unlock();
	return err;
}

/* Entries selected for relocation that were refused, in every object. */
size_t sites_relocation_refused(void)
{
	size_t n = 0;
	patch_lock();
	for (size_t i = 0; i < obj_count; i++)
		n += obj_tab[i]->nreloc_refused;
	patch_unlock();
	return n;
}

/*
 * Under attach, once the configuration has come: the selected entries of
 * every object found are relocated, as object_add does at start-up, their
 * jumps prepared (rel_pending) for the commit. The process runs meanwhile:
 * the blocks are new memory nobody executes yet. *NOUT: how many.
 */
int sites_relocate_attached(size_t *nout)
{
	*nout = 0;
	entries_config_changed();
	if (!entries_wanted())
		return 0;
	patch_lock();
	int err = 0;
	for (size_t i = 0; i < obj_count && !err; i++) {
		struct dft_object *o = obj_tab[i];
		if (o->blocks || !entries_object_wanted(o, o->main) || elf_load_entries(&o->img) ||
		    !o->img.nentries)
			continue;
		if (!o->region) { /* no compiler site: no region yet */
			o->region = region_for(o->lo, o->hi);
			o->caller = o->region ? o->region->base + REGION_CALLER : 0;
		}
		if (!o->caller)
			continue;
		size_t cap = o->img.nentries, n = 0;
		struct site *nst = realloc(site_tab, (site_count + cap + 1) * sizeof(*nst));
		if (nst)
			site_tab = nst;
		struct patch_entry *pe = malloc(cap * sizeof(*pe));
		uintptr_t *addrs = malloc(2 * cap * sizeof(*addrs));
		if (!nst || !pe || !addrs)
			err = -ENOMEM;
		if (!err)
			err = entries_relocate(o, self_base, o->main, 1, client.dispatch,
					       &site_tab[site_count], cap, pe, &n);
		for (size_t k = 0; !err && k < n; k++) {
			struct site *s = &site_tab[site_count + k];
			s->id = site_next_id + (uint32_t)k;
			s->flags |= SITE_FL_DISABLED; /* until the commit */
			addrs[2 * k] = s->at;
			addrs[2 * k + 1] = pe[k].addr;
		}
		if (!err && n)
			err = patch_points_add(addrs, 2 * n);
		if (!err && n)
			err = patch_early_prepare(pe, n, &o->rel_pending);
		free(pe);
		free(addrs);
		if (err || !n) {
			/* nothing of it was written: the arena goes */
			if (o->blocks) {
				patch_points_remove_range(o->blocks, o->blocks + o->blocks_len);
				munmap((void *)o->blocks, o->blocks_len);
			}
			o->blocks = 0;
			o->nreloc = 0;
			free(o->moves); /* the refusals stay, for the report */
			o->moves = NULL;
			o->nmoves = 0;
			continue;
		}
		o->rel_id0 = site_next_id;
		o->nreloc = n;
		site_count += n;
		site_next_id += (uint32_t)n;
		*nout += n;
		site_tab_merge(site_count - n);
		sites_gen++;
		id_hash_rebuild();
		void (*added)(struct dft_object *) = CORE_HOOK(object_added);
		if (added)
			added(o);
		client.added(o->lo, o->hi);
	}
	patch_unlock();
	return err;
}

size_t sites_usable(void)
{
	patch_lock();
	size_t n = 0;
	for (size_t i = 0; i < site_count; i++)
		n += !(site_tab[i].flags & SITE_FL_DISABLED);
	patch_unlock();
	return n;
}

void sites_free_committed(void)
{
	patch_lock();
	for (size_t i = 0; i < obj_count; i++) {
		patch_early_free(obj_tab[i]->committed);
		obj_tab[i]->committed = NULL;
		patch_early_free(obj_tab[i]->rel_committed);
		obj_tab[i]->rel_committed = NULL;
	}
	patch_unlock();
}

/* ---- detach ------------------------------------------------------------- */

const char *sites_code_at(uintptr_t ip)
{
	size_t nr = __atomic_load_n(&nregions, __ATOMIC_ACQUIRE);
	for (size_t i = 0; i < nr; i++) {
		if (ip >= regions[i].base && ip < regions[i].base + REGION_SIZE)
			return "a trampoline";
		if (regions[i].direct_page && ip >= regions[i].direct_page &&
		    ip < regions[i].direct_page + 4096)
			return "a direct-call jump";
	}
	for (size_t i = 0; i < obj_count; i++) {
		if (obj_tab[i]->thunks && ip >= obj_tab[i]->thunks &&
		    ip < obj_tab[i]->thunks + obj_tab[i]->thunks_len)
			return "a graph thunk";
		if (obj_tab[i]->rthunks && ip >= obj_tab[i]->rthunks &&
		    ip < obj_tab[i]->rthunks + obj_tab[i]->rthunks_len)
			return "a graph thunk";
		if (obj_tab[i]->blocks && ip >= obj_tab[i]->blocks &&
		    ip < obj_tab[i]->blocks + obj_tab[i]->blocks_len) {
			/* in an entry's copy: moved back at the restore */
			uintptr_t to = ip;
			if (obj_tab[i]->rel_restore && entries_move_back(obj_tab[i], &to) > 0)
				return NULL;
			return "a relocated entry's block";
		}
	}
	return NULL;
}

/* Detach, the process running, every site a NOP: prepare writing back
 * the entries relocated under attach. */
int sites_detach_prepare(void)
{
	patch_lock();
	int err = 0;
	for (size_t i = 0; i < obj_count && !err; i++)
		err = entries_restore_prepare(obj_tab[i]);
	/* No entry is relocated from now on (a dlopen meanwhile finds no
	 * decoder): it may go. The C library's dlclose, not our wrapper. */
	int (*close_lib)(void *) = (int (*)(void *))dft_real("dlclose");
	if (!err && close_lib)
		arch_reloc_unload(close_lib);
	patch_unlock();
	return err;
}

/* Every other thread stopped, none in our code but the relocated copies
 * of entries (sites_code_at): the entries back as they were, and
 * each of IPS inside a block moved to the original instruction. An entry
 * that cannot be put back (its bytes changed) keeps its jump, and its
 * arena stays mapped for it, with the threads inside. No allocation,
 * patch_lock by trylock. */
int sites_detach_restore(uint64_t *ips, size_t nips)
{
	if (!patch_trylock())
		return -EAGAIN;
	for (size_t i = 0; i < obj_count; i++) {
		struct dft_object *o = obj_tab[i];
		if (!o->rel_restore)
			continue;
		if (patch_early_commit(o->rel_restore)) {
			dft_log("%s: cannot put its functions' entries back (%s): their relocated "
				"code stays mapped",
				o->path, patch_last_error());
			o->blocks = 0; /* not unmapped: the entries still jump there */
		}
		for (size_t k = 0; k < nips && o->blocks; k++) {
			uintptr_t ip = (uintptr_t)ips[k];
			if (entries_move_back(o, &ip) > 0)
				ips[k] = ip;
		}
		/* done either way: a second detach_finish must not try again
		 * (rel_committed was freed at start; object_free frees it) */
		o->rel_committed = o->rel_restore;
		o->rel_restore = NULL;
	}
	patch_unlock();
	return 0;
}

/* Every site is a NOP and no thread is in any of this code (the caller
 * checked, every other thread stopped): unmap the trampoline regions,
 * thunks and tables, which would outlive the runtime's unload. */
void sites_detach_free(void)
{
	size_t nr = __atomic_load_n(&nregions, __ATOMIC_ACQUIRE);
	long pg = sysconf(_SC_PAGESIZE);
	for (size_t i = 0; i < nr; i++) {
		munmap((void *)regions[i].base, REGION_SIZE);
		if (regions[i].direct_page)
			munmap((void *)regions[i].direct_page, (size_t)pg);
		memset(&regions[i], 0, sizeof(regions[i]));
	}
	__atomic_store_n(&nregions, 0, __ATOMIC_RELEASE);
	for (size_t i = 0; i < obj_count; i++)
		object_free(obj_tab[i]);
	free(obj_tab);
	obj_tab = NULL;
	obj_count = 0;
	free(site_tab);
	site_tab = NULL;
	site_count = 0;
	free(id_hash);
	id_hash = NULL;
	entries_config_changed(); /* the globs go */
	patch_detach_free();
}
