/* SPDX-License-Identifier: MIT */
/*
 * sites.h - the process-wide table of function sites (the ordered vector of
 * kernel's batched text_poke) and the objects they belong to.
 *
 * Everything here is protected by patch_lock(): the table is only read and
 * written by threads holding it (the trampoline path never reads it).
 */
#ifndef DYNFTRACE_SITES_H
#define DYNFTRACE_SITES_H

#include <stddef.h>
#include <stdint.h>

#include "arch.h"
#include "elf.h"

/*
 * Per-site flags word, as the kernel's dyn_ftrace.flags: a reference count
 * (how many registered ops want the site) and pairs of wanted / enabled bits.
 */
#define SITE_FL_REF_MASK 0x000fffffu
#define SITE_FL_ENABLED	 0x80000000u /* the site holds a call (enabled) */
#define SITE_FL_TRAMP	 0x40000000u /* wants a private trampoline */
#define SITE_FL_TRAMP_EN 0x20000000u /* has it */
#define SITE_FL_DISABLED 0x10000000u /* refused at load: never patched */
#define SITE_FL_RELOC	 0x08000000u /* a relocated entry's: the preserving route only */

struct dft_object;
struct dynftrace_ops;

/* Trampoline regions (sites.c), see the layout comment there. */
#define REGION_SIZE    65536
#define REGION_CALLER  0
#define REGION_CALLOPS 1024
#define REGION_OPS     2048
#define REGION_GRAPH   3072 /* graph shortcut: thunks' entry (dft_gentry_tmpl) */
#define REGION_GEXIT   4096 /* ... and exit (dft_gexit_tmpl) */
/* The preserving thunks' entry and exit (relocated entries), in the room
 * left after the copies above. */
#define REGION_GRAPH_ALL (REGION_GRAPH + 512)
#define REGION_GEXIT_ALL (REGION_GEXIT + 512)
/* The thunks' entries for site ids above SITE_ID16_MAX, whose events carry
 * the id in 32 bits, not 16 (the graph tracer's entry16): chosen when the
 * thunk is made, so that no call tests its id. */
#define REGION_GRAPH_WIDE     (REGION_GRAPH + 256)
#define REGION_GRAPH_ALL_WIDE (REGION_GRAPH_ALL + 256)
#define SITE_ID16_MAX	      0xffffu
/* The light body of relocated entries (dft_reloc_light_tmpl), likewise. */
#define REGION_RELOC_LIGHT   (REGION_CALLOPS_LIGHT + 512)
#define REGION_OPS_LIGHT     5120 /* per-ops body saving general registers only */
#define REGION_CALLOPS_LIGHT 6144 /* CALL_OPS body saving general registers only */
#define REGION_COPY_MAX	     1024 /* room for each template copy */
/* Graph shortcut thunks (arch_graph_thunk_write): THUNK_SIZE bytes per
 * site; the hook (the return address the traced function sees) is
 * THUNK_HOOK bytes past the return address of the thunk's call to the
 * entry. */
#define THUNK_SIZE   ARCH_THUNK_SIZE
#define THUNK_HOOK   ARCH_THUNK_HOOK
#define REGION_STUB0 7168
#define REGION_STUBS ((REGION_SIZE - REGION_STUB0) / ARCH_STUB_SIZE) /* idx holds 12 bits */
/* Stubs [0, REGION_STUBS_FULL) jump to REGION_OPS, the rest to
 * REGION_OPS_LIGHT (DYNFTRACE_OPS_FL_GPR_ONLY ops). */
#define REGION_STUBS_LIGHT 1024
#define REGION_STUBS_FULL  (REGION_STUBS - REGION_STUBS_LIGHT)
#define MAX_REGIONS	   64

/* One class of stubs (full or light) of a region: ops.c, patch_lock. */
struct stub_pool {
	uint32_t fresh;		      /* handed out once at least: the first FRESH */
	uint32_t ret_head, ret_count; /* FIFO of returned stubs, in the pool's
					 part of region.retired */
};

