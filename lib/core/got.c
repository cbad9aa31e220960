/* SPDX-License-Identifier: MIT */
/*
 * got.c - what the libc wrappers forward to (dft_real), and how they are
 * reached when the runtime is loaded into a process that is already running
 * (GOT hooks).
 *
 * Linked or preloaded, the runtime comes before libc in the global scope:
 * every reference to a wrapped name binds to the wrapper, whose "real"
 * function is the next definition after the runtime. Loaded late with
 * dlopen(RTLD_LOCAL), it comes after every binding was made, and even its
 * own references find libc first. got_hooks_install() then does by hand
 * what the lookup would have done: for each GOT slot of a wrapped name
 * that preload mode would have bound to the wrapper, it stores the wrapper.
 *
 * Which slots. Per object, per GOT relocation (arch_got_reloc) naming a
 * wrapped function, read from the object's dynamic section in memory:
 *   - the slot holds dft_real(NAME): the object is bound to the very
 *     function the wrapper forwards to, nothing else sits in between:
 *     hooked;
 *   - a PLT slot holding an address in its own object's code: the lazy
 *     binding stub, not bound yet: hooked if the global definition, which
 *     the loader would bind, is dft_real(NAME);
 *   - any other value is another definition the object binds to (the
 *     program's own, a sanitizer's interceptor, another hooking tool):
 *     preload mode would not reach the wrapper there either. Left alone;
 *   - the object defining dft_real(NAME) is never hooked for NAME. A
 *     sanitizer runtime takes its interceptors' addresses (GLOB_DAT of its
 *     own symbols) and comes before us in preload mode, where those bind to
 *     itself. libc is walked like any other object, and this rule is why
 *     nothing in it changes: glibc calls its own functions through hidden
 *     aliases (signal -> __sigaction, execvp -> __execve), and 2.36 has no
 *     GOT slot of a wrapped name at all (readelf -r). A libc reference to
 *     a wrapped name defined elsewhere would be hooked, as preload binds it.
 * Skipped: the runtime (its calls that must reach a wrapper use the hidden
 * aliases, got.h), the dynamic loader (bound before anything else, and its
 * pages are its own) and the vDSO (no relocations).
 *
 * Writing a slot: one aligned 8-byte compare-and-swap. Other threads keep
 * calling through the slot: each call reads the old or the new value, both
 * valid functions. A slot in the pages ld.so made read-only (PT_GNU_RELRO,
 * full with -z now) is written between mprotect(READ|WRITE) and
 * mprotect(READ).
 *
 * Other threads loading and unloading:
 *   - every write happens inside dl_iterate_phdr's callback for the
 *     object: glibc holds dl_load_write_lock across it, and dlclose unmaps
 *     under that lock, so the object stays mapped while it is written;
 *   - an object is first touched once _dl_find_object() finds it: glibc
 *     registers a dlopen'ed object there after relocating it and
 *     write-protecting its RELRO. Before that its slots are not bound, and
 *     the loader may mprotect the very page being written. A later call
 *     hooks it;
 *   - records are keyed by (load bias, program headers, hash of the name);
 *     an object no longer listed is forgotten without a write, and a slot
 *     is restored only by compare-and-swap from the wrapper: a new copy of
 *     a file at the same place holds the loader's value, never ours;
 *   - lazy binding writes a PLT slot without a lock (_dl_fixup): a thread
 *     that entered the stub before our store may overwrite the wrapper with
 *     what it resolved. The next pass puts the wrapper back (a dlopen or
 *     dlclose that changes the loaded set, or got_hooks_install again);
 *     meanwhile calls through that slot miss the wrapper. A pass is skipped
 *     when the loader's load and unload counts did not change and no
 *     object was still loading at the last one (a dlopen of a loaded
 *     library costs one dl_iterate_phdr step).
 *
 * Not covered: function addresses stored in data (R_X86_64_64 and the
 * like), calls through pointers the program or a sanitizer fetched with
 * dlsym before the hooks (a sanitizer's REAL(): in attach mode a sanitized
 * program's calls reach its interceptors and never the wrappers), and a
 * GOT value a compiler keeps: with -fno-plt the compiler may treat a slot
 * as constant. clang loads it once before a loop; gcc for aarch64 loads
 * it at a function's first call of the name and reuses the value (a
 * callee-saved register, a stack slot) for every later call in that
 * function (x86-64's `call *slot(%rip)` reads the slot at each call). A
 * function that loaded the value before the install calls the old target
 * (libc's after the install, the wrapper after the remove) until it
 * returns. No store reaches that copy, so the runtime's code must stay
 * mapped after a remove.
 *
 * The tables live in anonymous mappings: no malloc (the program's
 * allocator may be anything).
 *
 * | state                          | written by                 | read by   |
 * |--------------------------------|----------------------------|-----------|
 * | got_objs, got_slots, got_pass, | dft_unload_lock holder (w) | the same  |
 * | got_installed                  |                            |           |
 * | a hooked GOT slot              | CAS by that holder; ld.so's | calling   |
 * |                                | lazy binding (no lock)     | threads   |
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "arch.h"
#include "got.h"

#if __ELF_NATIVE_CLASS == 64
#define REL_SYM(info)  ELF64_R_SYM(info)
#define REL_TYPE(info) ELF64_R_TYPE(info)
#else
#define REL_SYM(info)  ELF32_R_SYM(info)
#define REL_TYPE(info) ELF32_R_TYPE(info)
#endif

/* interpose.c's unload barrier (see there), which also serialises the GOT
 * hook passes; defined here, by its lowest user. */
