/* SPDX-License-Identifier: MIT */
/*
 * entries.c - sites for functions that were not built with one: their
 * entries are relocated (arch_reloc_entry) into blocks
 *
 *	[the function's address][ARCH_RELOC_PRE][site: the canonical NOP]
 *	[ARCH_RELOC_POST][the entry's first instructions][jmp back]
 *
 * in an arena next to the object's region, and the entry becomes a jump to
 * its block (to what the architecture runs before the site, if anything:
 * aarch64 keeps the return address the site's call overwrites in a free
 * register, riscv64 keeps the register its call overwrites on the stack
 * and takes it back after the site). From
 * then on the block's NOP is a site like a compiler's (the same tracers,
 * filters and control files) with two routes: the arena's
 * copy of the preserving trampoline (arch_save_all_tramp), or, for the
 * graph tracer alone, the site's preserving graph thunk (ops.c,
 * check_site; tramp.S, dft_graph_entry_all). Code built
 * without sites may have callers that keep values in call-clobbered
 * registers across the call (gcc's -fipa-ra), so every register comes
 * back as it was, at the entry and at a hooked return.
 *
 * Which functions: DYNFTRACE_PATCH, comma-separated globs (`record -P`).
 * A plain glob names functions of the main program; FUNC@OBJECT (or
 * FUNC:mod:OBJECT) those of another object; DYNFTRACE_PATCH_LIBS=1 lets
 * plain globs name every object's functions. Never relocated: functions
 * that have a compiler site, the runtime's own, the dynamic loader's and
 * the decoder's (they run under the runtime's locks), and whatever the
 * relocator refuses (counted, and said with -v).
 *
 * The entry's jump is written when the object is found, as the compiler
 * sites' conversion is: at start-up and after dlopen, before another
 * thread can be inside those first instructions. Under attach the
 * configuration arrives with the process running: the blocks are made
 * then (DEFERRED) and the jumps prepared; the agent stops every thread,
 * and the commit moves each one stopped inside replaced bytes (its
 * instruction pointer, or one saved in a signal frame) to the same
 * instruction's copy in the block (entries_move_ip: arch_reloc.map) before
 * writing the jumps. Detach writes the original bytes back once no thread
 * is inside a block (entries_restore_prepare, sites.c).
 *
 * Everything here runs under patch_lock (sites.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "arch.h"
#include "patch.h"
#include "sites.h"
#include "sweep_cache.h"

/* One block: the arena's preserving trampoline (where the light body,
 * tramp.S's dft_reloc_light_tmpl, leaves what it does not handle), the
 * site's ops literal (as CALL_OPS sites have, for that body), the
 * function's address as callbacks see it (the site's ip: both bodies read
 * it there), the site, then what arch_reloc_entry writes. The arena starts
 * with the preserving trampoline's copy. */
#ifndef ARCH_RELOC_PRE
#define ARCH_RELOC_PRE 0 /* bytes the block runs before its site (arch_reloc_pre) */
#endif
#ifndef ARCH_RELOC_POST
#define ARCH_RELOC_POST 0 /* ... and after it, before the copies (arch_reloc_post) */
#endif
#ifndef ARCH_RELOC_PRE_PURE
/* A thread anywhere in the pre (or at the site) may be put back at the
 * entry: the pre changes nothing the function reads. */
#define ARCH_RELOC_PRE_PURE 1
#endif
#define BLOCK_LIT 8
#define BLOCK_IP  16
/* 8-aligned: ops.c writes the site by one atomic store; the block's
 * instructions before it (ARCH_RELOC_PRE) end there. */
#define BLOCK_SITE (24 + ((ARCH_RELOC_PRE + 7) & ~7))
#define BLOCK_SIZE (BLOCK_SITE + ARCH_RELOC_POST + 120)
#define ALL_COPY   4096
#ifdef ARCH_BLOCK_SITE
_Static_assert(BLOCK_SITE == ARCH_BLOCK_SITE && BLOCK_IP == ARCH_BLOCK_IP,
	       "the trampolines read the block where it is");
#endif
_Static_assert(BLOCK_SIZE % 8 == 0 && BLOCK_SITE % 8 == 0 && ALL_COPY % 8 == 0 &&
		   ARCH_SITE_SIZE <= 8,
	       "a block's site lies alone in an aligned 8-byte word");
