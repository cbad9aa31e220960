/* SPDX-License-Identifier: MIT */
/*
 * got-prog.c - GOT hooks installed and removed while threads call through
 * the slots. Not linked with the runtime: it dlopens got-harness.so
 * (argv[1], lib/core/got.c with counting wrappers) with RTLD_LOCAL, as `dynftrace
 * attach` loads the runtime, and later got-lib.so (argv[2]). Prints TAP.
 *
 * tests/sh/got-hooks.sh builds it three ways: PLT calls with full RELRO
 * (-z now), PLT calls with lazy binding (-z lazy: sigpending is first
 * called after the install, its slot still holds the lazy stub), and
 * -fno-plt (GLOB_DAT slots; gcc for aarch64 keeps a slot's value for the
 * whole function, hence main's calls of wrapped names in functions of
 * their own, see open_lib).
 *
 * 1. dft_real, from a library loaded RTLD_LOCAL, finds what the program
 *    binds (libc's function, or the sanitizer's interceptor).
 * 2. Three threads call sigprocmask, pthread_sigmask, signal, dlopen and
 *    dlclose through the program's GOT in a loop; the hooks go in meanwhile.
 *    Every word of the program's writable segments that held one of those
 *    functions (its GOT slots, found without got.c) now holds the wrapper;
 *    with the threads paused, K calls from main count exactly K.
 * 3. got-lib.so, dlopened after the install, is hooked (its PLT and its
 *    GLOB_DAT slot, both in RELRO); dlclosed, then its slots' pages are
 *    mapped again holding the wrapper's address: the remove must not touch
 *    them.
 * 4. The remove, threads running: the program's slots hold their original
 *    values again, calls count nothing. Then install, dlopen, remove with
 *    the library loaded: its slots are restored too.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int tap_n, tap_fail;

static void check(int cond, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
	tap_fail += !cond;
}

static struct {
	int (*install)(void);
	int (*remove)(void);
	unsigned long (*count)(const char *);
	void *(*wrapper)(const char *);
	void *(*real)(const char *);
} gh;

/* The names the threads call, and the one main calls alone. */
static const char *const names[] = {"sigprocmask", "pthread_sigmask", "signal",
				    "sigaction",   "dlopen",	      "dlclose"};
#define NNAMES (int)(sizeof(names) / sizeof(names[0]))
#define NT     3
#define LIBC   "libc.so.6"

/* ---- the program's slots, found by value --------------------------------- */

struct range {
	uintptr_t lo[8], hi[8];
	int n;
};

static int ranges_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct range *r = data;
	(void)size;
	uintptr_t in = r->lo[0];
	int hit = 0;
	for (int k = 0; k < info->dlpi_phnum; k++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[k];
		uintptr_t lo = info->dlpi_addr + p->p_vaddr;
		if (p->p_type == PT_LOAD && in >= lo && in < lo + p->p_memsz)
			hit = 1;
	}
	if (!hit)
		return 0;
	r->n = 0;
	for (int k = 0; k < info->dlpi_phnum && r->n < 8; k++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[k];
		if (p->p_type == PT_LOAD && (p->p_flags & PF_W)) {
			r->lo[r->n] = info->dlpi_addr + p->p_vaddr;
			r->hi[r->n++] = info->dlpi_addr + p->p_vaddr + p->p_memsz;
		}
	}
	return 1;
}

/* The writable segments of the object holding AT. */
static struct range writable_of(const void *at)
{
	struct range r = {.lo = {(uintptr_t)at}};
	dl_iterate_phdr(ranges_cb, &r);
	return r;
}

#define MAXW 16
struct words {
	uintptr_t *a[MAXW];
	int n;
};

/* Every word of R holding V (the sanitizers' redzones between globals and
 * the other threads' counters are read too: no instrumentation). */
