/* Loads and unloads static-dlopen/lib.so repeatedly while a thread runs the
 * program's own branch on prog_key; prints TAP. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <dynftrace/tracepoint.h>

DEFINE_STATIC_KEY_FALSE(prog_key);
DYNFTRACE_TRACEPOINT(prog_tp, TP_PROTO(int x), TP_ARGS(x))
static int failures, checks;
#define CHECK(c, ...)                                                                              \
	do {                                                                                       \
		checks++;                                                                          \
		if (!(c)) {                                                                        \
			failures++;                                                                \
			printf("# iteration %d: ", it);                                            \
			printf(__VA_ARGS__);                                                       \
			printf("\n");                                                              \
		}                                                                                  \
	} while (0)

static unsigned long tp_hits;
static void tp_cb(void *data, int x)
{
	*(unsigned long *)data += (unsigned long)x;
}

static volatile int stop;
static unsigned long spins, churn, churn_err;
static void *spinner(void *arg)
{
	(void)arg;
	while (!stop) {
		if (static_branch_unlikely(&prog_key))
			spins++;
		trace_prog_tp(1);
	}
	return NULL;
}
/* Callback changes (tracepoint lock, patching, grace periods) racing with
 * dlopen/dlclose (patch lock, constructors, destructors). */
static unsigned long churn_hits;
static void churn_cb(void *data, int x)
{
	__atomic_fetch_add((unsigned long *)data, (unsigned long)x, __ATOMIC_RELAXED);
}
static void *churner(void *arg)
{
	(void)arg;
	while (!stop) {
		churn_err += register_trace_prog_tp(churn_cb, &churn_hits) != 0;
		churn_err += unregister_trace_prog_tp(churn_cb, &churn_hits) != 0;
		churn++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "./lib.so";
	struct dynftrace_static_stats st0, st;
	pthread_t th, th2;
	int it = -1, n = 60;
	pthread_create(&th, NULL, spinner, NULL);
	pthread_create(&th2, NULL, churner, NULL);
	dynftrace_static_get_stats(&st0);
	printf("1..7\n");
	for (it = 0; it < n; it++) {
		int prog_on = it & 1;
		if (prog_on)
			static_branch_enable(&prog_key);
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		CHECK(h, "dlopen: %s", dlerror());
		if (!h)
			break;
		int (*lib_branch)(void) = (int (*)(void))dlsym(h, "lib_branch");
		int (*lib_prog_branch)(void) = (int (*)(void))dlsym(h, "lib_prog_branch");
		int (*lib_key_set)(int) = (int (*)(int))dlsym(h, "lib_key_set");
		int (*lib_callit)(int) = (int (*)(int))dlsym(h, "lib_callit");
		int (*lib_call_set)(int) = (int (*)(int))dlsym(h, "lib_call_set");
		void (*lib_trace)(int) = (void (*)(int))dlsym(h, "lib_trace");
		CHECK(lib_prog_branch() == prog_on,
		      "a new object's branch on an enabled key follows the key (%d)", prog_on);
		static_branch_enable(&prog_key);
		CHECK(lib_prog_branch() == 1, "program's key enabled: library branch true");
		static_branch_disable(&prog_key);
		if (prog_on)
			static_branch_disable(&prog_key);
		CHECK(lib_prog_branch() == 0, "program's key disabled: library branch false");
		CHECK(lib_branch() == 0, "library key starts false");
		CHECK(lib_key_set(1) == 0 && lib_branch() == 1, "library key enabled");
		CHECK(lib_callit(1) == 11, "static call: initial target");
		CHECK(lib_call_set(1) == 0 && lib_callit(1) == 21, "static call updated");
		struct dynftrace_tracepoint *tp = dynftrace_tracepoint_find("lib_tp");
		CHECK(tp != NULL, "the library's tracepoint is listed");
		if (tp) {
			tp_hits = 0;
			lib_trace(5);
			CHECK(dynftrace_tracepoint_register(tp, (void *)tp_cb, &tp_hits) == 0,
			      "register on the library's tracepoint");
			lib_trace(5);
			lib_trace(5);
			CHECK(dynftrace_tracepoint_unregister(tp, (void *)tp_cb, &tp_hits) == 0,
			      "unregister");
			lib_trace(5);
			CHECK(tp_hits == 10, "tracepoint delivered exactly twice (%lu)", tp_hits);
		}
		dynftrace_static_get_stats(&st);
		CHECK(st.jump_tables == st0.jump_tables + 1 && st.calls == st0.calls + 2 &&
			  st.tracepoints == st0.tracepoints + 1,
		      "library's tables registered");
		CHECK(dlclose(h) == 0, "dlclose");
		dynftrace_static_get_stats(&st);
		CHECK(st.jump_tables == st0.jump_tables && st.calls == st0.calls &&
			  st.tracepoints == st0.tracepoints && st.call_sites == st0.call_sites,
		      "library's tables unregistered at dlclose");
		CHECK(dynftrace_tracepoint_find("lib_tp") == NULL, "tracepoint gone");
	}
	stop = 1;
	pthread_join(th, NULL);
	pthread_join(th2, NULL);
	printf("%s 1 - %d dlopen/dlclose cycles\n", it == n ? "ok" : "not ok", n);
	printf("%s 2 - branches of new objects follow their keys (program's and own)\n",
	       failures ? "not ok" : "ok");
	printf("%s 3 - static calls and tracepoints inside the library work\n",
	       failures ? "not ok" : "ok");
	printf("%s 4 - tables unregistered at dlclose\n", failures ? "not ok" : "ok");
	printf("%s 5 - %d checks, %d failed\n", failures ? "not ok" : "ok", checks, failures);
	printf("ok 6 - a thread ran the program's branch meanwhile (%lu hits)\n", spins);
	printf("%s 7 - %lu callback register/unregister cycles raced with dlopen/dlclose, %lu "
	       "errors\n",
	       churn && !churn_err ? "ok" : "not ok", churn, churn_err);
	return failures != 0;
}