HIDDEN pthread_rwlock_t dft_unload_lock = PTHREAD_RWLOCK_INITIALIZER;

/* ---- what a wrapper forwards to ----------------------------------------- */

void *dft_real(const char *name)
{
	/* Linked or preloaded: the next definition in the global scope. Loaded
	 * with dlopen: glibc gives the object no loader (l_loader is only kept
	 * for DT_NEEDED), so RTLD_NEXT searches the runtime's own local scope,
	 * its dependencies breadth-first: libc.so.6 (or a sanitizer runtime),
	 * which defines every libc function wrapped here, and never the
	 * program's own definitions. */
	void *p = dlsym(RTLD_NEXT, name);
	if (p)
		return p;
	/* The unwinder's functions (libgcc_s, libstdc++: trace.c) are not in
	 * that list: the global definition, unless it is ours (preload mode,
	 * where nothing after us defines NAME). */
	p = dlsym(RTLD_DEFAULT, name);
	Dl_info a, b;
	if (p && dladdr(p, &a) && dladdr((void *)dft_real, &b) && a.dli_fbase == b.dli_fbase)
		p = NULL;
	dlerror(); /* a successful dlsym leaves no error: neither do we */
	return p;
}

/* ---- the hook table ------------------------------------------------------ */

/* DFT_WRAPPER entries, gathered by the linker. */
extern const struct got_hook __start_dft_got_hooks[] HIDDEN;
extern const struct got_hook __stop_dft_got_hooks[] HIDDEN;

#define GOT_MAX_HOOKS 32

struct hook_state {
	const char *name;
	uintptr_t wrapper;
	uintptr_t real;	  /* dft_real(name), 0: not hooked (nothing to call) */
	uintptr_t global; /* what the loader binds a lazy slot to */
};

struct hooks {
	struct hook_state s[GOT_MAX_HOOKS];
	int n;
	uint8_t first[32]; /* bitmap of the names' first bytes */
};

/* Resolve every hook's functions (dlsym: the loader's lock; never inside
 * dl_iterate_phdr, whose lock dlclose takes after that one). */
