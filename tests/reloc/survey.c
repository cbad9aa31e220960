/* SPDX-License-Identifier: MIT */
/*
 * survey.c - arch_reloc_entry over real code: reads "VALUE SIZE NAME" lines
 * (nm -D -S of OBJECT) and relocates each function of OBJECT, as loaded in
 * this process, to a made-up block address 64 MiB away, printing how many
 * were relocated and the refusals by reason. Then a few libc functions
 * (their implementations, IFUNCs resolved) relocated to a block in reach and
 * called there, against the function itself. TAP.
 *
 * Usage: survey OBJECT < nm-output
 */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arch.h"
#include "../unit/tap.h"

#define NREASON 24
static struct {
	char text[96];
	int n;
	char example[64];
} reason[NREASON];

/* The reason without its offsets and instruction names. */
static void count(const char *why, const char *name)
{
	char t[96];
	const char *w = why;
	const char *at = strstr(why, " at +");
	if (at && !strncmp(why, "a branch", 8))
		at = NULL;
	size_t o = 0;
	if (at) /* "MNEMONIC at +N ...": keep the mnemonic, drop the offset */
		for (const char *p = why; p < at && o + 1 < sizeof(t);)
			t[o++] = *p++;
	for (const char *p = at ? at : w; *p && o + 3 < sizeof(t);) {
		if (p[0] == '+' && p[1] >= '0' && p[1] <= '9') {
			t[o++] = '+', t[o++] = 'N', p++;
			while ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || *p == 'x')
				p++;
		} else {
			t[o++] = *p++;
		}
	}
	t[o] = 0;
	for (int i = 0; i < NREASON; i++) {
		if (!reason[i].text[0]) {
			snprintf(reason[i].text, sizeof(reason[i].text), "%s", t);
			snprintf(reason[i].example, sizeof(reason[i].example), "%.63s", name);
		}
		if (!strcmp(reason[i].text, t)) {
			reason[i].n++;
			return;
		}
	}
}

static uint8_t *blocks;
static size_t used;

/* FUNC's entry relocated into the block page: the block, or NULL. */
static void *moved(const char *name)
{
	void *f = dlsym(RTLD_DEFAULT, name);
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (!f || !dladdr1(f, &info, (void **)&sym, RTLD_DL_SYMENT))
		return NULL;
	/* an IFUNC's implementation has no dynamic symbol: size unknown */
	size_t fsize = sym && info.dli_saddr == f ? sym->st_size : 0;
	struct arch_reloc r;
	uint8_t *dst = blocks + used;
	int rc = arch_reloc_entry((uintptr_t)f, f, fsize ? fsize : arch_reloc_peek(), fsize,
				  (uintptr_t)dst, dst, 4096 - used, &r);
	if (rc) {
		diag("%s: %s", name, r.why);
		return NULL;
	}
	used += (r.len + 15u) & ~15u;
	return dst;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void run_moved(void)
{
	Dl_info info;
	dladdr((void *)strlen, &info);
	uintptr_t base = (uintptr_t)info.dli_fbase;
	for (uintptr_t d = 64u << 20; d < (1u << 30); d *= 2) {
		void *p = mmap((void *)(base - d), 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p != MAP_FAILED) {
			blocks = p;
			break;
		}
	}
	if (!blocks) {
		ok(1, "# SKIP no page in reach of libc");
		return;
	}
	size_t (*m_strlen)(const char *) = (size_t(*)(const char *))moved("strlen");
	int (*m_strcmp)(const char *, const char *) =
	    (int (*)(const char *, const char *))moved("strcmp");
	void *(*m_memchr)(const void *, int, size_t) =
	    (void *(*)(const void *, int, size_t))moved("memchr");
	long (*m_strtol)(const char *, char **, int) =
	    (long (*)(const char *, char **, int))moved("strtol");
	int (*m_snprintf)(char *, size_t, const char *, ...) =
	    (int (*)(char *, size_t, const char *, ...))moved("snprintf");
	void (*m_qsort)(void *, size_t, size_t, int (*)(const void *, const void *)) =
	    (void (*)(void *, size_t, size_t, int (*)(const void *, const void *)))moved("qsort");
	pid_t (*m_getpid)(void) = (pid_t(*)(void))moved("getpid");
	const char *text = "relocated entries run like the originals";
	char a[64], b[64];
	int x[] = {5, 3, 9, 1, 7}, y[] = {5, 3, 9, 1, 7};

	ok(m_strlen && m_strlen(text) == strlen(text), "strlen through its block");
	/* only the sign is defined (and a constant strcmp is folded) */
	ok(m_strcmp && m_strcmp(text, "relocated") > 0 && m_strcmp("abc", "abd") < 0 &&
	       m_strcmp(text, text) == 0,
	   "strcmp through its block");
	ok(m_memchr && m_memchr(text, 'u', 40) == memchr(text, 'u', 40),
	   "memchr through its block");
	ok(m_strtol && m_strtol("-12345", NULL, 10) == -12345, "strtol through its block");
	ok(m_snprintf &&
	       m_snprintf(a, sizeof(a), "%d %s %.2f", 42, "x", 1.5) ==
		   snprintf(b, sizeof(b), "%d %s %.2f", 42, "x", 1.5) &&
	       !strcmp(a, b),
	   "snprintf through its block: \"%s\"", m_snprintf ? a : "");
	if (m_qsort)
		m_qsort(x, 5, sizeof(int), cmp_int);
	qsort(y, 5, sizeof(int), cmp_int);
	ok(m_qsort && !memcmp(x, y, sizeof(x)), "qsort through its block");
	ok(m_getpid && m_getpid() == getpid(), "getpid through its block");
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return ok(0, "usage: survey OBJECT < nm -D -S output"), 1;
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		h = dlopen(argv[1], RTLD_NOW);
	struct link_map *lm = NULL;
	if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm) || !lm)
		return ok(0, "dlopen %s: %s", argv[1], dlerror()), 1;

	char line[512], type, name[256];
	unsigned long long value, size;
	int total = 0, done = 0, bad = 0;
	uint8_t out[256];
	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "%llx %llx %c %255s", &value, &size, &type, name) != 4 ||
		    (type != 'T' && type != 't' && type != 'i') || !size)
			continue;
		uintptr_t src = lm->l_addr + (uintptr_t)value;
		struct arch_reloc r;
		int rc = arch_reloc_entry(src, (const uint8_t *)src, (size_t)size, (size_t)size,
					  src + (64u << 20), out, sizeof(out), &r);
		total++;
		if (rc == 0) {
			done++;
			if (r.len > arch_reloc_max() || r.covered < 5 || r.unscanned)
				bad++;
		} else {
			if (!r.why[0])
				bad++;
			count(r.why, name);
		}
	}
	diag("%s: %d functions, %d relocated", argv[1], total, done);
	for (int i = 0; i < NREASON && reason[i].text[0]; i++)
		diag("refused %d: %s (e.g. %s)", reason[i].n, reason[i].text, reason[i].example);
	ok(total > 0 && bad == 0, "%d functions of %s: %d inconsistent answers", total, argv[1],
	   bad);
	ok(done > total / 2, "most relocated (%d of %d)", done, total);
	run_moved();
	return tap_failed != 0;
}
