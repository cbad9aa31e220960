/* SPDX-License-Identifier: MIT */
/*
 * trace.c - the built-in tracers (function, function_graph, profile) and
 * recording into a session directory, configured by the environment that
 * `dynftrace record` sets (docs/FORMAT.md, docs/CLI.md):
 *
 *   DYNFTRACE_RECORD=DIR  DYNFTRACE_TRACER=function_graph|function|profile
 *   DYNFTRACE_FILTER=g,g  DYNFTRACE_NOTRACE=g,g  DYNFTRACE_DEPTH=N
 *   DYNFTRACE_TIME_FILTER=NS  DYNFTRACE_BUFFER_KB=N  DYNFTRACE_OVERWRITE=1
 *
 * function_graph hooks returns with a per-thread shadow stack: at entry the
 * callback saves the return address found at regs->sp and replaces it with
 * dft_return_tramp (tramp.S), which calls dft_graph_return(). Frames that
 * never return are detected by stack position:
 *   - longjmp/siglongjmp: an entry whose slot lies below the current stack
 *     pointer is dead; it is closed at the next entry or return;
 *   - C++ exceptions: the unwinder must see real return addresses, so
 *     _Unwind_RaiseException puts every original back; __cxa_begin_catch
 *     closes the frames that were unwound and re-hooks the survivors;
 *   - pthread_exit: every frame is closed and unhooked first;
 *   - exit() from a nested frame: the streams end with open entries, which
 *     readers close.
 * The shadow stack is the thread's own (mmap'd at its first traced call);
 * nothing else touches it, signal handlers of the same thread nest on it in
 * LIFO order.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dynftrace/dynftrace.h"
#include "internal.h"
#include "patch.h"
#include "regs.h"
#include "ring.h"
#include "sites.h"

extern const char dft_return_tramp[] HIDDEN;

enum tracer_kind { TR_NONE, TR_FUNCTION, TR_GRAPH, TR_PROFILE };

/* Configuration: written once by trace_init before the ops is registered. */
static struct {
	enum tracer_kind kind;
	char dir[4096];
	char img[64];
	unsigned max_depth;
	uint64_t time_filter;
	char *filter, *notrace; /* comma-separated globs */
	int graph_filter;       /* -F with function_graph: roots by id */
} cfg;

static struct dynftrace_ops trace_ops;
static int recording;

/* -F roots for function_graph, by site id; replaced under patch_lock,
 * read under RCU (callbacks). */
struct root_map {
	uint32_t n;
	uint8_t is_root[];
};
static struct root_map *roots;

/* ---- shadow stack ------------------------------------------------------- */

struct shadow_ent {
	uintptr_t *slot; /* where the return address lives */
	uintptr_t orig;  /* the real return address */
	uint64_t ts;     /* entry time */
	uint64_t child_ns; /* time spent in traced callees (profile) */
	uint32_t id;
	uint8_t root;    /* a -F root */
	uint8_t hooked;  /* *slot holds dft_return_tramp */
};

#define SHADOW_MAX 4096

struct fg_thread {
	uint32_t depth;
	uint32_t filter_depth; /* open -F roots */
	uint64_t overflow;     /* entries not traced for lack of room */
	struct prof_ent *prof; /* profile table, by site id */
	uint32_t prof_n;
	struct shadow_ent ent[SHADOW_MAX];
};

struct prof_ent {
	uint64_t calls, total, self;
	double sumsq;
};

static __thread struct fg_thread *fg_self __attribute__((tls_model("initial-exec")));

static struct fg_thread *fg_get(void)
{
	struct fg_thread *g = fg_self;
	if (likely(g))
		return g;
	g = mmap(NULL, sizeof(*g), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g == MAP_FAILED)
		return NULL;
	fg_self = g;
	return g;
}

/* ---- events ------------------------------------------------------------- */

static void emit_u32(unsigned id, uint32_t v, uint64_t *ts)
{
	uint8_t *p = ring_event_begin(id, 4, ts);
	if (p) {
		memcpy(p, &v, 4);
		ring_event_end(p);
	} else {
		*ts = 0;
	}
}