_Static_assert(BLOCK_SIZE >= BLOCK_SITE + ARCH_SITE_SIZE + ARCH_RELOC_POST + 109,
	       "a block holds the longest relocation");

/* What a relocated entry made under attach keeps: where a thread stopped
 * inside the replaced bytes goes, and the bytes to put back at detach. */
struct entry_move {
	uintptr_t lo;		      /* the first replaced byte (past the marker) */
	uintptr_t site;		      /* the block's site; its copies follow it */
	uint8_t orig[ARCH_SITE_SIZE]; /* what the entry's jump replaced */
	uint8_t covered, ninsn, end;  /* end: the jump back, from the copies' start */
	uint8_t call_pushed;	      /* a copied call's push done, its jump not: 0 none */
	uintptr_t call_target;	      /* ... the call's target */
	struct {
		uint8_t src, dst; /* from lo; from the copies' start */
	} map[8];
};

static struct {
	int loaded;
	char **globs; /* DYNFTRACE_PATCH */
	size_t n;
	int libs; /* DYNFTRACE_PATCH_LIBS: plain globs name every object */
} want;

void entries_config_changed(void)
{
	for (size_t i = 0; i < want.n; i++)
		free(want.globs[i]);
	free(want.globs);
	memset(&want, 0, sizeof(want));
}