struct region {
	uintptr_t base;
	uint32_t no;
	/* per-ops stubs; ops.c, under patch_lock except stub_ops (RCU) */
	/* owner of each stub, bit 0 STUB_VERIFY (ops.c); read by the per-ops bodies */
	struct dynftrace_ops *stub_ops[REGION_STUBS];
	uint32_t retired[REGION_STUBS]; /* FIFO rings of the pools */
	struct stub_pool pool[2];	/* 0: full, 1: light */
	/* jumps to far direct-call targets: `jmp *0(%rip); .quad addr` */
	uintptr_t direct_page; /* 0 until the first far target */
	uint32_t direct_used;  /* 16-byte slots handed out */
};
extern struct region regions[MAX_REGIONS] HIDDEN;
extern size_t nregions HIDDEN; /* published with release after a region is set */
/* A jump to ADDR within rel32 reach of region R (patch_lock held); 0 if no
 * memory. Never freed. */
uintptr_t region_far_jump(struct region *r, uintptr_t addr) HIDDEN;

/* How a site is routed, for introspection. */
enum site_route {
	ROUTE_NONE,
	ROUTE_LIST,
	ROUTE_SINGLE,
	ROUTE_TRAMP,
	ROUTE_CALLOPS,
	ROUTE_DIRECT,
	ROUTE_GRAPH
};

struct site {
	uintptr_t addr; /* the site's address as callbacks see it (ip): the
			   5-byte site itself, or a relocated entry's function
			   entry (after its marker) */
	uintptr_t at;	/* where the 5-byte site instruction lives: addr, or
			   the relocated entry's block */
	uint32_t flags; /* SITE_FL_* | refcount */
	int32_t func;	/* index into obj->img.funcs, -1 if unnamed; with
			   SITE_FL_RELOC into obj->img.entries */
	struct dft_object *obj;
	uintptr_t target;	      /* call target while ENABLED */
	uint32_t id;		      /* stable for the process's life, never reused */
	uint8_t route;		      /* enum site_route, while ENABLED */
	uintptr_t lit;		      /* CALL_OPS literal address, 0 if the site has none */
	uintptr_t lit_val;	      /* what the literal holds now */
	struct dynftrace_ops *owner;  /* the one ops that wants it (ref == 1) */
	struct dynftrace_ops *direct; /* a direct-call ops holding the site */
};

#define DFT_XSEG_MAX 8

struct dft_object {
	char *path;
	uintptr_t bias;
	uintptr_t lo, hi; /* runtime extent of its executable segments */
	/* The segments themselves, in address order: between them may lie
	 * unmapped pages, which a read of code must not reach. More than
	 * DFT_XSEG_MAX: the last one extends to hi. */
	uintptr_t xseg[DFT_XSEG_MAX][2];
	int nxseg;
	struct elf_image img;
	uintptr_t caller; /* common trampoline copy within rel32 reach */
	struct region *region;
	int seen;	  /* marks objects still loaded during a rescan */
	size_t nsites;	  /* compiler sites */
	uint32_t id0;	  /* their ids are id0 .. id0 + nsites - 1 */
	uintptr_t thunks; /* graph shortcut thunks, by id - id0 (patch_lock); 0: none yet */
	/* An attach's conversion, prepared and not yet written (patch_lock);
	 * after the commit, kept until it can be freed (see sites.c). */
	struct patch_prep *pending, *committed;
	size_t thunks_len;
	int main; /* the program itself (not a library) */
	/* Relocated entries (entries.c), all made at once: their blocks'
	 * arena, next to the region, unmapped with the object; how many were
	 * made (ids rel_id0 .. rel_id0 + nreloc - 1) and refused; their
	 * preserving graph thunks, by id - rel_id0. All under patch_lock. */
	uintptr_t blocks;
	size_t blocks_len, nreloc, nreloc_refused;
	uint32_t rel_id0;
	uintptr_t rthunks;
	size_t rthunks_len;
	/* Made under attach: the entries' jumps prepared (rel_pending, then
	 * as pending above), what a thread stopped inside replaced bytes and
	 * detach need (moves, entries.c), detach's writes back (rel_restore). */
	struct patch_prep *rel_pending, *rel_committed, *rel_restore;
	struct entry_move *moves;
	size_t nmoves;
	/* The entries DYNFTRACE_PATCH selected and entries.c refused, and
	 * why (for the session's report; patch_lock). */
	struct entry_refusal *refusals;
	size_t nrefusals;
};