__attribute__((no_sanitize("address", "thread"))) static struct words
find_words(const struct range *r, uintptr_t v)
{
	struct words w = {.n = 0};
	for (int i = 0; i < r->n; i++)
		for (uintptr_t a = (r->lo[i] + 7) & ~(uintptr_t)7; a + 8 <= r->hi[i]; a += 8)
			if (__atomic_load_n((uintptr_t *)a, __ATOMIC_RELAXED) == v && w.n < MAXW)
				w.a[w.n++] = (uintptr_t *)a;
	return w;
}

static int all_hold(const struct words *w, uintptr_t v)
{
	for (int i = 0; i < w->n; i++)
		if (__atomic_load_n(w->a[i], __ATOMIC_RELAXED) != v)
			return 0;
	return w->n > 0;
}

/* ---- threads ------------------------------------------------------------- */

static int stop, pause_req, paused;
static unsigned long iters;

static void on_usr2(int sig)
{
	(void)sig;
}

/* One round of calls, in a function of its own: with -fno-plt a compiler
 * may load a GOT slot once before a loop (clang does) and call the old
 * target for as long as the loop runs. */
__attribute__((noinline)) static void round_of_calls(void)
{
	sigset_t s, old;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigprocmask(SIG_BLOCK, &s, &old);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	signal(SIGUSR2, on_usr2);
	void *h = dlopen(LIBC, RTLD_NOW | RTLD_NOLOAD);
	if (h)
		dlclose(h);
}

static void *worker(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(&pause_req, __ATOMIC_ACQUIRE)) {
			__atomic_fetch_add(&paused, 1, __ATOMIC_ACQ_REL);
			while (__atomic_load_n(&pause_req, __ATOMIC_ACQUIRE))
				usleep(200);
			__atomic_fetch_sub(&paused, 1, __ATOMIC_ACQ_REL);
			continue;
		}
		round_of_calls();
		__atomic_fetch_add(&iters, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void pause_all(void)
{
	__atomic_store_n(&pause_req, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&paused, __ATOMIC_ACQUIRE) != NT)
		usleep(200);
}

static void resume_all(void)
{
	__atomic_store_n(&pause_req, 0, __ATOMIC_RELEASE);
	while (__atomic_load_n(&paused, __ATOMIC_ACQUIRE))
		usleep(200);
}

static void wait_iters(unsigned long more)
{
	unsigned long t = __atomic_load_n(&iters, __ATOMIC_RELAXED) + more;
	while (__atomic_load_n(&iters, __ATOMIC_RELAXED) < t)
		usleep(500);
}

/*
 * main calls the wrapped names only through these functions. A compiler
 * may treat a GOT slot as constant within a function: gcc for aarch64
 * with -fno-plt loads the slot at the first call and keeps the value (a
 * callee-saved register, a stack slot) for every later call of the name
 * in that function. main's dlopen after the install would call what the
 * slot held at its first dlopen, before the install, and its sigpending
 * after the remove what the slot held before the remove. A call made in a
 * function of its own reads the slot when that function runs.
 */