static void emit_exit(void)
{
	uint64_t ts;
	uint8_t *p = ring_event_begin(RING_EV_EXIT, 0, &ts);
	if (p)
		ring_event_end(p);
}

static void prof_account(struct fg_thread *g, const struct shadow_ent *e, uint64_t dur)
{
	if (!g->prof || e->id >= g->prof_n) {
		uint32_t n = site_next_id + 1024;
		struct prof_ent *np = mmap(NULL, n * sizeof(*np), PROT_READ | PROT_WRITE,
					   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (np == MAP_FAILED) {
			ring_count_lost(1);
			return;
		}
		if (g->prof) {
			memcpy(np, g->prof, g->prof_n * sizeof(*np));
			munmap(g->prof, g->prof_n * sizeof(*np));
		}
		g->prof = np;
		g->prof_n = n;
		if (e->id >= n)
			return;
	}
	struct prof_ent *p = &g->prof[e->id];
	uint64_t self = dur > e->child_ns ? dur - e->child_ns : 0;
	p->calls++;
	p->total += dur;
	p->self += self;
	p->sumsq += (double)dur * (double)dur;
}

/* Close the top frame at time NOW (returned, or found dead). */
static void frame_close(struct fg_thread *g, uint64_t now, int returned)
{
	struct shadow_ent *e = &g->ent[--g->depth];
	uint64_t dur = now > e->ts ? now - e->ts : 0;
	if (e->root)
		g->filter_depth--;
	if (!returned && e->hooked && *e->slot == (uintptr_t)dft_return_tramp)
		*e->slot = e->orig; /* still live somewhere? leave it returning right */
	switch (cfg.kind) {
	case TR_PROFILE:
		prof_account(g, e, dur);
		if (g->depth)
			g->ent[g->depth - 1].child_ns += dur;
		break;
	case TR_GRAPH:
		if (cfg.time_filter) {
			if (dur >= cfg.time_filter) {
				uint64_t ts;
				uint8_t *p = ring_event_begin(RING_EV_CALL, 12, &ts);
				if (p) {
					memcpy(p, &e->id, 4);
					memcpy(p + 4, &dur, 8);
					ring_event_end(p);
				}
			}
		} else {
			emit_exit();
		}
		break;
	default:
		break;
	}
}

/* Frames whose slot lies below LIMIT were left by longjmp: close them. */
static void close_dead(struct fg_thread *g, uintptr_t limit)
{
	if (likely(!g->depth || (uintptr_t)g->ent[g->depth - 1].slot >= limit))
		return;
	uint64_t now = ring_now();
	while (g->depth && (uintptr_t)g->ent[g->depth - 1].slot < limit)
		frame_close(g, now, 0);
}

static void graph_entry(unsigned long ip, unsigned long parent_ip, struct dynftrace_ops *ops,
			struct dynftrace_regs *regs)
{
	(void)parent_ip;
	(void)ops;
	uint32_t id = site_id_lookup(ip);
	if (unlikely(id == UINT32_MAX))
		return;
	struct fg_thread *g = fg_get();
	if (unlikely(!g)) {
		ring_count_lost(2);
		return;
	}
	uintptr_t *slot = (uintptr_t *)regs->sp;
	close_dead(g, (uintptr_t)slot + 1); /* a live caller's slot is above ours */
	if (cfg.max_depth && g->depth >= cfg.max_depth)
		return;
	uint8_t root = 0;
	if (cfg.graph_filter && g->filter_depth == 0) {
		const struct root_map *r = __atomic_load_n(&roots, __ATOMIC_ACQUIRE);
		if (!r || id >= r->n || !r->is_root[id])
			return;
		root = 1;
	}
	if (unlikely(g->depth == SHADOW_MAX)) {
		g->overflow++;
		ring_count_lost(2);
		return;
	}
	uint64_t ts;
	if (cfg.kind == TR_GRAPH && !cfg.time_filter) {
		emit_u32(RING_EV_ENTRY, id, &ts);
		if (!ts) {
			ring_count_lost(1); /* its exit */
			return;
		}
	} else {
		ts = ring_now();
	}
	struct shadow_ent *e = &g->ent[g->depth];
	e->slot = slot;
	e->orig = *slot;
	e->ts = ts;
	e->child_ns = 0;
	e->id = id;
	e->root = root;
	e->hooked = 1;
	g->filter_depth += root;
	*slot = (uintptr_t)dft_return_tramp;
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* a nested handler sees the push */
	g->depth++;
}

/* Called by dft_return_tramp; returns where the traced function returns. */
HIDDEN uintptr_t dft_graph_return(uintptr_t sp, const unsigned long *retval)
{
	(void)retval;
	struct fg_thread *g = fg_self;
	uintptr_t *slot = (uintptr_t *)(sp - sizeof(uintptr_t));
	/* Like dispatch, hold the recursion guard: a signal handler tracing
	 * meanwhile would push onto the entry being closed. */
	dft_self.recursion++;
	if (g)
		close_dead(g, (uintptr_t)slot);
	if (unlikely(!g || !g->depth || g->ent[g->depth - 1].slot != slot)) {
		/* We hooked this return but lost track of it: nothing sane to
		 * return to. Say why before dying. */
		dft_log("function_graph: return through %p has no shadow entry; aborting",
			(void *)slot);
		abort();
	}
	uintptr_t orig = g->ent[g->depth - 1].orig;
	frame_close(g, ring_now(), 1);
	dft_self.recursion--;
	return orig;
}

static void function_entry(unsigned long ip, unsigned long parent_ip, struct dynftrace_ops *ops,
			   struct dynftrace_regs *regs)
{
	(void)ops;
	(void)regs;
	uint32_t id = site_id_lookup(ip);
	if (unlikely(id == UINT32_MAX))
		return;
	uint64_t ts;
	uint8_t *p = ring_event_begin(RING_EV_FUNCTION, 12, &ts);
	if (p) {
		memcpy(p, &id, 4);
		uint64_t pip = parent_ip;
		memcpy(p + 4, &pip, 8);
		ring_event_end(p);
	}
}

/* ---- frames that leave without returning -------------------------------- */

/* Put every original return address back (an unwinder is about to walk). */
static void unhook_all(struct fg_thread *g)
{
	for (uint32_t i = 0; i < g->depth; i++) {
		struct shadow_ent *e = &g->ent[i];
		if (e->hooked && *e->slot == (uintptr_t)dft_return_tramp) {
			*e->slot = e->orig;
			e->hooked = 0;
		}
	}
}

typedef int (*unwind_raise_fn)(void *);

PUBLIC int _Unwind_RaiseException(void *exc)
{
	static unwind_raise_fn real;
	if (!real)
		real = (unwind_raise_fn)dft_real("_Unwind_RaiseException");
	struct fg_thread *g = fg_self;
	if (g) {
		dft_self.recursion++;
		unhook_all(g);
		dft_self.recursion--;
	}
	return real ? real(exc) : 5 /* _URC_END_OF_STACK */;
}

PUBLIC int _Unwind_Resume_or_Rethrow(void *exc)
{
	static unwind_raise_fn real;
	if (!real)
		real = (unwind_raise_fn)dft_real("_Unwind_Resume_or_Rethrow");
	struct fg_thread *g = fg_self;
	if (g) {
		dft_self.recursion++;
		unhook_all(g);
		dft_self.recursion--;
	}
	return real ? real(exc) : 5;
}

/* The catching frame called us: frames below it were unwound. */
PUBLIC __attribute__((noinline)) void *__cxa_begin_catch(void *exc)
{
	static void *(*real)(void *);
	if (!real)
		real = (void *(*)(void *))dft_real("__cxa_begin_catch");
	struct fg_thread *g = fg_self;
	if (g && g->depth) {
		dft_self.recursion++;
		uintptr_t caller_sp = (uintptr_t)__builtin_frame_address(0) + 2 * sizeof(void *);
		close_dead(g, caller_sp);
		for (uint32_t i = 0; i < g->depth; i++) {
			struct shadow_ent *e = &g->ent[i];
			if (!e->hooked && *e->slot == e->orig) {
				*e->slot = (uintptr_t)dft_return_tramp;
				e->hooked = 1;
			}
		}
		dft_self.recursion--;
	}
	return real ? real(exc) : NULL;
}

PUBLIC void pthread_exit(void *ret)
{
	static void (*real)(void *);
	if (!real)
		real = (void (*)(void *))dft_real("pthread_exit");
	struct fg_thread *g = fg_self;
	if (g) {
		dft_self.recursion++; /* for good: the thread is leaving */
		unhook_all(g);
		uint64_t now = ring_now();
		while (g->depth)
			frame_close(g, now, 0);
	}
	real(ret);
	__builtin_unreachable();
}

/* ---- files of the session ---------------------------------------------- */

static int append_line(const char *name, const char *line)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", cfg.dir, name);
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ssize_t w = write(fd, line, strlen(line));
	close(fd);
	return w < 0 ? -errno : 0;
}

