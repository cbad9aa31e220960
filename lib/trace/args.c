/* SPDX-License-Identifier: MIT */
/*
 * args.c - arguments and return values of the function_graph tracer (see
 * args.h for who pays and the concurrency rules).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "arch.h"
#include "args.h"
#include "demangle.h"
#include "pattern.h"
#include "internal.h"
#include "sites.h"

struct args_pat {
	char *pat;  /* a filter pattern (glob.c: FUNC@OBJECT too) */
	char *text; /* as given, for reading back */
	struct arg_spec spec;
};
/* The specifications, replaced whole under patch_lock. The maps copy what
 * they need into their pools: callbacks never see a set. */
static struct args_pat *args_set;
static size_t args_nset;

HIDDEN struct args_map *trace_args;

/* The set's index, built with it (patch_lock): the patterns that are a
 * plain name (no glob or regex character, no object) sorted by name, found
 * by binary search; the others (loose) tried one by one. Without it every
 * site tried every pattern: seconds per object loaded with the thousands
 * of specifications of --auto-args. */
struct exact_ent {
	const char *name;
	size_t idx; /* in args_set */
};
static struct exact_ent *args_exact;
static size_t args_nexact;
static size_t *args_loose; /* indices in args_set, ascending */
static size_t args_nloose;

static int exact_cmp(const void *a, const void *b)
{
	const struct exact_ent *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

static int plain_name(const char *p)
{
	return !strpbrk(p, "*?[\\@") && !strstr(p, ":mod:") && !pat_is_regex(p, strlen(p));
}

/* Index V (N patterns) into the new tables: 0 or -ENOMEM (nothing changed). */
static int index_build(const struct args_pat *v, size_t n)
{
	struct exact_ent *ex = malloc((n ? n : 1) * sizeof(*ex));
	size_t *lo = malloc((n ? n : 1) * sizeof(*lo)), ne = 0, nl = 0;
	if (!ex || !lo) {
		free(ex);
		free(lo);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if (plain_name(v[i].pat))
			ex[ne++] = (struct exact_ent){v[i].pat, i};
		else
			lo[nl++] = i;
	}
	qsort(ex, ne, sizeof(*ex), exact_cmp);
	free(args_exact);
	free(args_loose);
	args_exact = ex, args_nexact = ne;
	args_loose = lo, args_nloose = nl;
	return 0;
}

int args_any(void)
{
	return __atomic_load_n(&args_nset, __ATOMIC_RELAXED) != 0;
}

static void set_free(struct args_pat *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].pat);
		free(v[i].text);
	}
	free(v);
}

#define WHY(...) ((void)(why && snprintf(why, whylen, __VA_ARGS__)))

/* Parse SPEC into a new set: 0, -EINVAL (WHY), -ENOMEM. */
static int set_parse(const char *spec, struct args_pat **out, size_t *nout, char *why,
		     size_t whylen)
{
	char *copy = strdup(spec), *save;
	struct args_pat *v = NULL;
	size_t n = 0;
	int err = copy ? 0 : -ENOMEM;
	for (char *s = copy ? strtok_r(copy, ";\n", &save) : NULL; s && !err;
	     s = strtok_r(NULL, ";\n", &save)) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			continue;
		/* the last '@' starts the items: FUNC@OBJECT@arg1 */
		char *at = strrchr(s, '@');
		if (!at || at == s || !at[1]) {
			WHY("bad argument specification '%s': give FUNC@arg1[/FMT],... or "
			    "FUNC@retval[/FMT]",
			    s);
			err = -EINVAL;
			break;
		}
		struct args_pat p = {0};
		if (!(p.text = strdup(s))) {
			err = -ENOMEM;
			break;
		}
		*at = 0;
		if ((err = dft_pattern_check(s, why, whylen)) ||
		    (err = argspec_parse(at + 1, 0, &p.spec, why, whylen))) {
			free(p.text);
			break;
		}
		struct args_pat *nv = realloc(v, (n + 1) * sizeof(*nv));
		if (nv)
			v = nv;
		if (!nv || !(p.pat = strdup(s))) {
			free(p.text);
			err = -ENOMEM;
			break;
		}
		v[n++] = p;
	}
	free(copy);
	if (err) {
		set_free(v, n);
		return err;
	}
	*out = v;
	*nout = n;
	return 0;
}

/* The indices of the patterns that match a site (spec_of). */
struct hits {
	size_t *v, n, cap;
	int oom;
};

static void hit_add(struct hits *h, size_t idx)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 16;
		size_t *nv = realloc(h->v, cap * sizeof(*nv));
		if (!nv) {
			h->oom = 1;
			return;
		}
		h->v = nv, h->cap = cap;
	}
	h->v[h->n++] = idx;
}