__attribute__((noinline)) static void *open_lib(const char *path)
{
	return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

__attribute__((noinline)) static int close_lib(void *h)
{
	return dlclose(h);
}

__attribute__((noinline)) static int pending(sigset_t *s)
{
	return sigpending(s);
}

/* K calls of every name from main; the count each wrapper saw, in D. */
__attribute__((noinline)) static void calls(int k, unsigned long d[NNAMES])
{
	unsigned long c0[NNAMES];
	for (int i = 0; i < NNAMES; i++)
		c0[i] = gh.count(names[i]);
	sigset_t s, old;
	sigemptyset(&s);
	struct sigaction sa;
	for (int j = 0; j < k; j++) {
		sigprocmask(SIG_BLOCK, &s, &old);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		signal(SIGUSR2, on_usr2);
		sigaction(SIGUSR2, NULL, &sa);
		void *h = dlopen(LIBC, RTLD_NOW | RTLD_NOLOAD);
		if (h)
			dlclose(h);
	}
	for (int i = 0; i < NNAMES; i++)
		d[i] = gh.count(names[i]) - c0[i];
}

static int calls_count(int k, unsigned long want)
{
	unsigned long d[NNAMES];
	calls(k, d);
	int good = 1;
	for (int i = 0; i < NNAMES; i++)
		if (d[i] != want) {
			printf("# %s: %lu calls counted, %lu expected\n", names[i], d[i], want);
			good = 0;
		}
	return good;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s HARNESS.so LIB.so\n", argv[0]);
		return 2;
	}
	void *hh = open_lib(argv[1]);
	if (!hh) {
		printf("not ok 1 - dlopen %s: %s\n", argv[1], dlerror());
		return 1;
	}
	*(void **)&gh.install = dlsym(hh, "gh_install");
	*(void **)&gh.remove = dlsym(hh, "gh_remove");
	*(void **)&gh.count = dlsym(hh, "gh_count");
	*(void **)&gh.wrapper = dlsym(hh, "gh_wrapper");
	*(void **)&gh.real = dlsym(hh, "gh_real");
	if (!gh.install || !gh.remove || !gh.count || !gh.wrapper || !gh.real) {
		printf("not ok 1 - the harness's API\n");
		return 1;
	}

	/* 1. What the wrappers forward to. Kept on the stack: a copy in the
	 * program's data would look like a GOT slot. */
	uintptr_t real[NNAMES], wrap[NNAMES];
	int same = 1;
	for (int i = 0; i < NNAMES; i++) {
		real[i] = (uintptr_t)gh.real(names[i]);
		wrap[i] = (uintptr_t)gh.wrapper(names[i]);
		uintptr_t bound = (uintptr_t)dlsym(RTLD_DEFAULT, names[i]);
		if (!real[i] || real[i] != bound || real[i] == wrap[i]) {
			printf("# %s: dft_real %#lx, the program's %#lx\n", names[i],
			       (unsigned long)real[i], (unsigned long)bound);
			same = 0;
		}
	}
	Dl_info di;
	const char *san = getenv("SAN");
	int in_libc =
	    dladdr((void *)real[0], &di) && di.dli_fname && strstr(di.dli_fname, "libc.so");
	check(same && (in_libc || (san && *san)),
	      "dft_real from a library dlopened RTLD_LOCAL finds the program's binding (%s)",
	      di.dli_fname ? di.dli_fname : "?");

	/* 2. The program's slots: bind them (lazy builds), find them. */
	unsigned long d[NNAMES];
	calls(1, d);
	struct range exe = writable_of((void *)main);
	struct words slots[NNAMES];
	int nslots = 0, found = 1;
	for (int i = 0; i < NNAMES; i++) {
		slots[i] = find_words(&exe, real[i]);
		nslots += slots[i].n;
		found &= slots[i].n > 0;
	}
	check(found, "the program's GOT slots of the %d names: %d", NNAMES, nslots);

	pthread_t th[NT];
	for (int i = 0; i < NT; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	wait_iters(50);

	int r = gh.install();
	check(r >= nslots, "install while %d threads call through the slots: %d hooked", NT, r);
	int hooked = 1;
	for (int i = 0; i < NNAMES; i++)
		hooked &= all_hold(&slots[i], wrap[i]);
	check(hooked, "every slot holds its wrapper");
	unsigned long c0 = gh.count("sigprocmask");
	wait_iters(100);
	check(gh.count("sigprocmask") - c0 >= 100 && gh.count("dlopen") > 0 &&
		  gh.count("dlclose") > 0 && gh.count("signal") > 0 &&
		  gh.count("pthread_sigmask") > 0,
	      "the threads' calls reach the wrappers");
	pause_all();
	check(calls_count(7, 7), "threads paused: 7 calls of each name from main count 7");
	sigset_t ps;
	unsigned long p0 = gh.count("sigpending");
	check(pending(&ps) == 0 && gh.count("sigpending") - p0 == 1,
	      "sigpending, never called before the install, reaches its wrapper");
	resume_all();

	/* 3. A library loaded after the install. */
	void *lh = open_lib(argv[2]);
	int (*lib_calls)(int) = lh ? (int (*)(int))dlsym(lh, "got_lib_calls") : NULL;
	void *(*lib_addr)(void) = lh ? (void *(*)(void))dlsym(lh, "got_lib_sigprocmask") : NULL;
	if (!lib_calls || !lib_addr) {
		check(0, "dlopen %s: %s", argv[2], dlerror());
		return 1;
	}
	check((uintptr_t)lib_addr() == wrap[0], "a library dlopened after the install is hooked");
	struct range lr = writable_of((void *)lib_calls);
	struct words lslots = find_words(&lr, wrap[0]);
	pause_all();
	c0 = gh.count("sigprocmask");
	check(lib_calls(5) == 0 && gh.count("sigprocmask") - c0 == 10,
	      "its 10 PLT calls count 10 (%d slots hold the wrapper)", lslots.n);
	resume_all();
	close_lib(lh);
	/* Its slots' pages again, holding the wrapper: bait for a remove that
	 * would write into an object that is gone. */
	int baits = 0, taken = 0;
	long pg = sysconf(_SC_PAGESIZE);
	void *bait_page[MAXW];
	for (int i = 0; i < lslots.n; i++) {
		void *page = (void *)((uintptr_t)lslots.a[i] & ~(uintptr_t)(pg - 1));
		int have = 0;
		for (int b = 0; b < baits; b++)
			have |= bait_page[b] == page;
		if (!have) {
			void *m = mmap(page, (size_t)pg, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (m == page)
				bait_page[baits++] = page;
			else if (m != MAP_FAILED)
				munmap(m, (size_t)pg); /* an old kernel ignoring the flag */
			else
				continue; /* mapped again by something else */
		}
		*lslots.a[i] = wrap[0];
		taken++;
	}

	/* 4. Remove, threads running. */
	r = gh.remove();
	check(r >= nslots, "remove while the threads run: %d restored", r);
	int restored = 1;
	for (int i = 0; i < NNAMES; i++)
		restored &= all_hold(&slots[i], real[i]);
	check(restored, "every slot of the program holds its original value");
	int untouched = 1;
	for (int i = 0; i < lslots.n; i++) {
		void *page = (void *)((uintptr_t)lslots.a[i] & ~(uintptr_t)(pg - 1));
		for (int b = 0; b < baits; b++)
			if (bait_page[b] == page)
				untouched &= *lslots.a[i] == wrap[0];
	}
	if (taken)
		check(untouched, "the remove left the unloaded library's %d slots alone", taken);
	else
		printf("ok %d # SKIP the unloaded library's pages were taken again\n", ++tap_n);
	for (int b = 0; b < baits; b++)
		munmap(bait_page[b], (size_t)pg);
	pause_all();
	check(calls_count(7, 0), "threads paused: calls from main count nothing");
	p0 = gh.count("sigpending");
	check(pending(&ps) == 0 && gh.count("sigpending") == p0, "sigpending reaches libc again");
	resume_all();

	/* Again, with the library loaded at the remove. */
	r = gh.install();
	lh = open_lib(argv[2]);
	lib_addr = lh ? (void *(*)(void))dlsym(lh, "got_lib_sigprocmask") : NULL;
	int again = r >= nslots && lib_addr && (uintptr_t)lib_addr() == wrap[0];
	wait_iters(20);
	r = gh.remove();
	check(again && r > nslots && lib_addr && (uintptr_t)lib_addr() == real[0] &&
		  all_hold(&slots[0], real[0]),
	      "install, dlopen, remove: the library's slots are restored too (%d)", r);
	if (lh)
		close_lib(lh);

	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < NT; i++)
		pthread_join(th[i], NULL);
	printf("# %lu iterations of the threads\n", iters);
	printf("1..%d\n", tap_n);
	return tap_fail != 0;
}