static void want_load(void)
{
	if (want.loaded)
		return;
	want.loaded = 1;
	const char *e = dft_getenv("DYNFTRACE_PATCH_LIBS");
	want.libs = e && *e && strcmp(e, "0");
	e = dft_getenv("DYNFTRACE_PATCH");
	while (e && *e) {
		size_t len = strcspn(e, ",");
		char **v = len ? realloc(want.globs, (want.n + 1) * sizeof(*v)) : NULL;
		if (v) {
			want.globs = v;
			v[want.n] = strndup(e, len);
			if (v[want.n] && dft_glob_valid(v[want.n]))
				want.n++;
			else if (v[want.n])
				dft_log("DYNFTRACE_PATCH: bad glob '%s'", v[want.n]);
		}
		e += len + (e[len] == ',');
	}
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

/* Objects whose functions run under the runtime's own locks or before it. */
static int object_excluded(const struct dft_object *o, uintptr_t self)
{
	const char *b = base_name(o->path);
	return o->bias == self || !strncmp(b, "ld-linux", 8) || !strncmp(b, "ld64.so", 7) ||
	       !strncmp(b, "libcapstone", 11) || !strncmp(b, "libdynftrace", 12);
}

/* Functions that return twice or run on another stack than their caller's:
 * the graph tracer's return hook would be saved (setjmp), run by a child
 * on its parent's stack (vfork), or never reached as a return (clone's
 * child). Never patched, whatever the object. */
static const char *const never_patched[] = {
    "setjmp",	     "_setjmp",
    "__setjmp",	     "sigsetjmp",
    "__sigsetjmp",   "__sigsetjmp_cancel",
    "getcontext",    "__getcontext",
    "swapcontext",   "__swapcontext",
    "setcontext",    "__setcontext",
    "makecontext",   "vfork",
    "__vfork",	     "clone",
    "__clone",	     "clone3",
    "__clone3",	     "__clone_internal",
    "_start",	     "__restore_rt",
    "longjmp",	     "_longjmp",
    "siglongjmp",    "__longjmp",
    "__longjmp_chk", "____longjmp_chk",
};

/* ... and functions that read their own return address: the C library's
 * dynamic loading looks at the caller's object (RTLD_NEXT, the namespace,
 * $ORIGIN), which the graph tracer's return hook would hide. */
static const char *const caller_readers[] = {
    "dlopen", "dlmopen", "dlsym", "dlvsym", "__libc_dlopen_mode", "__libc_dlsym", "__libc_dlvsym",
};

/* ... and the unwinder's entry points, which unwind from their own frame:
 * the return hook would be the first return address they read, an address
 * with no unwind information (std::terminate for a C++ exception). The
 * runtime's wrappers (graph.c: these and backtrace) put the traced frames'
 * return addresses back before calling them. */
static const char *const unwinders[] = {
    "_Unwind_RaiseException",
    "_Unwind_Resume_or_Rethrow",
    "_Unwind_Backtrace",
    "_Unwind_Resume",
    "_Unwind_ForcedUnwind",
    "backtrace",
    "__backtrace",
};

/* Does someone else report the refusals: a recording (the session's
 * files, and `record` sums them up) or `dynftrace attach`, which asks for
 * the count (DYNFTRACE_PATCH_QUIET)? The program's own stderr is left
 * alone then. */
static int refusals_reported(void)
{
	const char *d = dft_getenv("DYNFTRACE_RECORD");
	const char *q = dft_getenv("DYNFTRACE_PATCH_QUIET");
	return (d && *d) || (q && *q && strcmp(q, "0"));
}

/* NAME without its symbol version (dlsym@@GLIBC_2.34) is WANT. */
static int name_is(const char *name, const char *want)
{
	size_t n = strcspn(name, "@");
	return strlen(want) == n && !strncmp(name, want, n);
}

static const char *never_why(const char *name)
{
	for (size_t i = 0; i < sizeof(never_patched) / sizeof(never_patched[0]); i++)
		if (name_is(name, never_patched[i]))
			return "returns twice or switches stacks";
	for (size_t i = 0; i < sizeof(caller_readers) / sizeof(caller_readers[0]); i++)
		if (name_is(name, caller_readers[i]))
			return "reads its own return address (its caller's object)";
	for (size_t i = 0; i < sizeof(unwinders) / sizeof(unwinders[0]); i++)
		if (name_is(name, unwinders[i]))
			return "unwinds the stack from its own frame";
	return NULL;
}

/* Does DYNFTRACE_PATCH select function NAME of O (MAIN: O is the
 * program)? 0 no, 1 by a glob, 2 by its exact name (no wildcard in the
 * pattern's function part). */
static int selected(const char *name, const struct dft_object *o, int main)
{
	int sel = 0;
	for (size_t i = 0; i < want.n; i++) {
		const char *g = want.globs[i];
		int neg = g[0] == '!';
		const char *gg = neg ? g + 1 : g;
		const char *at = strchr(gg, '@'), *mod = strstr(gg, ":mod:");
		int scoped = at || mod;
		if (!scoped && !main && !want.libs)
			continue;
		if (dft_glob_match_in(gg, name, o->path)) {
			size_t fl = at ? (size_t)(at - gg) : mod ? (size_t)(mod - gg) : strlen(gg);
			sel = neg ? 0 : strcspn(gg, "*?[") >= fl ? 2 : 1;
		}
	}
	return sel;
}

/* Keep why O's entry I was not patched (o->refusals, for the session's
 * report), and say it with DYNFTRACE_VERBOSE. */
static void refuse(struct dft_object *o, size_t *n, int32_t i, const char *why)
{
	(*n)++;
	dft_debug("%s: %s not patched: %s", o->path, elf_entry_name(&o->img, &o->img.entries[i]),
		  why);
	if (o->nrefusals % 64 == 0) {
		struct entry_refusal *v =
		    realloc(o->refusals, (o->nrefusals + 64) * sizeof(*o->refusals));
		if (!v)
			return; /* counted all the same */
		o->refusals = v;
	}
	struct entry_refusal *r = &o->refusals[o->nrefusals++];
	r->entry = i;
	snprintf(r->why, sizeof(r->why), "%s", why);
}

/* The bytes [lo, hi) a relocated entry's jump replaces; BAD: a branch
 * from elsewhere lands inside, at FROM. */
struct cover {
	uintptr_t lo, hi;
	int bad;
	uintptr_t from, target;
};

static void on_branch(uintptr_t target, uintptr_t from, void *ctx)
{
	struct {
		struct cover *v;
		size_t n;
	} *c = ctx;
	size_t lo = 0, hi = c->n; /* the last cover with lo < target */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->v[mid].lo < target)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return;
	struct cover *v = &c->v[lo - 1];
	if (target < v->hi && !(from >= v->lo && from < v->hi) && !v->bad) {
		v->bad = 1; /* a branch inside the bytes themselves is relocated */
		v->from = from;
		v->target = target;
	}
}