/* Write the sites and maps of O (all objects when NULL). patch_lock held. */
static void write_sites(const struct dft_object *only)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/sites-%s.txt", cfg.dir, cfg.img);
	FILE *f = fopen(path, "ae");
	snprintf(path, sizeof(path), "%s/maps-%s.txt", cfg.dir, cfg.img);
	FILE *m = fopen(path, "ae");
	if (!f || !m) {
		dft_log("cannot write the site list to %s: %s", cfg.dir, strerror(errno));
		if (f)
			fclose(f);
		if (m)
			fclose(m);
		return;
	}
	for (size_t i = 0; i < obj_count; i++) {
		const struct dft_object *o = obj_tab[i];
		if ((only && o != only) || !o->nsites)
			continue;
		fprintf(m, "%lx %lx %lx %s\n", (unsigned long)o->lo, (unsigned long)o->hi,
			(unsigned long)o->bias, o->path);
	}
	for (size_t i = 0; i < site_count; i++) {
		const struct site *s = &site_tab[i];
		if (only && s->obj != only)
			continue;
		const char *n = site_func_name(s);
		if (n)
			fprintf(f, "%u %lx %lu %s %s\n", s->id, (unsigned long)s->addr,
				(unsigned long)site_func_size(s), n, s->obj->path);
		else
			fprintf(f, "%u %lx %lu 0x%lx %s\n", s->id, (unsigned long)s->addr,
				(unsigned long)site_func_size(s),
				(unsigned long)(s->addr - s->obj->bias), s->obj->path);
	}
	fclose(f);
	fclose(m);
}

