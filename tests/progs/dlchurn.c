/* SPDX-License-Identifier: MIT */
/*
 * dlchurn.c - objects coming and going while filters change
 * (tests/sh/dlchurn.sh). Linked with the runtime.
 *
 *   dlchurn LIBPATH SECONDS [api]
 *
 * Three threads loop: dlopen LIBPATH, call plug_entry(100) (100 calls of
 * plug_leaf), check the exact result, dlclose. With "api", a fourth thread
 * registers its own ops and changes its filter and notrace sets through
 * the ops API as fast as it can, with the selections the control files get
 * in the shell half of the test (plug_*, plug_leaf, "", plug_entry, *).
 * Meanwhile the shell changes the tracer's filters through `ctl`.
 *
 * Prints "ok"/"not ok" lines; exits non-zero when tracing was stopped
 * (dynftrace_get_stats: killed) or a result was wrong.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dynftrace/dynftrace.h>

static const char *lib;
static double seconds;
static volatile int stop;
static unsigned long rounds[3], bad, api_changes, api_errors;
static char api_err[256];

__attribute__((noinline)) static unsigned long expect(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++)
		s += i * 3 + 1;
	return s;
}

static void *worker(void *arg)
{
	unsigned long *r = arg;
	unsigned long want = expect(100);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			__atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);
			break;
		}
		unsigned long (*f)(unsigned long) =
		    (unsigned long (*)(unsigned long))dlsym(h, "plug_entry");
		if (!f || f(100) != want)
			__atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);
		dlclose(h);
		(*r)++;
	}
	return NULL;
}

static unsigned long api_hits;
static void api_func(unsigned long ip, unsigned long parent, struct dynftrace_ops *op,
		     struct dynftrace_regs *regs)
{
	(void)ip, (void)parent, (void)op, (void)regs;
	__atomic_fetch_add(&api_hits, 1, __ATOMIC_RELAXED);
}

/* The same selections as the control half, on an ops of our own, with
 * registration and notrace changes in between. -ENOENT (the glob matched
 * nothing: the library was unloaded at that moment) is expected. */
static void *api_churn(void *arg)
{
	(void)arg;
	static struct dynftrace_ops ops = {.func = api_func};
	static const char *globs[] = {"plug_*", "plug_leaf", "", "plug_entry", "*"};
	unsigned long i = 0;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		const char *g = globs[i % 5];
		int e;
		switch (i % 7) {
		case 0:
			e = dynftrace_register_ops(&ops);
			if (e == -EBUSY)
				e = 0;
			break;
		case 3:
			e = dynftrace_set_notrace(&ops, i & 8 ? "plug_leaf" : "", 1);
			break;
		case 5:
			e = dynftrace_unregister_ops(&ops);
			if (e == -EINVAL)
				e = 0; /* not registered */
			break;
		default:
			e = dynftrace_set_filter(&ops, g, 1);
			break;
		}
		if (e && e != -ENOENT) {
			if (!api_errors++)
				snprintf(api_err, sizeof(api_err), "step %lu (%s): %s", i, g,
					 strerror(-e));
		}
		api_changes++;
		i++;
		/* Leave the loaders room: with patch_lock always taken, the
		 * three would rarely all have closed the library at once. */
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
	}
	dynftrace_unregister_ops(&ops);
	dynftrace_set_filter(&ops, NULL, 1);
	dynftrace_set_notrace(&ops, NULL, 1);
	return NULL;
}

static int subs_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(unsigned long long *)data = info->dlpi_subs;
	return 1;
}

static int count_wanted(const struct dynftrace_site_info *si, void *data)
{
	if (si->refcount > 0)
		++*(int *)data;
	return 0;
}

/* An ops whose whole filter was one unloaded library wants nothing, not
 * every function; loaded again, the library is selected again. */
static int unload_empties_filter(void)
{
	static struct dynftrace_ops ops = {.func = api_func};
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	int ok = h && !dynftrace_set_filter(&ops, "plug_leaf", 1) && !dynftrace_register_ops(&ops);
	int before = 0, gone = -1, again = -1;
	dynftrace_for_each_site_info(count_wanted, &before);
	if (h)
		dlclose(h);
	dynftrace_for_each_site_info(count_wanted, &gone);
	gone++;
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	dynftrace_for_each_site_info(count_wanted, &again);
	again++;
	ok = ok && before == 1 && gone == 0 && again == 1;
	printf("%s 0 - a filter of an unloaded library selects nothing (wanted: %d loaded, %d "
	       "unloaded, %d loaded again)\n",
	       ok ? "ok" : "not ok", before, gone, again);
	dynftrace_unregister_ops(&ops);
	dynftrace_set_filter(&ops, NULL, 1);
	if (h)
		dlclose(h);
	return ok;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: dlchurn LIBPATH SECONDS [api]\n");
		return 2;
	}
	lib = argv[1];
	seconds = atof(argv[2]);
	int api = argc > 3 && !strcmp(argv[3], "api");
	int first = unload_empties_filter();
	pthread_t t[4];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, worker, &rounds[i]);
	if (api)
		pthread_create(&t[3], NULL, api_churn, NULL);
	/* Ready: the shell starts its control writes. */
	printf("# ready %d\n", (int)getpid());
	fflush(stdout);
	struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	/* DLCHURN_UNTIL_EOF: then run on until standard input ends, so that the
	 * shell decides when enough control writes were made, however slow a
	 * loaded machine makes them. */
	if (getenv("DLCHURN_UNTIL_EOF")) {
		char c;
		while (read(0, &c, 1) > 0 || errno == EINTR)
			errno = 0;
	}
	/* From here on the shell ignores failed control writes: the endpoint
	 * closes at exit. */
	printf("# stopping\n");
	fflush(stdout);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 3 + api; i++)
		pthread_join(t[i], NULL);

	struct dynftrace_stats st;
	dynftrace_get_stats(&st);
	unsigned long total = rounds[0] + rounds[1] + rounds[2];
	unsigned long long unloads = 0;
	dl_iterate_phdr(subs_cb, &unloads);
	printf("%s 1 - %lu load/call/unload rounds (%llu objects unloaded), every result exact\n",
	       total && !bad && unloads >= 10 ? "ok" : "not ok", total, unloads);
	if (api)
		printf("%s 2 - %lu ops API changes, no error but ENOENT%s%s\n",
		       api_changes && !api_errors ? "ok" : "not ok", api_changes,
		       api_errors ? ": " : "", api_err);
	printf("%s %d - tracing still running%s%s\n", st.killed ? "not ok" : "ok", 2 + api,
	       st.killed ? ": " : "", st.killed ? st.kill_reason : "");
	return !first || bad || st.killed || (api && api_errors) ? 1 : 0;
}