static void hooks_resolve(struct hooks *hk)
{
	size_t n = (size_t)(__stop_dft_got_hooks - __start_dft_got_hooks);
	if (n > GOT_MAX_HOOKS) {
		dft_log("GOT hooks: %zu wrappers, only %d hooked", n, GOT_MAX_HOOKS);
		n = GOT_MAX_HOOKS;
	}
	memset(hk, 0, sizeof(*hk));
	for (size_t i = 0; i < n; i++) {
		const struct got_hook *h = &__start_dft_got_hooks[i];
		struct hook_state *s = &hk->s[hk->n++];
		s->name = h->name;
		s->wrapper = (uintptr_t)h->wrapper;
		s->real = (uintptr_t)dft_real(h->name);
		s->global = (uintptr_t)dlsym(RTLD_DEFAULT, h->name);
		uint8_t c = (uint8_t)h->name[0];
		hk->first[c / 8] |= (uint8_t)(1u << (c % 8));
	}
	dlerror(); /* names nobody defines: no error left to the caller */
}

static int hook_find(const struct hooks *hk, const char *name)
{
	uint8_t c = (uint8_t)name[0];
	if (!(hk->first[c / 8] & (1u << (c % 8))))
		return -1;
	for (int i = 0; i < hk->n; i++)
		if (!strcmp(hk->s[i].name, name))
			return i;
	return -1;
}

/* ---- records -------------------------------------------------------------- */

/* A hooked object (the same object while listed under this key). */
struct got_obj {
	uintptr_t bias;
	const void *phdr;
	uint32_t name_hash;
	uint32_t id;
	uint32_t nslots; /* its records in got_slots */
	unsigned pass;	 /* the last sync that listed it */
};

/* A slot we wrote: put ORIG back at remove. */
struct got_slot {
	uintptr_t *slot;
	uintptr_t orig;
	uint32_t obj_id;
	uint32_t hook; /* index in the hook table (the section's order) */
};

/* A growable array in an anonymous mapping. */
struct vec {
	void *v;
	size_t n, cap, bytes;
};

static struct vec got_objs, got_slots;
static unsigned got_pass;
static uint32_t got_next_id;
static int got_installed;
/* The loader's counts of loads and unloads at the last pass, and whether
 * it met objects still being loaded: else a pass changes nothing. */
static unsigned long long got_adds, got_subs;
static int got_unready;

/* Room for one more element of ESZ bytes. */
static int vec_reserve(struct vec *v, size_t esz)
{
	if (v->n < v->cap)
		return 0;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t bytes = v->bytes ? 2 * v->bytes : pg;
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	if (v->n)
		memcpy(p, v->v, v->n * esz);
	if (v->v)
		munmap(v->v, v->bytes);
	v->v = p;
	v->bytes = bytes;
	v->cap = bytes / esz;
	return 0;
}

static void vec_free(struct vec *v)
{
	if (v->v)
		munmap(v->v, v->bytes);
	memset(v, 0, sizeof(*v));
}