/* -F roots for function_graph (patch_lock held). */
static void build_roots(void)
{
	uint32_t n = site_next_id;
	struct root_map *r = calloc(1, sizeof(*r) + n + 1);
	if (!r)
		return;
	r->n = n;
	char *globs = strdup(cfg.filter);
	if (globs) {
		for (char *save, *g = strtok_r(globs, ",", &save); g; g = strtok_r(NULL, ",", &save)) {
			for (size_t i = 0; i < site_count; i++) {
				const char *nm = site_func_name(&site_tab[i]);
				if (nm && site_tab[i].id < n && dft_glob_match(g, nm))
					r->is_root[site_tab[i].id] = 1;
			}
		}
		free(globs);
	}
	struct root_map *old = roots;
	__atomic_store_n(&roots, r, __ATOMIC_RELEASE);
	if (old) {
		rcu_synchronize();
		free(old);
	}
}

void trace_sites_added(struct dft_object *o)
{
	if (!recording)
		return;
	write_sites(o);
	if (cfg.graph_filter)
		build_roots();
}

/* ---- life cycle --------------------------------------------------------- */

static void write_profile(void);

HIDDEN void trace_thread_exit(void)
{
	struct fg_thread *g = fg_self;
	if (recording)
		ring_thread_exit();
	if (g && cfg.kind == TR_PROFILE)
		write_profile();
	if (g && !g->depth) {
		/* No hooked frame is left: the start routine has returned (or
		 * pthread_exit closed them all). */
		fg_self = NULL;
		if (g->prof)
			munmap(g->prof, g->prof_n * sizeof(*g->prof));
		munmap(g, sizeof(*g));
	}
}