struct entry_refusal {
	int32_t entry; /* index into img.entries */
	char why[100];
};

/* The end of O's executable segment that holds A, or 0 outside them. */
static inline uintptr_t object_code_end(const struct dft_object *o, uintptr_t a)
{
	for (int i = 0; i < o->nxseg; i++)
		if (a >= o->xseg[i][0] && a < o->xseg[i][1])
			return o->xseg[i][1];
	return 0;
}

/* Are the N bytes at A inside one of O's executable segments? */
static inline int object_code_has(const struct dft_object *o, uintptr_t a, size_t n)
{
	uintptr_t e = object_code_end(o, a);
	return e && n <= e - a;
}

/* Has O any site, compiled or relocated? */
static inline int object_has_sites(const struct dft_object *o)
{
	return o->nsites || o->nreloc;
}

extern struct site *site_tab HIDDEN; /* sorted by addr */
extern size_t site_count HIDDEN;
extern struct dft_object **obj_tab HIDDEN;
extern size_t obj_count HIDDEN;
extern unsigned long sites_converted HIDDEN, sites_refused HIDDEN;

const char *site_func_name(const struct site *s) HIDDEN;
/* The link-time address of S's function: before its landing marker (an
 * endbr64, aarch64's and riscv64's first entry word). Names a function
 * without a symbol as `sites --all` does (sub_ADDR). */
uint64_t site_func_start(const struct site *s) HIDDEN;
/* Size of the site's function (0 if unknown). */
uint64_t site_func_size(const struct site *s) HIDDEN;

/*
 * Site ID of IP, lock-free, for tracers: call under rcu_read_lock (dispatch
 * holds it during callbacks). Returns UINT32_MAX for an unknown IP.
 */
/*
 * ip -> site id, open addressing, rebuilt whole when objects come or go and
 * published by pointer; the old table is freed after a grace period (readers
 * are callbacks, inside dispatch's RCU read side). Inline for graph_fast.c,
 * which may not call out.
 */
struct id_hash {
	size_t mask;
	struct {
		uintptr_t ip;
		uint32_t id;
	} slot[];
};
extern struct id_hash *id_hash HIDDEN;

static inline size_t id_hash_fn(uintptr_t ip, size_t mask)
{
	return (size_t)((ip * 0x9e3779b97f4a7c15ULL) >> 20) & mask;
}

static inline uint32_t site_id_lookup_inline(uintptr_t ip)
{
	const struct id_hash *h = __atomic_load_n(&id_hash, __ATOMIC_ACQUIRE);
	if (!h)
		return UINT32_MAX;
	for (size_t i = id_hash_fn(ip, h->mask);; i = (i + 1) & h->mask) {
		if (h->slot[i].ip == ip)
			return h->slot[i].id;
		if (!h->slot[i].ip)
			return UINT32_MAX;
	}
}

uint32_t site_id_lookup(uintptr_t ip) HIDDEN;

/* ops.c: OPS (or NULL) becomes the function-graph shortcut's ops: while it
 * is the only ops of a site, the site calls the region's graph trampoline
 * (REGION_GRAPH). Call while OPS is not registered. */
struct dynftrace_ops;
void ops_set_graph(struct dynftrace_ops *ops) HIDDEN;
/* Sites the graph ops takes through its generic route instead of the
 * shortcut (the tracers' triggers): FN(site) says so, under patch_lock.
 * NULL: none. Applied from the next patch batch on. */
void ops_set_graph_generic(int (*fn)(const struct site *s)) HIDDEN;
/* ops.c: would a call of the site at IP reach OPS (registered, its filter
 * wants it)? Inside the RCU read side. */
int ops_wants_site(const struct dynftrace_ops *ops, uintptr_t ip) HIDDEN;
/* Its answers changed: move the sites whose route differs now
 * (patch_lock held). 0 or a batch's error. */
int __ops_graph_generic_changed(void) HIDDEN;
/* sites.c: the graph shortcut thunk of S (made with its object's first), 0
 * when there is no memory within reach. patch_lock held. */