#define OBJS  ((struct got_obj *)got_objs.v)
#define SLOTS ((struct got_slot *)got_slots.v)

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (; s && *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

/* ---- an object in memory --------------------------------------------------- */

struct objinfo {
	const struct dl_phdr_info *info;
	uintptr_t bias;
	uintptr_t relro_lo, relro_hi; /* the pages ld.so made read-only */
	const ElfW(Dyn) * dyn;
	int dyn_writable;
};

/* Is [A, A+LEN) inside one PT_LOAD segment having all of FLAGS? */
static int in_seg(const struct objinfo *o, uintptr_t a, size_t len, ElfW(Word) flags)
{
	const struct dl_phdr_info *i = o->info;
	for (int k = 0; k < i->dlpi_phnum; k++) {
		const ElfW(Phdr) *p = &i->dlpi_phdr[k];
		uintptr_t lo = o->bias + p->p_vaddr;
		if (p->p_type == PT_LOAD && (p->p_flags & flags) == flags && a >= lo &&
		    a - lo <= p->p_memsz && len <= p->p_memsz - (a - lo))
			return 1;
	}
	return 0;
}

static int objinfo_read(const struct dl_phdr_info *info, long pagesz, struct objinfo *o)
{
	memset(o, 0, sizeof(*o));
	o->info = info;
	o->bias = info->dlpi_addr;
	for (int k = 0; k < info->dlpi_phnum; k++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[k];
		if (p->p_type == PT_DYNAMIC) {
			o->dyn = (const ElfW(Dyn) *)(o->bias + p->p_vaddr);
			o->dyn_writable = !!(p->p_flags & PF_W);
		} else if (p->p_type == PT_GNU_RELRO) {
			/* As glibc's _dl_protect_relro: whole pages only. */
			uintptr_t m = ~(uintptr_t)(pagesz - 1);
			o->relro_lo = (o->bias + p->p_vaddr) & m;
			o->relro_hi = (o->bias + p->p_vaddr + p->p_memsz) & m;
		}
	}
	return o->dyn ? 0 : -ENOENT;
}

/*
 * A d_ptr of the dynamic section as an address. glibc adds the load bias
 * in place to DT_STRTAB, DT_SYMTAB, DT_RELA, DT_JMPREL (and DT_HASH,
 * DT_PLTGOT, DT_VERSYM, DT_GNU_HASH, DT_RELR) when the bias is not 0 and
 * PT_DYNAMIC is writable (elf/get-dynamic-info.h; the l_ld_readonly test
 * since 2.35; x86-64 does not define DL_RO_DYN_SECTION). Sizes (DT_*SZ,
 * DT_RELAENT, DT_PLTREL) are values, never changed. Other loaders (musl)
 * leave file addresses everywhere. Follow glibc's rule, check that the
 * address is inside the object, and take the other reading if it is not.
 * 0: neither is.
 */
static uintptr_t dyn_addr(const struct objinfo *o, uintptr_t v, size_t len)
{
	uintptr_t a = o->bias && o->dyn_writable ? v : v + o->bias;
	uintptr_t b = a == v ? v + o->bias : v;
	if (in_seg(o, a, len, 0))
		return a;
	if (in_seg(o, b, len, 0))
		return b;
	return 0;
}

struct dyninfo {
	const ElfW(Sym) * symtab;
	const char *strtab;
	size_t strsz;
	const ElfW(Rela) * rela, *jmprel;
	size_t relasz, relaent, pltrelsz;
};

static int dyninfo_read(const struct objinfo *o, struct dyninfo *d)
{
	uintptr_t symtab = 0, strtab = 0, rela = 0, jmprel = 0;
	long pltrel = DT_RELA;
	memset(d, 0, sizeof(*d));
	d->relaent = sizeof(ElfW(Rela));
	for (const ElfW(Dyn) *e = o->dyn; e->d_tag != DT_NULL; e++) {
		switch (e->d_tag) {
		case DT_SYMTAB:
			symtab = e->d_un.d_ptr;
			break;
		case DT_STRTAB:
			strtab = e->d_un.d_ptr;
			break;
		case DT_STRSZ:
			d->strsz = e->d_un.d_val;
			break;
		case DT_RELA:
			rela = e->d_un.d_ptr;
			break;
		case DT_RELASZ:
			d->relasz = e->d_un.d_val;
			break;
		case DT_RELAENT:
			d->relaent = e->d_un.d_val;
			break;
		case DT_JMPREL:
			jmprel = e->d_un.d_ptr;
			break;
		case DT_PLTRELSZ:
			d->pltrelsz = e->d_un.d_val;
			break;
		case DT_PLTREL:
			pltrel = (long)e->d_un.d_val;
			break;
		}
	}
	if (!symtab || !strtab || !d->strsz || d->relaent < sizeof(ElfW(Rela)))
		return -ENOEXEC;
	d->symtab = (const ElfW(Sym) *)dyn_addr(o, symtab, sizeof(ElfW(Sym)));
	d->strtab = (const char *)dyn_addr(o, strtab, d->strsz);
	if (!d->symtab || !d->strtab)
		return -ENOEXEC;
	/* The GOT architectures (x86-64, aarch64, riscv64) use RELA; a REL
	 * PLT table is not read. */
	if (jmprel && d->pltrelsz && pltrel == DT_RELA)
		d->jmprel = (const ElfW(Rela) *)dyn_addr(o, jmprel, d->pltrelsz);
	if (rela && d->relasz)
		d->rela = (const ElfW(Rela) *)dyn_addr(o, rela, d->relasz);
	return 0;
}

/* Is the object fully loaded: relocated, RELRO protected (see the top)? */
static int obj_ready(const struct objinfo *o)
{
	struct dl_find_object r;
	return _dl_find_object((void *)o->dyn, &r) == 0 &&
	       (uintptr_t)o->dyn >= (uintptr_t)r.dlfo_map_start &&
	       (uintptr_t)o->dyn < (uintptr_t)r.dlfo_map_end;
}

/* ---- one pass over the loaded objects --------------------------------------- */

enum sync_mode { SYNC_HOOK, SYNC_RESTORE };

struct sync {
	enum sync_mode mode;
	const struct hooks *hk;
	uintptr_t self, ldso, vdso; /* an address inside each of those */
	long pagesz;
	unsigned pass;
	int hooked, healed, restored, foreign, changed, objects, unready;
	int err; /* the first error */
};

static void sync_error(struct sync *s, int err)
{
	if (!s->err)
		s->err = err;
}

/* Compare-and-swap the slot from OLD to NEW. 1: done, 0: it no longer held
 * OLD, <0: errno of the mprotect that failed. */
static int slot_cas(const struct sync *s, const struct objinfo *o, uintptr_t *slot, uintptr_t old,
		    uintptr_t new)
{
	uintptr_t a = (uintptr_t)slot;
	void *page = (void *)(a & ~(uintptr_t)(s->pagesz - 1));
	int ro = a >= o->relro_lo && a < o->relro_hi;
	if (ro && mprotect(page, (size_t)s->pagesz, PROT_READ | PROT_WRITE) != 0)
		return -errno;
	int ok =
	    __atomic_compare_exchange_n(slot, &old, new, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
	if (ro && mprotect(page, (size_t)s->pagesz, PROT_READ) != 0)
		dft_log("GOT hooks: a page of %s stays writable: %s",
			o->info->dlpi_name && *o->info->dlpi_name ? o->info->dlpi_name
								  : "the program",
			strerror(errno));
	return ok;
}

/* Hook SLOT of object R for hook K if preload mode would bind it to us. */
static void slot_hook(struct sync *s, const struct objinfo *o, struct got_obj *r, uintptr_t *slot,
		      int k, enum arch_got_kind kind)
{
	const struct hook_state *h = &s->hk->s[k];
	if (!h->real || in_seg(o, h->real, 1, 0))
		return; /* nothing to forward to, or the definer's own reference */
	for (int tries = 0; tries < 3; tries++) {
		uintptr_t v = __atomic_load_n(slot, __ATOMIC_RELAXED);
		if (v == h->wrapper)
			return; /* ours: recorded, or bound to us by the lookup */
		int lazy = kind == ARCH_GOT_PLT && in_seg(o, v, 1, PF_X) && h->global == h->real;
		if (v != h->real && !lazy) {
			s->foreign++;
			return;
		}
		if (vec_reserve(&got_slots, sizeof(struct got_slot))) {
			sync_error(s, -ENOMEM);
			return;
		}
		int e = slot_cas(s, o, slot, v, h->wrapper);
		if (e < 0) {
			sync_error(s, e);
			return;
		}
		if (e) {
			SLOTS[got_slots.n++] = (struct got_slot){slot, v, r->id, (uint32_t)k};
			r->nslots++;
			s->hooked++;
			return;
		}
		/* The loader bound it meanwhile (lazy binding): look again. */
	}
}

/* The GOT relocations of TAB (SIZE bytes of entries of ENT bytes). */
static void walk_relocs(struct sync *s, const struct objinfo *o, struct got_obj *r,
			const struct dyninfo *d, const ElfW(Rela) * tab, size_t size, size_t ent)
{
	if (!tab)
		return;
	for (size_t off = 0; off + sizeof(ElfW(Rela)) <= size; off += ent) {
		const ElfW(Rela) *rel = (const ElfW(Rela) *)((const char *)tab + off);
		enum arch_got_kind kind = arch_got_reloc((uint32_t)REL_TYPE(rel->r_info));
		size_t symi = REL_SYM(rel->r_info);
		/* A slot holding S + A with A != 0 is not a function's address. */
		if (kind == ARCH_GOT_NONE || !symi || rel->r_addend)
			continue;
		const ElfW(Sym) *sym = d->symtab + symi;
		if (!in_seg(o, (uintptr_t)sym, sizeof(*sym), 0) || sym->st_name >= d->strsz)
			continue;
		int k = hook_find(s->hk, d->strtab + sym->st_name);
		if (k < 0)
			continue;
		uintptr_t a = o->bias + rel->r_offset; /* r_offset: never relocated */
		if (a % sizeof(uintptr_t) || !in_seg(o, a, sizeof(uintptr_t), PF_W))
			continue;
		slot_hook(s, o, r, (uintptr_t *)a, k, kind);
	}
}

/* A known object: put back the wrappers lazy binding overwrote (or that a
 * new copy of the file at the same place does not have). */
static void obj_heal(struct sync *s, const struct objinfo *o, const struct got_obj *r)
{
	for (size_t i = 0; i < got_slots.n && r->nslots; i++) {
		struct got_slot *g = &SLOTS[i];
		if (g->obj_id != r->id)
			continue;
		const struct hook_state *h = &s->hk->s[g->hook];
		uintptr_t v = __atomic_load_n(g->slot, __ATOMIC_RELAXED);
		if (v == h->wrapper || !h->real || v != h->real)
			continue;
		int e = slot_cas(s, o, g->slot, v, h->wrapper);
		if (e < 0)
			sync_error(s, e);
		else
			s->healed += e;
	}
}

/* Detach: the original value back wherever the wrapper still is. */
static void obj_restore(struct sync *s, const struct objinfo *o, const struct got_obj *r)
{
	const struct got_hook *tab = __start_dft_got_hooks;
	for (size_t i = 0; i < got_slots.n && r->nslots; i++) {
		struct got_slot *g = &SLOTS[i];
		if (g->obj_id != r->id)
			continue;
		uintptr_t w = (uintptr_t)tab[g->hook].wrapper;
		int e = __atomic_load_n(g->slot, __ATOMIC_RELAXED) == w
			    ? slot_cas(s, o, g->slot, w, g->orig)
			    : 0;
		if (e < 0)
			sync_error(s, e);
		else if (e)
			s->restored++;
		else
			s->changed++; /* somebody else's value now: theirs to keep */
	}
}

static struct got_obj *obj_find(uintptr_t bias, const void *phdr, uint32_t hash)
{
	for (size_t i = 0; i < got_objs.n; i++)
		if (OBJS[i].bias == bias && OBJS[i].phdr == phdr && OBJS[i].name_hash == hash)
			return &OBJS[i];
	return NULL;
}

static int sync_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct sync *s = data;
	struct objinfo o;
	if (size < offsetof(struct dl_phdr_info, dlpi_phnum) + sizeof(info->dlpi_phnum) ||
	    objinfo_read(info, s->pagesz, &o))
		return 0;
	if (in_seg(&o, s->self, 1, 0) || in_seg(&o, s->ldso, 1, 0) ||
	    (s->vdso && in_seg(&o, s->vdso, 1, 0)))
		return 0;
	uint32_t hash = name_hash(info->dlpi_name);
	struct got_obj *r = obj_find(o.bias, info->dlpi_phdr, hash);
	if (s->mode == SYNC_RESTORE) {
		if (r)
			obj_restore(s, &o, r);
		return 0;
	}
	if (r) {
		r->pass = s->pass;
		obj_heal(s, &o, r);
		return 0;
	}
	if (!obj_ready(&o)) {
		s->unready++; /* still being loaded: the next pass */
		return 0;
	}
	struct dyninfo d;
	if (dyninfo_read(&o, &d)) {
		dft_debug("GOT hooks: cannot read the dynamic section of %s", info->dlpi_name);
		return 0;
	}
	if (vec_reserve(&got_objs, sizeof(struct got_obj))) {
		sync_error(s, -ENOMEM); /* go on: the known objects must stay listed */
		return 0;
	}
	r = &OBJS[got_objs.n++];
	*r = (struct got_obj){o.bias, info->dlpi_phdr, hash, got_next_id++, 0, s->pass};
	s->objects++;
	walk_relocs(s, &o, r, &d, d.jmprel, d.pltrelsz, sizeof(ElfW(Rela)));
	walk_relocs(s, &o, r, &d, d.rela, d.relasz, d.relaent);
	return 0;
}

/* Objects the last pass did not list are gone: forget them, write nothing. */
static void forget_gone(unsigned pass)
{
	size_t k = 0;
	for (size_t i = 0; i < got_objs.n; i++) {
		if (OBJS[i].pass == pass) {
			OBJS[k++] = OBJS[i];
			continue;
		}
		uint32_t id = OBJS[i].id;
		size_t m = 0;
		for (size_t j = 0; j < got_slots.n; j++)
			if (SLOTS[j].obj_id != id)
				SLOTS[m++] = SLOTS[j];
		got_slots.n = m;
	}
	got_objs.n = k;
}

/* One pass; dft_unload_lock held for writing. */
static int got_sync(enum sync_mode mode, const struct hooks *hk)
{
	struct sync s = {
	    .mode = mode,
	    .hk = hk,
	    .self = (uintptr_t)got_sync,
	    .ldso = (uintptr_t)&_r_debug,
	    .vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR),
	    .pagesz = sysconf(_SC_PAGESIZE),
	    .pass = ++got_pass,
	};
	dl_iterate_phdr(sync_cb, &s);
	if (mode == SYNC_HOOK) {
		got_unready = s.unready;
		forget_gone(s.pass);
		if (s.hooked || s.healed)
			dft_debug("GOT hooks: %d slots hooked in %d new objects, %d put back, %d "
				  "bound elsewhere",
				  s.hooked, s.objects, s.healed, s.foreign);
	} else {
		dft_debug("GOT hooks: %d slots restored, %d held another value", s.restored,
			  s.changed);
	}
	if (s.err)
		dft_log("GOT hooks: %s", strerror(-s.err));
	return s.err ? s.err : mode == SYNC_HOOK ? s.hooked : s.restored;
}