/* Add to H the plain patterns equal to NAME. */
static void exact_hits(const char *name, struct hits *h)
{
	size_t lo = 0, hi = args_nexact;
	while (lo < hi) { /* the first entry >= NAME */
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(args_exact[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < args_nexact && !strcmp(args_exact[lo].name, name); lo++)
		hit_add(h, args_exact[lo].idx);
}

static int idx_cmp(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return (x > y) - (x < y);
}

/* The specifications of site S merged in the order given (patch_lock
 * held): 0 if none, as every pattern matched against the site's name (and
 * a C++ symbol's demangled names, as pattern.c does) would give. */
static int spec_of(const struct site *s, struct arg_spec *out)
{
	const char *name = site_func_name(s);
	memset(out, 0, sizeof(*out));
	if (!name || !args_nset)
		return 0;
	struct hits h = {0};
	exact_hits(name, &h);
	if (!strncmp(name, "_Z", 2) && args_nexact) {
		char dm[1024];
		if (dft_demangle(name, DM_SIMPLE, dm, sizeof(dm)) >= 0)
			exact_hits(dm, &h);
		if (dft_demangle(name, DM_FULL, dm, sizeof(dm)) >= 0)
			exact_hits(dm, &h);
	}
	for (size_t k = 0; k < args_nloose; k++)
		if (dft_glob_match_in(args_set[args_loose[k]].pat, name, s->obj->path))
			hit_add(&h, args_loose[k]);
	if (h.oom) {
		free(h.v);
		return 0; /* out of memory: no values, as if not asked */
	}
	if (h.n > 1)
		qsort(h.v, h.n, sizeof(*h.v), idx_cmp);
	for (size_t k = 0; k < h.n; k++)
		if (!k || h.v[k] != h.v[k - 1])
			argspec_merge(out, &args_set[h.v[k]].spec);
	free(h.v);
	return h.n != 0;
}

void args_rebuild(void)
{
	struct args_map *m = NULL;
	if (args_nset) {
		uint32_t n = site_next_id;
		m = calloc(1, sizeof(*m) + (size_t)n * sizeof(m->idx[0]));
		struct arg_spec *pool = calloc(1, sizeof(*pool));
		if (!m || !pool) {
			free(m);
			free(pool);
			dft_log(
			    "arguments: out of memory, not applied to the functions loaded now");
			return;
		}
		m->n = n;
		m->npool = 1;
		m->pool = pool;
		for (size_t i = 0; i < site_count; i++) {
			struct arg_spec sp;
			if (site_tab[i].id >= n || !spec_of(&site_tab[i], &sp))
				continue;
			uint32_t k;
			for (k = 1; k < m->npool; k++)
				if (!memcmp(&m->pool[k], &sp, sizeof(sp)))
					break;
			if (k == m->npool) {
				if (k > UINT16_MAX)
					continue; /* 65535 distinct merged specifications */
				struct arg_spec *np = realloc(m->pool, (k + 1) * sizeof(*np));
				if (!np)
					continue;
				m->pool = np;
				m->pool[k] = sp;
				m->npool++;
			}
			m->idx[site_tab[i].id] = (uint16_t)k;
		}
	}
	struct args_map *old = trace_args;
	__atomic_store_n(&trace_args, m, __ATOMIC_RELEASE);
	if (old) {
		rcu_synchronize();
		free(old->pool);
		free(old);
	}
}

int args_site_generic(const struct site *s)
{
	if (!args_nset)
		return 0;
	const struct args_map *m = trace_args;
	if (m && s->id < m->n)
		return m->idx[s->id] != 0;
	struct arg_spec sp;
	return spec_of(s, &sp); /* loaded since the map */
}

int __args_set_spec(const char *spec, char *why, size_t whylen)
{
	struct args_pat *v = NULL;
	size_t n = 0;
	int err = set_parse(spec, &v, &n, why, whylen);
	if (!err && (err = index_build(v, n)))
		set_free(v, n);
	if (err)
		return err;
	struct args_pat *old = args_set;
	size_t nold = args_nset;
	args_set = v;
	__atomic_store_n(&args_nset, n, __ATOMIC_RELAXED);
	set_free(old, nold);
	args_rebuild();
	return 0;
}

int __args_spec_text(char *buf, size_t size)
{
	size_t len = 0;
	if (size)
		buf[0] = 0;
	for (size_t i = 0; i < args_nset; i++) {
		int k = snprintf(len < size ? buf + len : NULL, len < size ? size - len : 0, "%s\n",
				 args_set[i].text);
		len += (size_t)k;
	}
	return (int)len;
}

/* ---- capture ----------------------------------------------------------- */

/*
 * Copy at most N bytes at SRC into DST without risking a fault: the process
 * reads its own memory with process_vm_readv, which the kernel does page by
 * page and stops at the first page it cannot read, returning what it copied
 * (a string near the end of a mapping still comes whole). A bad pointer
 * fails with EFAULT, never a signal: the runtime owns no SIGSEGV handler,
 * and the program's own must not see ours. It costs a system call, paid
 * only by /s items: 2.5-2.8 us on the 2-core development VM, where a bare
 * getppid() takes 1.1 us (docs/PERFORMANCE.md). Measured against the
 * other fault-free copy, write() into a pipe and read() back: 2.6 us, two
 * calls, and a descriptor of ours the program could see and close. A
 * fault-catching copy would need a SIGSEGV handler the program did not
 * ask for; a check against a cached /proc/self/maps races with munmap.
 * Returns the bytes copied, 0 for a bad pointer, -1 when the kernel
 * refuses the call itself (ENOSYS, EPERM: seccomp).
 */
static ssize_t safe_copy(void *dst, uintptr_t src, size_t n)
{
	struct iovec local = {.iov_base = dst, .iov_len = n};
	struct iovec remote = {.iov_base = (void *)src, .iov_len = n};
	int e = errno;
	ssize_t r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	int err = errno;
	errno = e; /* the program's errno is not ours to change */
	if (r >= 0)
		return r;
	return err == EFAULT || err == ENOMEM || err == EINVAL ? 0 : -1;
}

/* A string item (its slot at P[1]) for the pointer PTR: its kind at P[0],
 * then its value. */
static uint8_t *put_string(uint8_t *p, uintptr_t ptr)
{
	uint8_t *kind = p;
	p += 2;
	if (!ptr) {
		*kind = FMT_ARG_str_null;
		return p;
	}
	/* one byte more than kept: tells a string of exactly the limit from a
	 * longer one */
	char tmp[FMT_ARG_STR_MAX + 1];
	ssize_t got = safe_copy(tmp, ptr, sizeof(tmp));
	if (got <= 0) {
		*kind = got == 0 ? FMT_ARG_str_bad : FMT_ARG_str_unread;
		memcpy(p, &ptr, 8);
		return p + 8;
	}
	const char *z = memchr(tmp, 0, (size_t)got);
	size_t len;
	if (z) {
		len = (size_t)(z - tmp);
		*kind = FMT_ARG_str;
	} else {
		/* no NUL in what could be read: cut (or the mapping ended
		 * without one) */
		len = (size_t)got < FMT_ARG_STR_MAX ? (size_t)got : FMT_ARG_STR_MAX;
		*kind = FMT_ARG_str_cut;
	}
	memcpy(p, tmp, len);
	p[len] = 0; /* CTF strings end with a NUL */
	return p + len + 1;
}

/* One item with the value BITS (integers) or at VEC (floating point):
 * its kind (argspec.c's, a string's by what was read), slot and value. */
static uint8_t *put_item(uint8_t *p, const struct arg_item *it, uint64_t bits, const void *vec)
{
	p[1] = it->slot;
	if (it->fmt == 's')
		return put_string(p, (uintptr_t)bits);
	p[0] = it->kind;
	p += 2;
	switch (it->fmt) {
	case 'f':
		memcpy(p, vec, it->size); /* the low bytes of the register */
		return p + it->size;
	case 'e': {
		uint32_t v = (uint32_t)bits;
		memcpy(p, &v, 4);
		p += 4;
		size_t n = strlen(it->enm);
		memcpy(p, it->enm, n + 1);
		return p + n + 1;
	}
	default:
		memcpy(p, &bits, it->size); /* little-endian: the low bytes */
		return p + it->size;
	}
}

size_t args_encode_entry(const struct arg_spec *spec, const struct dynftrace_regs *regs,
			 uint8_t *buf)
{
	uint8_t *p = buf;
	*p++ = spec->n; /* the count (format.h) */
	for (uint8_t i = 0; i < spec->n; i++) {
		const struct arg_item *it = &spec->it[i];
		unsigned n = (it->slot & ~FMT_SLOT_FP) - 1u;
		if (it->slot & FMT_SLOT_FP)
			p = put_item(p, it, 0, ARCH_REGS_FPARG(regs, n));
		else
			p = put_item(p, it, ARCH_REGS_INT_ARG(regs, n), NULL);
	}
	return (size_t)(p - buf);
}

size_t args_encode_values(const struct arg_spec *spec, const unsigned long *ints, unsigned nints,
			  uint8_t *buf)
{
	static const uint8_t zero[16];
	uint8_t *p = buf;
	*p++ = spec->n;
	for (uint8_t i = 0; i < spec->n; i++) {
		const struct arg_item *it = &spec->it[i];
		unsigned n = (it->slot & ~FMT_SLOT_FP) - 1u;
		if (it->slot & FMT_SLOT_FP)
			p = put_item(p, it, 0, zero); /* no floating-point argument */
		else
			p = put_item(p, it, n < nints ? ints[n] : 0, NULL);
	}
	return (size_t)(p - buf);
}

size_t args_encode_ret(const struct arg_spec *spec, const unsigned long *retval, int all,
		       uint8_t *buf)
{
	const struct arg_item *it = &spec->ret;
	buf[0] = 1; /* one value */
	uint8_t *p = put_item(buf + 1, it, ARCH_RET_INT(retval), ARCH_RET_FP(retval, all));
	return (size_t)(p - buf);
}
