/* SPDX-License-Identifier: MIT */
/*
 * got-cxx.cc - the unwinder's wrappers through GOT hooks. A C++ program
 * not linked with got-harness.so (argv[1]) loads it RTLD_LOCAL; threads
 * throw and catch in a loop while the hooks go in and out. The harness
 * depends on libc only, so dft_real finds _Unwind_RaiseException (libgcc_s)
 * and __cxa_begin_catch (libstdc++) through its global fallback, and the
 * throw's call of _Unwind_RaiseException is hooked in libstdc++'s GOT,
 * the catch's __cxa_begin_catch in the program's. Prints TAP.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static int tap_n, tap_fail;

static void check(bool cond, const char *what)
{
	printf("%sok %d - %s\n", cond ? "" : "not ", ++tap_n, what);
	fflush(stdout);
	tap_fail += !cond;
}

static int (*gh_install)(void), (*gh_remove)(void);
static unsigned long (*gh_count)(const char *);
static void *(*gh_real)(const char *);

static int stop, pause_req, paused;
static unsigned long caught;
#define NT 2

__attribute__((noinline)) static void thrower(int i)
{
	throw i;
}

static int throw_catch(int n)
{
	int got = 0;
	for (int i = 0; i < n; i++) {
		try {
			thrower(i);
		} catch (int v) {
			got += v == i;
		}
	}
	return got;
}

static void *worker(void *)
{
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(&pause_req, __ATOMIC_ACQUIRE)) {
			__atomic_fetch_add(&paused, 1, __ATOMIC_ACQ_REL);
			while (__atomic_load_n(&pause_req, __ATOMIC_ACQUIRE))
				usleep(200);
			__atomic_fetch_sub(&paused, 1, __ATOMIC_ACQ_REL);
			continue;
		}
		__atomic_fetch_add(&caught, (unsigned long)throw_catch(10), __ATOMIC_RELAXED);
	}
	return nullptr;
}

static void set_pause(int on)
{
	__atomic_store_n(&pause_req, on, __ATOMIC_RELEASE);
	while (__atomic_load_n(&paused, __ATOMIC_ACQUIRE) != (on ? NT : 0))
		usleep(200);
}

/* N throws from main, threads paused: what each wrapper counted. */
static bool counted(int n, unsigned long want)
{
	set_pause(1);
	unsigned long r0 = gh_count("_Unwind_RaiseException");
	unsigned long c0 = gh_count("__cxa_begin_catch");
	int got = throw_catch(n);
	unsigned long r = gh_count("_Unwind_RaiseException") - r0;
	unsigned long c = gh_count("__cxa_begin_catch") - c0;
	set_pause(0);
	if (got != n || r != want || c != want)
		printf("# %d of %d caught; counted %lu raises, %lu catches, %lu expected\n", got, n,
		       r, c, want);
	return got == n && r == want && c == want;
}

int main(int argc, char **argv)
{
	void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : nullptr;
	if (!h) {
		printf("not ok 1 - dlopen the harness: %s\n", dlerror());
		return 1;
	}
	*(void **)&gh_install = dlsym(h, "gh_install");
	*(void **)&gh_remove = dlsym(h, "gh_remove");
	*(void **)&gh_count = dlsym(h, "gh_count");
	*(void **)&gh_real = dlsym(h, "gh_real");
	void *raise = gh_real("_Unwind_RaiseException");
	void *begin = gh_real("__cxa_begin_catch");
	check(raise && raise == dlsym(RTLD_DEFAULT, "_Unwind_RaiseException") && begin &&
		  begin == dlsym(RTLD_DEFAULT, "__cxa_begin_catch"),
	      "dft_real finds the unwinder's functions outside its own dependencies");
	pthread_t th[NT];
	for (int i = 0; i < NT; i++)
		pthread_create(&th[i], nullptr, worker, nullptr);
	usleep(20000);
	check(gh_install() >= 2, "install while threads throw and catch");
	check(counted(25, 25), "25 throws count 25 raises and 25 catches");
	usleep(20000);
	check(gh_remove() >= 2, "remove while threads throw and catch");
	check(counted(25, 0), "after the remove they count nothing");
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < NT; i++)
		pthread_join(th[i], nullptr);
	printf("# %lu exceptions caught by the threads\n", caught);
	check(caught > 0, "the threads' exceptions were all caught");
	printf("1..%d\n", tap_n);
	return tap_fail != 0;
}