static int counts_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	unsigned long long *c = data;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		c[0] = info->dlpi_adds;
		c[1] = info->dlpi_subs;
	}
	return 1; /* the first object is enough */
}

/* Has anything been loaded or unloaded since the last pass (or was an
 * object still loading then)? Read before the pass: a change during it
 * makes the next call pass again. */
static int got_changed(void)
{
	unsigned long long c[2] = {0, 0};
	dl_iterate_phdr(counts_cb, c);
	int changed = got_unready || c[0] != got_adds || c[1] != got_subs || !c[0];
	got_adds = c[0];
	got_subs = c[1];
	return changed;
}

/* ---- API -------------------------------------------------------------------- */

int got_hooks_install(void)
{
	struct hooks hk;
	hooks_resolve(&hk); /* before the lock: see hooks_resolve */
	pthread_rwlock_wrlock(&dft_unload_lock);
	got_installed = 1;
	got_changed(); /* a pass in any case: it also puts back overwritten hooks */
	int r = got_sync(SYNC_HOOK, &hk);
	pthread_rwlock_unlock(&dft_unload_lock);
	return r;
}

void got_hooks_object_added(void)
{
	if (!got_installed || !got_changed())
		return; /* a dlopen of what was loaded already */
	struct hooks hk;
	hooks_resolve(&hk);
	got_sync(SYNC_HOOK, &hk);
}

void got_hooks_object_removed(void)
{
	got_hooks_object_added(); /* the same pass forgets what is gone */
}

int got_hooks_remove(void)
{
	pthread_rwlock_wrlock(&dft_unload_lock);
	int r = 0;
	if (got_installed) {
		r = got_sync(SYNC_RESTORE, NULL);
		vec_free(&got_objs);
		vec_free(&got_slots);
		got_installed = 0;
	}
	pthread_rwlock_unlock(&dft_unload_lock);
	return r;
}