static pthread_mutex_t prof_lock = PTHREAD_MUTEX_INITIALIZER;
static struct prof_ent *prof_all;
static uint32_t prof_all_n;

/* Merge this thread's profile into the process total. */
static void write_profile(void)
{
	struct fg_thread *g = fg_self;
	if (!g || !g->prof)
		return;
	pthread_mutex_lock(&prof_lock);
	if (g->prof_n > prof_all_n) {
		struct prof_ent *n = realloc(prof_all, g->prof_n * sizeof(*n));
		if (n) {
			memset(n + prof_all_n, 0, (g->prof_n - prof_all_n) * sizeof(*n));
			prof_all = n;
			prof_all_n = g->prof_n;
		}
	}
	for (uint32_t i = 0; i < g->prof_n && i < prof_all_n; i++) {
		prof_all[i].calls += g->prof[i].calls;
		prof_all[i].total += g->prof[i].total;
		prof_all[i].self += g->prof[i].self;
		prof_all[i].sumsq += g->prof[i].sumsq;
	}
	memset(g->prof, 0, g->prof_n * sizeof(*g->prof));
	pthread_mutex_unlock(&prof_lock);
}

static void dump_profile(void)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/profile-%s.txt", cfg.dir, cfg.img);
	FILE *f = fopen(path, "we");
	if (!f) {
		dft_log("cannot write %s: %s", path, strerror(errno));
		return;
	}
	pthread_mutex_lock(&prof_lock);
	for (uint32_t i = 0; i < prof_all_n; i++)
		if (prof_all[i].calls)
			fprintf(f, "%u %lu %lu %lu %.0f\n", i, (unsigned long)prof_all[i].calls,
				(unsigned long)prof_all[i].total, (unsigned long)prof_all[i].self,
				prof_all[i].sumsq);
	pthread_mutex_unlock(&prof_lock);
	fclose(f);
}

static void trace_shutdown(void)
{
	if (!recording)
		return;
	if (cfg.kind == TR_PROFILE) {
		write_profile();
		dump_profile();
	}
	ring_shutdown();
}

__attribute__((destructor)) static void trace_fini(void)
{
	trace_shutdown();
}