uintptr_t site_thunk(struct site *s) HIDDEN;
extern struct dynftrace_ops *graph_route_ops HIDDEN;
extern uint32_t site_next_id HIDDEN;   /* ids below it have been handed out */
extern unsigned long sites_gen HIDDEN; /* bumped when objects come or go */

/*
 * What the ops layer (ops.c) hands the site table at start-up, before the
 * first object is scanned (ops_init): the C entries that the regions'
 * trampoline copies call, the light body's slots, and what to do when an
 * object's sites come (after they joined site_tab) and go (before they
 * leave it), both with patch_lock held. Written once, then read under
 * patch_lock.
 */
struct sites_client {
	void *dispatch;	     /* the common trampoline's C entry */
	void *callops_entry; /* CALL_OPS trampoline's C entry */
	void *stub_entry;    /* per-ops body's C entry */
	void (*light_slots)(intptr_t *tls, const void **seq, const void **gp);
	void (*added)(uintptr_t lo, uintptr_t hi);
	void (*removed)(uintptr_t lo, uintptr_t hi);
};
void sites_set_client(const struct sites_client *c) HIDDEN;

/* Can code at TRAMP (within a REGION_SIZE block) reach [LO, HI) with one
 * call (rel32, BL)? sites_reach: the same for [P, P + LEN). */
#define SITES_REACH ARCH_SITE_REACH
static inline int sites_reaches(uintptr_t tramp, uintptr_t lo, uintptr_t hi)
{
	uintptr_t a = tramp < lo ? lo - tramp : tramp - lo;
	uintptr_t b = tramp < hi ? hi - tramp : tramp - hi;
	return a + REGION_SIZE < SITES_REACH && b + REGION_SIZE < SITES_REACH;
}
static inline int sites_reach(uintptr_t p, size_t len, uintptr_t lo, uintptr_t hi)
{
	return sites_reaches(p, lo, hi) && sites_reaches(p + len, lo, hi);
}

/* entries.c: are functions to be patched by relocation (DYNFTRACE_PATCH)?
 * And for object O (its region set; SELF: the runtime's load bias): up to
 * CAP sites into OUT for its selected functions without a compiler site,
 * their blocks written, and the entries' jumps into PE (to write), *NOUT of
 * each; CENTRY: the C entry of the arena's preserving trampoline
 * (o->blocks); DEFERRED: under attach, the moves kept for the commit and
 * detach (o->moves). 0 or -errno. patch_lock held. */
int entries_wanted(void) HIDDEN;
/* Might DYNFTRACE_PATCH select functions of O (MAIN: the program)? */
int entries_object_wanted(const struct dft_object *o, int main) HIDDEN;
/* entries.c: LEN bytes of writable memory filled with traps beside O's
 * region, within reach of its code, the region and its blocks (graph thunks,
 * the blocks' arena); 0 if none. patch_lock held. */
uintptr_t sites_map_near(const struct dft_object *o, size_t len) HIDDEN;
struct patch_entry;
int entries_relocate(struct dft_object *o, uintptr_t self, int main, int deferred, void *centry,
		     struct site *out, size_t cap, struct patch_entry *pe, size_t *nout) HIDDEN;
/* The configuration changed (an attach's arrived, or a detach): forget
 * DYNFTRACE_PATCH's globs, read it again when asked. */
void entries_config_changed(void) HIDDEN;
/* With every other thread stopped: if *IP lies inside bytes that a
 * relocated entry of O made under attach replaces, point it at the same
 * instruction's copy (1); 0: not inside any; -EFAULT: inside, not at an
 * instruction. No allocation. */
int entries_move_ip(const struct dft_object *o, uintptr_t *ip) HIDDEN;
/* Detach: prepare writing back the entries O's relocation replaced
 * (o->rel_restore). */
int entries_restore_prepare(struct dft_object *o) HIDDEN;
/* Detach, O's entries written back: *IP in one of its blocks goes to the
 * same instruction in the original code (1); 0: not in a block; -EFAULT:
 * in its arena but not at a copied instruction (the trampoline). */
int entries_move_back(const struct dft_object *o, uintptr_t *ip) HIDDEN;
void entries_free(struct dft_object *o) HIDDEN;
#endif