/* The entry of O holding ADDR (entries sorted by address), or NULL. */
static const struct elf_entry *entry_at(const struct dft_object *o, uintptr_t addr)
{
	size_t lo = 0, hi = o->img.nentries;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (o->bias + o->img.entries[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &o->img.entries[lo - 1] : NULL;
}

/*
 * A function's own branches into its replaced bytes are looked for by
 * arch_reloc_entry; hand-written assembly also branches into another
 * function's first bytes (glibc's memmove variants begin with the label
 * their mempcpy siblings jump to). So every function of O is swept for
 * direct branches into the N relocated entries' COV (in address order):
 * those entries are refused, and OUT, PE and MV (if any) keep the others,
 * whose count is returned.
 */
/* The sweep's state: the covers to check, and what it keeps for the cache
 * (struct sweep: the hits near entries, as offsets from the bias). */
struct sweep {
	struct cover *v; /* first: on_branch's context */
	size_t n;
	const struct dft_object *o;
	uint64_t *hits;
	size_t nhits, cap;
	int oom;
};

static void on_branch_kept(uintptr_t target, uintptr_t from, void *ctx)
{
	struct sweep *w = ctx;
	on_branch(target, from, ctx);
	const struct elf_entry *e = entry_at(w->o, target);
	uintptr_t ea = e ? w->o->bias + e->addr : 0;
	if (!e || target == ea || target - ea >= SWEEP_WINDOW || w->oom)
		return;
	if (w->nhits == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 64;
		uint64_t *v = realloc(w->hits, cap * 2 * sizeof(*v));
		if (!v) {
			w->oom = 1; /* swept all the same, not kept */
			return;
		}
		w->hits = v;
		w->cap = cap;
	}
	w->hits[2 * w->nhits] = target - w->o->bias;
	w->hits[2 * w->nhits++ + 1] = from - w->o->bias;
}

static size_t foreign_branches(struct dft_object *o, struct cover *cov, size_t n, struct site *out,
			       struct patch_entry *pe, struct entry_move *mv, size_t *refused)
{
	struct sweep c = {cov, n, o, NULL, 0, 0, 0};
	/* The cache serves when every cover lies in the window it keeps. */
	struct sweep_key key;
	int keyed = n && !sweep_key_of(o->path, o->img.nentries, &key);
	for (size_t i = 0; keyed && i < n; i++)
		keyed = cov[i].hi - (o->bias + o->img.entries[out[i].func].addr) <= SWEEP_WINDOW;
	uint64_t *kept;
	size_t nkept;
	if (keyed && !sweep_cache_load(&key, &kept, &nkept)) {
		for (size_t i = 0; i < nkept; i++)
			on_branch(o->bias + kept[2 * i], o->bias + kept[2 * i + 1], &c);
		free(kept);
		dft_debug("%s: the sweep for relocated entries from the cache (%zu branches)",
			  o->path, nkept);
		keyed = 0; /* nothing to sweep, nor to keep */
		n = 0;
	}
	uintptr_t pos = o->lo;
	int failed = 0;
	for (size_t i = 0; n && i < o->img.nentries; i++) {
		const struct elf_entry *f = &o->img.entries[i];
		uintptr_t a = o->bias + f->addr, end;
		if (f->size)
			end = a + f->size;
		else if (i + 1 < o->img.nentries)
			end = o->bias + o->img.entries[i + 1].addr;
		else
			end = o->hi;
		if (a < pos)
			a = pos;
		/* within the segment that holds it: beyond may be unmapped */
		uintptr_t se = object_code_end(o, a);
		if (end > se)
			end = se;
		if (a >= end)
			continue;
		if (arch_reloc_branches((const uint8_t *)a, end - a, a,
					keyed ? on_branch_kept : on_branch, &c)) {
			failed = 1;
			break;
		}
		pos = end;
	}
	if (keyed && !failed && !c.oom)
		sweep_cache_store(&key, c.hits, c.nhits);
	free(c.hits);
	n = c.n;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (cov[i].bad) {
			char why[100];
			const struct elf_entry *src = entry_at(o, cov[i].from);
			const char *sn = src ? elf_entry_name(&o->img, src) : NULL;
			uintptr_t fa = o->bias + o->img.entries[out[i].func].addr;
			snprintf(why, sizeof(why),
				 "%s+%#lx branches to its +%lu, inside the bytes to "
				 "relocate",
				 sn ? sn : "?",
				 (unsigned long)(src ? cov[i].from - o->bias - src->addr : 0),
				 (unsigned long)(cov[i].target - fa));
			refuse(o, refused, out[i].func, why);
			continue;
		}
		out[k] = out[i];
		pe[k] = pe[i];
		if (mv)
			mv[k] = mv[i];
		k++;
	}
	return k;
}

static int move_cmp(const void *a, const void *b)
{
	const struct entry_move *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

int entries_wanted(void)
{
	want_load();
	return want.n != 0;
}

int entries_object_wanted(const struct dft_object *o, int main)
{
	want_load();
	for (size_t i = 0; i < want.n; i++) {
		if (want.globs[i][0] == '!')
			continue;
		int r = dft_glob_object(want.globs[i], o->path);
		if (r > 0 || (r < 0 && (main || want.libs)))
			return 1;
	}
	return 0;
}

/* LEN bytes of writable memory, filled with traps, within reach of O's
 * code, the region and O's relocated blocks (if any): graph thunks and
 * the blocks' arena. Tried first just below O's code, then just above it
 * (past its data, 64 KiB at a time, up to 4 MiB), then beside the region:
 * the closer to the code, the more of its entries a short jump reaches
 * (riscv64's jal: +-1 MiB; the region may lie a MiB beyond the data).
 * 0 if none. */
uintptr_t sites_map_near(const struct dft_object *o, size_t len)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t base = o->region->base;
	uintptr_t lo = o->lo & ~(uintptr_t)(pg - 1),
		  hi = (o->hi + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1);
	for (int i = 0; i < 4096 + 128; i++) {
		int near = i < 128;
		int k = near ? i : i - 128;
		uintptr_t step = (uintptr_t)(k / 2) * (uintptr_t)pg * 16;
		uintptr_t below = near ? lo : base, above = near ? hi : base + REGION_SIZE;
		uintptr_t hint = (k & 1) ? above + step : below - len - step;
		if (!(k & 1) && below < len + step + (uintptr_t)pg)
			continue;
		void *p = mmap((void *)hint, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p == MAP_FAILED)
			continue;
		if (p != (void *)hint || !sites_reach(hint, len, o->lo, o->hi) ||
		    !sites_reach(hint, len, base, base + REGION_SIZE) ||
		    (o->blocks && !sites_reach(hint, len, o->blocks, o->blocks + o->blocks_len))) {
			munmap(p, len);
			continue;
		}
		arch_fill_trap(p, len);
		return hint;
	}
	return 0;
}

int entries_relocate(struct dft_object *o, uintptr_t self, int main, int deferred, void *centry,
		     struct site *out, size_t cap, struct patch_entry *pe, size_t *nout)
{
	*nout = 0;
	want_load();
	if (!want.n || !o->region || object_excluded(o, self))
		return 0;
	int32_t *cand = malloc((o->img.nentries + 1) * sizeof(*cand));
	if (!cand)
		return -ENOMEM;
	size_t nc = 0, refused = 0;
	int fdes = elf_entries_mostly_unwound(&o->img);
	for (size_t i = 0; i < o->img.nentries && nc < cap; i++) {
		const struct elf_entry *f = &o->img.entries[i];
		uintptr_t a = o->bias + f->addr;
		const char *name = elf_entry_name(&o->img, f);
		int sel = name && f->site < 0 ? selected(name, o, main) : 0;
		if (!sel)
			continue;
		/* Entered by a call, not an ifunc resolver (the loader ran it),
		 * not a .cold part. */
		if (!object_code_has(o, a, ARCH_SITE_SIZE) ||
		    (f->flags & (ENTRY_IFUNC | ENTRY_MIDFRAME)) || strstr(name, ".cold")) {
			refuse(o, &refused, (int32_t)i,
			       f->flags & ENTRY_IFUNC ? "an ifunc resolver"
						      : "not entered by a call");
			continue;
		}
		if (never_why(name)) {
			refuse(o, &refused, (int32_t)i, never_why(name));
			continue;
		}
		/* Where the object has unwind information, a function without
		 * any is hand-written or generated code (a JIT's builtins: V8's
		 * move and rewrite return addresses), whose calls and returns
		 * need not follow the ABI the return hook relies on: patched
		 * only when named exactly. */
		if (fdes && !(f->flags & ENTRY_HAS_FDE) && sel != 2) {
			refuse(o, &refused, (int32_t)i,
			       "no unwind information (hand-written or generated code; "
			       "name it exactly to patch it)");
			continue;
		}
		cand[nc++] = (int32_t)i;
	}
	if (!nc) {
		free(cand);
		goto out;
	}
	struct entry_move *mv = NULL;
	if (deferred && !(mv = calloc(nc, sizeof(*mv)))) {
		free(cand);
		return -ENOMEM;
	}
	long pg = sysconf(_SC_PAGESIZE);
	size_t len = (ALL_COPY + nc * BLOCK_SIZE + (size_t)pg - 1) & ~(size_t)(pg - 1);
	uintptr_t arena = sites_map_near(o, len);
	if (!arena) {
		dft_log("%s: no memory within reach of its code for relocated entries", o->path);
		free(cand);
		free(mv);
		return -ENOMEM;
	}
	if (!arch_save_all_tramp((uint8_t *)arena, ALL_COPY, centry)) {
		dft_log("cannot patch functions by relocation: no preserving trampoline on "
			"this architecture, or it does not fit its arena");
		munmap((void *)arena, len);
		free(cand);
		free(mv);
		return 0;
	}
	struct cover *cov = malloc(nc * sizeof(*cov));
	if (!cov) {
		munmap((void *)arena, len);
		free(cand);
		free(mv);
		return -ENOMEM;
	}
	size_t n = 0;
	for (size_t k = 0; k < nc; k++) {
		const struct elf_entry *f = &o->img.entries[cand[k]];
		uintptr_t a = o->bias + f->addr, blk = arena + ALL_COPY + n * BLOCK_SIZE;
		uintptr_t site = blk + BLOCK_SITE, code = site + ARCH_SITE_SIZE + ARCH_RELOC_POST;
		size_t avail = object_code_end(o, a) - a;
		struct arch_reloc r;
		int err = arch_reloc_entry(a, (const uint8_t *)a,
					   f->size && f->size < avail ? f->size : avail, f->size,
					   code, (uint8_t *)code, blk + BLOCK_SIZE - code, &r);
		if (!err && r.calls)
			err = -ENOTSUP; /* an unwinder could not get past the block */
		/* The block's site calls the arena's trampoline (riscv64: a jal,
		 * +-1 MiB: an arena of thousands of blocks may outgrow it). */
		int far = !err && !arch_site_reaches(site, arena);
		if (far)
			err = -ERANGE;
		if (err) {
			refuse(o, &refused, cand[k],
			       r.calls ? "an indirect call among its first instructions"
			       : far   ? "its block's site cannot reach the arena's preserving "
					 "trampoline"
				       : r.why);
			if (err == -ENOENT) {
				dft_log("cannot patch functions by relocation: %s", r.why);
				break;
			}
			continue;
		}
		struct patch_entry *e = &pe[n];
		e->addr = a + r.marker;
		e->len = ARCH_SITE_SIZE;
		memcpy(e->old, (const void *)e->addr, ARCH_SITE_SIZE);
		arch_site_jump(e->addr, site - ARCH_RELOC_PRE, e->new);
		memcpy((void *)(blk + BLOCK_IP), &e->addr, sizeof(e->addr)); /* the ip */
		memcpy((void *)blk, &arena, sizeof(arena));
		memset((void *)(blk + BLOCK_LIT), 0, 8); /* no ops yet */
#if ARCH_RELOC_PRE
		arch_reloc_pre((uint8_t *)(site - ARCH_RELOC_PRE));
#endif
		arch_site_nop((uint8_t *)site);
#if ARCH_RELOC_POST
		arch_reloc_post((uint8_t *)(site + ARCH_SITE_SIZE));
#endif
		if (mv) {
			struct entry_move *m = &mv[n];
			m->lo = e->addr;
			m->site = site;
			memcpy(m->orig, e->old, ARCH_SITE_SIZE);
			m->covered = r.covered;
			m->ninsn = r.ninsn;
			m->end = r.end;
			m->call_pushed = r.call_pushed;
			m->call_target = r.call_target;
			for (int k = 0; k < r.ninsn && k < 8; k++) {
				m->map[k].src = (uint8_t)(r.map[k].src - r.marker);
				m->map[k].dst = r.map[k].dst;
			}
		}
		struct site *s = &out[n];
		memset(s, 0, sizeof(*s));
		s->addr = e->addr;
		s->at = site;
		s->lit = blk + BLOCK_LIT;
		s->flags = SITE_FL_RELOC;
		s->func = cand[k];
		s->obj = o;
		s->route = ROUTE_NONE;
		cov[n] = (struct cover){e->addr, e->addr + r.covered, 0, 0, 0};
		n++;
	}
	free(cand);
	n = foreign_branches(o, cov, n, out, pe, mv, &refused);
	free(cov);
	if (mprotect((void *)arena, len, PROT_READ | PROT_EXEC)) {
		munmap((void *)arena, len);
		free(mv);
		return -errno;
	}
	__builtin___clear_cache((char *)arena, (char *)arena + len);
	if (!n) {
		munmap((void *)arena, len);
		free(mv);
	} else {
		o->blocks = arena;
		o->blocks_len = len;
		o->nreloc = n;
		if (mv)
			qsort(mv, n, sizeof(*mv), move_cmp);
		o->moves = mv;
		o->nmoves = mv ? n : 0;
		*nout = n;
	}
out:
	o->nreloc_refused = refused;
	if (refused && !refusals_reported())
		dft_log("%s: %zu of the functions to patch cannot be (`dynftrace sites --all` says "
			"why; DYNFTRACE_VERBOSE=1 names them)",
			o->path, refused);
	else if (refused)
		dft_debug("%s: %zu of the functions to patch cannot be", o->path, refused);
	return 0;
}

int entries_move_ip(const struct dft_object *o, uintptr_t *ip)
{
	size_t lo = 0, hi = o->nmoves;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (o->moves[mid].lo <= *ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 0;
	const struct entry_move *m = &o->moves[lo - 1];
	uintptr_t off = *ip - m->lo;
	if (off == 0 || off > m->covered)
		return 0; /* before the entry's jump, or past the bytes */
	/* Just past them: a thread in a system call restarts it 2 bytes
	 * back, maybe inside the jump: the block's jump back is the same
	 * place, its copy of the call just before. */
	if (off == m->covered) {
		*ip = m->site + ARCH_SITE_SIZE + ARCH_RELOC_POST + m->end;
		return 1;
	}
	for (int k = 1; k < m->ninsn && k < 8; k++)
		if (m->map[k].src == off) {
			*ip = m->site + ARCH_SITE_SIZE + ARCH_RELOC_POST + m->map[k].dst;
			return 1;
		}
	return -EFAULT; /* not at an instruction's start: cannot be */
}

int entries_restore_prepare(struct dft_object *o)
{
	if (!o->nmoves || o->rel_restore)
		return 0;
	struct patch_entry *pe = calloc(o->nmoves, sizeof(*pe));
	if (!pe)
		return -ENOMEM;
	for (size_t i = 0; i < o->nmoves; i++) {
		const struct entry_move *m = &o->moves[i];
		pe[i].addr = m->lo;
		pe[i].len = ARCH_SITE_SIZE;
		arch_site_jump(m->lo, m->site - ARCH_RELOC_PRE, pe[i].old);
		memcpy(pe[i].new, m->orig, ARCH_SITE_SIZE);
	}
	int err = patch_early_prepare_raw(pe, o->nmoves, &o->rel_restore);
	free(pe);
	return err;
}

void entries_free(struct dft_object *o)
{
	free(o->moves);
	o->moves = NULL;
	o->nmoves = 0;
	free(o->refusals);
	o->refusals = NULL;
	o->nrefusals = 0;
}

int entries_move_back(const struct dft_object *o, uintptr_t *ip)
{
	if (!o->blocks || *ip < o->blocks || *ip >= o->blocks + o->blocks_len)
		return 0;
	for (size_t i = 0; i < o->nmoves; i++) {
		const struct entry_move *m = &o->moves[i];
		uintptr_t code = m->site + ARCH_SITE_SIZE + ARCH_RELOC_POST;
		if (*ip == m->site - ARCH_RELOC_PRE ||
		    (ARCH_RELOC_PRE_PURE && *ip > m->site - ARCH_RELOC_PRE && *ip <= m->site)) {
			/* before the block's copies: the entry itself */
			*ip = m->lo;
			return 1;
		}
		if (*ip >= m->site - ARCH_RELOC_PRE && *ip < code)
			return -EFAULT; /* the pre has run: not the entry's state */
		if (*ip < code || *ip > code + m->end)
			continue;
		uintptr_t off = *ip - code;
		if (off == m->end) {
			*ip = m->lo + m->covered;
			return 1;
		}
		if (m->call_pushed && off == m->call_pushed) {
			/* the return address (the original's) is pushed: what the
			 * original call would have left, entering its target */
			*ip = m->call_target;
			return 1;
		}
		for (int k = 0; k < m->ninsn && k < 8; k++)
			if (m->map[k].dst == off) {
				*ip = m->lo + m->map[k].src;
				return 1;
			}
		return -EFAULT;
	}
	return -EFAULT; /* the arena's trampoline, or between blocks */
}