/* Pick this image's name: PID, or PID.K after the K-th exec in that pid. */
static int claim_img(void)
{
	char path[4200];
	pid_t pid = getpid();
	for (int k = 0; k < 1000; k++) {
		if (k)
			snprintf(cfg.img, sizeof(cfg.img), "%d.%d", (int)pid, k);
		else
			snprintf(cfg.img, sizeof(cfg.img), "%d", (int)pid);
		snprintf(path, sizeof(path), "%s/sites-%s.txt", cfg.dir, cfg.img);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

HIDDEN void trace_atfork_child(void)
{
	if (!recording)
		return;
	ring_atfork_child();
	struct fg_thread *g = fg_self;
	if (g && g->prof)
		memset(g->prof, 0, g->prof_n * sizeof(*g->prof));
	free(prof_all);
	prof_all = NULL;
	prof_all_n = 0;
	if (claim_img() == 0) {
		char line[128];
		snprintf(line, sizeof(line), "pid: %s\n", cfg.img);
		append_line("info", line);
		patch_lock();
		write_sites(NULL);
		patch_unlock();
	}
}

static int set_globs(int notrace, const char *list)
{
	char *copy = strdup(list);
	int err = 0, first = 1;
	if (!copy)
		return -ENOMEM;
	for (char *save, *g = strtok_r(copy, ",", &save); g && !err; g = strtok_r(NULL, ",", &save)) {
		err = notrace ? dynftrace_set_notrace(&trace_ops, g, first)
			      : dynftrace_set_filter(&trace_ops, g, first);
		if (err == -ENOENT) {
			dft_log("%s '%s' matches no function", notrace ? "notrace" : "filter", g);
			err = 0;
		} else if (err == 0) {
			first = 0;
		}
	}
	free(copy);
	return err;
}

/* Called by the constructor once sites are known. */
HIDDEN void trace_init(void)
{
	const char *dir = getenv("DYNFTRACE_RECORD");
	if (!dir || !*dir)
		return;
	const char *tr = getenv("DYNFTRACE_TRACER");
	if (!tr || !*tr || !strcmp(tr, "function_graph"))
		cfg.kind = TR_GRAPH;
	else if (!strcmp(tr, "function"))
		cfg.kind = TR_FUNCTION;
	else if (!strcmp(tr, "profile"))
		cfg.kind = TR_PROFILE;
	else if (!strcmp(tr, "nop"))
		cfg.kind = TR_NONE;
	else {
		dft_log("unknown tracer '%s' (function_graph, function, profile, nop): not recording",
			tr);
		return;
	}
	snprintf(cfg.dir, sizeof(cfg.dir), "%s", dir);
	const char *v;
	if ((v = getenv("DYNFTRACE_DEPTH")))
		cfg.max_depth = (unsigned)strtoul(v, NULL, 10);
	if ((v = getenv("DYNFTRACE_TIME_FILTER")))
		cfg.time_filter = strtoull(v, NULL, 10);
	cfg.filter = getenv("DYNFTRACE_FILTER");
	cfg.notrace = getenv("DYNFTRACE_NOTRACE");
	if (cfg.filter && !*cfg.filter)
		cfg.filter = NULL;
	if (cfg.notrace && !*cfg.notrace)
		cfg.notrace = NULL;
	cfg.graph_filter = cfg.filter && cfg.kind != TR_FUNCTION;

	int err = claim_img();
	if (err) {
		dft_log("cannot record into %s: %s", cfg.dir, strerror(-err));
		return;
	}
	size_t kb = 1024;
	if ((v = getenv("DYNFTRACE_BUFFER_KB")) && strtoul(v, NULL, 10) >= 8)
		kb = strtoul(v, NULL, 10);
	char ctf[4200], info[4200];
	snprintf(ctf, sizeof(ctf), "%s/ctf", cfg.dir);
	snprintf(info, sizeof(info), "%s/info", cfg.dir);
	mkdir(ctf, 0755);
	struct ring_config rc = {
		.ctf_dir = ctf,
		.info_path = info,
		.img = cfg.img,
		.page_size = kb >= 256 ? 65536 : 4096,
	};
	rc.pages = kb * 1024 / rc.page_size;
	if (rc.pages < 2)
		rc.pages = 2;
	v = getenv("DYNFTRACE_OVERWRITE");
	rc.overwrite = v && *v && strcmp(v, "0");
	err = ring_init(&rc);
	if (err) {
		dft_log("cannot record into %s: %s", ctf, strerror(-err));
		return;
	}
	char line[128];
	snprintf(line, sizeof(line), "pid: %s\n", cfg.img);
	append_line("info", line);
	recording = 1;
	patch_lock();
	write_sites(NULL);
	if (cfg.graph_filter)
		build_roots();
	patch_unlock();

	if (cfg.kind == TR_NONE)
		return;
	trace_ops.func = cfg.kind == TR_FUNCTION ? function_entry : graph_entry;
	if ((cfg.kind == TR_FUNCTION && cfg.filter && (err = set_globs(0, cfg.filter))) ||
	    (cfg.notrace && (err = set_globs(1, cfg.notrace)))) {
		dft_log("bad filter: %s", strerror(-err));
		return;
	}
	v = getenv("DYNFTRACE_DISABLED");
	if (v && *v && strcmp(v, "0"))
		return; /* live control turns it on later */
	err = dynftrace_register_ops(&trace_ops);
	if (err)
		dft_log("cannot start the %s tracer: %s", tr && *tr ? tr : "function_graph",
			strerror(-err));
}
