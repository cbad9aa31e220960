/* SPDX-License-Identifier: MIT */
/*
 * trace.c - the built-in tracers' session: recording into a session
 * directory, configured by the environment that
 * `dynftrace record` sets (docs/FORMAT.md, docs/CLI.md):
 *
 *   DYNFTRACE_RECORD=DIR  DYNFTRACE_TRACER=function_graph|function|profile
 *   DYNFTRACE_FILTER=g,g  DYNFTRACE_NOTRACE=g,g  DYNFTRACE_DEPTH=N
 *   DYNFTRACE_TIME_FILTER=NS  DYNFTRACE_BUFFER_KB=N  DYNFTRACE_OVERWRITE=1
 *
 * The tracers' callbacks are in function.c and graph.c (the shadow stack,
 * hooked returns, frames that leave without returning), the profile's
 * tables in profile.c; this file starts, switches and stops them and
 * writes the session's files.
 *
 * Live control (the section at the end and trace.h): the control
 * thread switches the tracer, the filters and the graph settings of the
 * running process. The tracer kind, max depth, time threshold and graph
 * root map are then read by callbacks with atomic loads; each shadow entry
 * remembers the kind and whether its entry went to the ring, so a frame
 * opened before a switch closes consistently.
 *
 * Every event goes to one place, the thread's ring (ring.c): under
 * `record` the consumer writes it to the session, and live control's
 * `trace` and `trace_pipe` read it there (ring_read.c). Without a session
 * directory the ring exists once control starts (trace_ctl_start), in
 * memory only, keeping the newest events.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <inttypes.h>
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
#include "arch.h"
#include "got.h"
#include "hooks.h"
#include "ring.h"
#include "sites.h"
#include "sbuf.h"
#include "trace.h"
#include "trace_int.h"
#include "func_names.h"
#include "tp_record.h"
#include "trigger.h"
#include "args.h"

static struct dynftrace_ops trace_ops;
/* Sites of function_graph/profile take the graph shortcut (ops.c,
 * tramp.S); written by trace_init only. */
static int graph_shortcut = 1;

/* ---- files of the session ---------------------------------------------- */

static int append_line(const char *name, const char *line)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", trace_cfg.dir, name);
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ssize_t w = write(fd, line, strlen(line));
	close(fd);
	return w < 0 ? -errno : 0;
}

/* The entries patched by relocation (-P) and those refused, with why:
 * patch-IMG.txt, tab-separated lines `patched N REFUSED OBJECT` and
 * `refused FUNCTION OBJECT WHY`, for `dynftrace info`. */
static void write_patched(const struct dft_object *only)
{
	FILE *f = NULL;
	for (size_t i = 0; i < obj_count; i++) {
		const struct dft_object *o = obj_tab[i];
		if ((only && o != only) || (!o->nreloc && !o->nreloc_refused))
			continue;
		if (!f) {
			char path[4200];
			snprintf(path, sizeof(path), "%s/patch-%s.txt", trace_cfg.dir,
				 trace_cfg.img);
			if (!(f = fopen(path, "ae")))
				return;
		}
		fprintf(f, "patched\t%zu\t%zu\t%s\n", o->nreloc, o->nreloc_refused, o->path);
		for (size_t k = 0; k < o->nrefusals; k++) {
			const struct entry_refusal *r = &o->refusals[k];
			fprintf(f, "refused\t%s\t%s\t%s\n",
				elf_entry_name(&o->img, &o->img.entries[r->entry]), o->path,
				r->why);
		}
	}
	if (f)
		fclose(f);
}

/* Write the sites and maps of O (all objects when NULL). patch_lock held. */
static void write_sites(const struct dft_object *only)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/sites-%s.txt", trace_cfg.dir, trace_cfg.img);
	FILE *f = fopen(path, "ae");
	snprintf(path, sizeof(path), "%s/maps-%s.txt", trace_cfg.dir, trace_cfg.img);
	FILE *m = fopen(path, "ae");
	if (!f || !m) {
		dft_log("cannot write the site list to %s: %s", trace_cfg.dir, strerror(errno));
		if (f)
			fclose(f);
		if (m)
			fclose(m);
		return;
	}
	for (size_t i = 0; i < obj_count; i++) {
		const struct dft_object *o = obj_tab[i];
		if ((only && o != only) || !object_has_sites(o))
			continue;
		fprintf(m, "%lx %lx %lx %s\n", (unsigned long)o->lo, (unsigned long)o->hi,
			(unsigned long)o->bias, o->path);
	}
	write_patched(only);
	for (size_t i = 0; i < site_count; i++) {
		const struct site *s = &site_tab[i];
		if (only && s->obj != only)
			continue;
		const char *n = site_func_name(s);
		if (n)
			fprintf(f, "%u %lx %lu %s %s\n", s->id, (unsigned long)s->addr,
				(unsigned long)site_func_size(s), n, s->obj->path);
		else
			fprintf(f, "%u %lx %lu sub_%lx %s\n", s->id, (unsigned long)s->addr,
				(unsigned long)site_func_size(s), (unsigned long)site_func_start(s),
				s->obj->path);
	}
	fclose(f);
	fclose(m);
}

/*
 * The function lists of live control (trace.h), as globs in the order they
 * were given ("!glob" removes). Written by the control thread holding
 * tctl_lock and patch_lock; read holding either (build_roots runs under
 * patch_lock, also from dlopen).
 */
struct glob_list {
	char **v;
	size_t n;
};
static struct glob_list lists[TL_COUNT];

/* Does the list select site S? Later globs win ("a*" then "!ab" drops ab). */
static int list_selects(const struct glob_list *l, const struct site *s)
{
	int sel = 0;
	const char *name = site_func_name(s);
	for (size_t i = 0; i < l->n; i++) {
		const char *g = l->v[i];
		int neg = g[0] == '!';
		if (dft_glob_match_in(neg ? g + 1 : g, name, s->obj->path))
			sel = !neg;
	}
	return sel;
}

/* Graph roots and graph_notrace functions by site id (patch_lock held). */
static void build_roots(void)
{
	const struct glob_list *rl = &lists[TL_GRAPH_FUNCTION], *nl = &lists[TL_GRAPH_NOTRACE];
	struct root_map *r = NULL;
	/* the filter and notrace triggers are -F and -N (trigger.h) */
	int tf = trig_has(TRIG_FILTER), tn = trig_has(TRIG_NOTRACE);
	if (rl->n || nl->n || tf || tn) {
		uint32_t n = site_next_id;
		r = calloc(1, sizeof(*r) + n + 1);
		if (!r)
			return;
		r->n = n;
		r->has_roots = rl->n != 0 || tf;
		for (size_t i = 0; i < site_count; i++) {
			const char *nm = site_func_name(&site_tab[i]);
			uint32_t id = site_tab[i].id;
			if (!nm || id >= n)
				continue;
			uint16_t tfl = tf || tn ? trig_of(&site_tab[i]).flags : 0;
			if ((rl->n && list_selects(rl, &site_tab[i])) || (tfl & TRIG_FILTER))
				r->flags[id] |= ROOT_FL_ROOT;
			if ((nl->n && list_selects(nl, &site_tab[i])) || (tfl & TRIG_NOTRACE)) {
				r->flags[id] |= ROOT_FL_NOTRACE;
				r->has_notrace = 1;
			}
		}
	}
	struct root_map *old = trace_roots;
	__atomic_store_n(&trace_roots, r, __ATOMIC_RELEASE);
	trace_fast_update();
	if (old) {
		rcu_synchronize();
		free(old);
	}
}

static void trace_sites_added(struct dft_object *o)
{
	if (trace_rec_on)
		write_sites(o);
	trig_rebuild();
	if (args_any())
		args_rebuild();
	if (lists[TL_GRAPH_FUNCTION].n || lists[TL_GRAPH_NOTRACE].n || trig_has(TRIG_FILTER) ||
	    trig_has(TRIG_NOTRACE))
		build_roots();
}

/* ops.c's route question: sites with a run-time trigger or with arguments
 * to read leave the graph shortcut (patch_lock held). */
static int graph_generic_site(const struct site *s)
{
	return trig_site_generic(s) || args_site_generic(s);
}

/* Live control's set_ftrace_args: replace the argument specifications
 * and move the sites whose route changes. 0, -EINVAL (WHY), -ENOMEM. */
HIDDEN int trace_set_args(const char *spec, char *why, size_t whylen)
{
	patch_lock();
	int err = __args_set_spec(spec, why, whylen);
	if (!err)
		err = __ops_graph_generic_changed();
	patch_unlock();
	return err;
}

void trace_read_args(struct sbuf *out)
{
	patch_lock();
	int n = __args_spec_text(NULL, 0);
	char *buf = malloc((size_t)n + 1);
	if (buf) {
		__args_spec_text(buf, (size_t)n + 1);
		sb_put(out, buf, (size_t)n);
		free(buf);
	}
	patch_unlock();
}

/* ---- life cycle --------------------------------------------------------- */

static void trace_thread_exit(void)
{
	struct fg_thread *g = fg_self;
	ring_thread_exit();
	if (g && g->prof)
		profile_thread_merge();
	if (g && !g->depth) {
		/* No hooked frame is left: the start routine has returned (or
		 * pthread_exit closed them all). */
		profile_thread_gone(g);
		fg_self = NULL;
		ctx_free(g);
		fg_free(g);
	}
}

static void trace_shutdown(void)
{
	if (!trace_rec_on)
		return;
	if (READ_ONCE(trace_cfg.kind) == TR_PROFILE) {
		profile_thread_merge();
		profile_dump();
	}
	ring_shutdown();
}

extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);

static void trace_exit_late(void *unused)
{
	(void)unused;
	dft_own_enter();
	trace_shutdown();
	dft_own_leave();
}

/*
 * The recording ends after every other object's destructor. Preloaded, the
 * runtime comes second in the loader's order of destructors (after the
 * program's own): ending the recording here left the destructors of every
 * library untraced, and their calls counted nowhere. A handler registered
 * while the C library runs the exit handlers (the loader's destructor pass
 * is the last of them) runs after that pass, so the end is deferred to
 * one: without a DSO handle, as the runtime's own __cxa_finalize, later in
 * this pass, would run one registered by atexit(). Only for a runtime
 * loaded with the program, which the loader never unloads: the destructor
 * of one loaded by dlopen may be its dlclose's, and the handler would then
 * point into unmapped code (a detach has also ended the recording before:
 * ring_recording() is 0). Else, or if the handler cannot be registered,
 * the recording ends here.
 */
__attribute__((destructor)) static void trace_fini(void)
{
	dft_own_enter();
	if (!trace_rec_on || !ring_recording() || !dft_loaded_at_start() ||
	    __cxa_atexit(trace_exit_late, NULL, NULL) != 0)
		trace_shutdown();
	dft_own_leave();
}

/* The ring configuration, kept to restart recording if an exec fails. */
static struct ring_config exec_rc;
static char exec_ctf[4200], exec_info[4200];

/* An exec wrapper's call (interpose.c) of a function the program traces
 * (-P execve@libc*): what trace_graph_call_entry returned, for its exit
 * after a failed exec. The calling thread's own. */
static __thread int exec_owed __attribute__((tls_model("initial-exec")));

/* The entry of CALL, as its site would have written it: the recording
 * ends before the call reaches the site, which then writes nothing. */
static void exec_call_entry(const struct core_exec_call *call)
{
	exec_owed = 0;
	uint32_t id = site_id_lookup(call->fn);
	if (id == UINT32_MAX)
		return;
	if (dft_self.state == THREAD_NEW)
		rcu_register_self(); /* as a first callback would: the filter is read */
	rcu_read_lock();
	if (ops_wants_site(&trace_ops, call->fn)) {
		enum tracer_kind kind = READ_ONCE(trace_cfg.kind);
		if (kind == TR_FUNCTION)
			trace_function_write(id, call->fn, call->parent);
		else if (kind == TR_GRAPH)
			exec_owed = trace_graph_call_entry(id, call->args, ARRAY_SIZE(call->args));
	}
	rcu_read_unlock();
}

/* exec replaces the image: flush what this one recorded (interpose.c),
 * the exec call's own entry last. A vfork child's exec replaces the child
 * only: the recording it shares is its parent's, which goes on (ending it
 * there stopped the parent's for good, and its events after were counted
 * nowhere). */
HIDDEN void trace_before_exec(const struct core_exec_call *call)
{
	if (trace_rec_on && !ring_vfork_child()) {
		exec_call_entry(call);
		ring_shutdown();
	}
}

/* The image stays: the recording resumes in the same streams, and the
 * exec call's return follows its entry there. */
HIDDEN void trace_exec_failed(const struct core_exec_call *call, long ret)
{
	if (!trace_rec_on || ring_vfork_child())
		return;
	exec_rc.resume = 1;
	if (ring_init(&exec_rc) != 0) {
		dft_log("trace_rec_on stopped: cannot restart it after a failed exec");
		return;
	}
	if (exec_owed) {
		rcu_read_lock();
		trace_graph_call_exit(site_id_lookup(call->fn), exec_owed, ret);
		rcu_read_unlock();
		exec_owed = 0;
	}
}

/* Pick this image's name: PID, or PID.K after the K-th exec in that pid. */
static int claim_img(void)
{
	char path[4200];
	pid_t pid = getpid();
	for (int k = 0; k < 1000; k++) {
		if (k)
			snprintf(trace_cfg.img, sizeof(trace_cfg.img), "%d.%d", (int)pid, k);
		else
			snprintf(trace_cfg.img, sizeof(trace_cfg.img), "%d", (int)pid);
		snprintf(path, sizeof(path), "%s/sites-%s.txt", trace_cfg.dir, trace_cfg.img);
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

/*
 * A fork child continues the forking thread's open frames: their entries
 * are in the parent's stream, their returns will be in the child's. The
 * reader needs them to nest the child's calls and close them, so the child
 * writes fork-IMG.txt (docs/FORMAT.md): the parent's pid, the fork's time,
 * and each open frame whose entry was recorded, outermost first, with its
 * site id and entry time. Runs in the child before it writes an event.
 */
static void write_fork_frames(void)
{
	struct fg_thread *g = fg_self;
	char path[4200], line[96];
	if (!g || !g->depth)
		return;
	snprintf(path, sizeof(path), "%s/fork-%s.txt", trace_cfg.dir, trace_cfg.img);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return; /* the child's returns are then orphans, as before */
	int n = snprintf(line, sizeof(line), "parent: %d\ntime: %" PRIu64 "\n", (int)getppid(),
			 ring_now());
	int bad = write(fd, line, (size_t)n) != n;
	for (uint32_t i = 0; i < g->depth && i < SHADOW_MAX && !bad; i++) {
		const struct shadow_ent *e = &g->ent[i];
		if (!(e->fl & SE_RING))
			continue;
		n = snprintf(line, sizeof(line), "frame: %" PRIu32 " %" PRIu64 "\n", e->id, e->ts);
		bad = write(fd, line, (size_t)n) != n;
	}
	close(fd);
	if (bad)
		unlink(path); /* all or nothing: a partial stack would nest wrongly */
}

HIDDEN void trace_atfork_child(void)
{
	profile_atfork_child(fg_self);
	ring_atfork_child(); /* always: ring_atfork_prepare ran */
	if (!trace_rec_on)
		return;
	if (claim_img() == 0) {
		ring_set_img(trace_cfg.img);
		char line[128];
		snprintf(line, sizeof(line), "pid: %s\n", trace_cfg.img);
		append_line("info", line);
		patch_lock();
		write_sites(NULL);
		patch_unlock();
		write_fork_frames();
		tp_record_atfork_child(); /* tp_record.c */
	}
}

/* Live control state (see the last section). */
static int tracing_on = 1; /* tctl_lock (trace_init before) */
static int ops_on;	   /* trace_ops is registered: tctl_lock (trace_init before) */
static int list_parse(const char *text, const char *seps, struct glob_list *out);

/* A glob that matches nothing now (-ENOENT) is kept: an object loaded
 * later may match it. The recorder says at the end of the run which
 * patterns matched no function at all (cmd_record.c). */
static int set_globs(int notrace, const char *list)
{
	char *copy = strdup(list);
	int err = 0, first = 1;
	if (!copy)
		return -ENOMEM;
	for (char *save, *g = strtok_r(copy, ",", &save); g && !err;
	     g = strtok_r(NULL, ",", &save)) {
		err = notrace ? dynftrace_set_notrace(&trace_ops, g, first)
			      : dynftrace_set_filter(&trace_ops, g, first);
		if (err == -ENOENT)
			err = 0;
		else if (err == 0)
			first = 0;
	}
	free(copy);
	return err;
}

/* The whole of the file PATH (a specification list), NUL-terminated, in
 * *OUT: 0, or -errno (-EFBIG beyond 64 MiB). */
static int read_spec_file(const char *path, char **out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	int err = buf ? 0 : -ENOMEM;
	while (!err) {
		if (len + 1 == cap) {
			char *nb = cap >= (64u << 20) ? NULL : realloc(buf, cap * 2);
			if (!nb) {
				err = cap >= (64u << 20) ? -EFBIG : -ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = -errno;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	buf[len] = 0;
	*out = buf;
	return 0;
}

/* Called by the constructor once sites are known. */
HIDDEN void trace_init(void)
{
	/* Before anything can register an ops or a thread can need us. */
	static const struct core_hooks hooks = {
	    .object_added = trace_sites_added,
	    .thread_exit = trace_thread_exit,
	    .graph_enter = trace_graph_enter,
	    .fatal_flush = ring_emergency_flush,
	    .fatal_unhook = trace_fatal_unhook,
	    .before_exec = trace_before_exec,
	    .exec_failed = trace_exec_failed,
	};
	core_hooks_set(&hooks);
	/* sites with a trigger or arguments leave the graph shortcut (ops.c
	 * asks); live control may give arguments at any time */
	ops_set_graph_generic(graph_generic_site);
	trace_record_start();
}

/* Start recording as the settings say (DYNFTRACE_RECORD and friends): at
 * start-up, or when an attach passes its settings. Once per process. */
HIDDEN void trace_record_start(void)
{
	const char *dir = dft_getenv("DYNFTRACE_RECORD");
	if (!dir || !*dir) {
		/* Live control only. DYNFTRACE_DISABLED (an attach): tracing_on
		 * is 0, so a tracer chosen with ctl waits, with the filters set
		 * meanwhile, for tracing_on 1 instead of tracing every function
		 * at once. */
		const char *off = dft_getenv("DYNFTRACE_DISABLED");
		if (off && *off && strcmp(off, "0"))
			tracing_on = 0;
		return;
	}
	const char *tr = dft_getenv("DYNFTRACE_TRACER");
	if (!tr || !*tr || !strcmp(tr, "function_graph"))
		trace_cfg.kind = TR_GRAPH;
	else if (!strcmp(tr, "function"))
		trace_cfg.kind = TR_FUNCTION;
	else if (!strcmp(tr, "profile"))
		trace_cfg.kind = TR_PROFILE;
	else if (!strcmp(tr, "nop"))
		trace_cfg.kind = TR_NONE;
	else {
		dft_log("unknown tracer '%s' (function_graph, function, profile, nop): not "
			"trace_rec_on",
			tr);
		return;
	}
	snprintf(trace_cfg.dir, sizeof(trace_cfg.dir), "%s", dir);
	const char *v;
	if ((v = dft_getenv("DYNFTRACE_DEPTH")))
		trace_cfg.max_depth = (unsigned)strtoul(v, NULL, 10);
	if ((v = dft_getenv("DYNFTRACE_TIME_FILTER")))
		trace_cfg.time_filter = strtoull(v, NULL, 10);
	trace_fast_update();
	if ((v = dft_getenv("DYNFTRACE_TRIGGER")) && *v) {
		char why[300];
		int terr = trig_init(v, why, sizeof(why));
		if (terr) {
			dft_log("bad trigger: %s; not recording",
				terr == -ENOMEM ? "out of memory" : why);
			return;
		}
	}
	if ((v = dft_getenv("DYNFTRACE_ARGS")) && *v) {
		char why[300], *text = NULL;
		int aerr = 0;
		/* "@FILE": a list too long for the environment (--auto-args) */
		if (*v == '@' && (aerr = read_spec_file(v + 1, &text)) < 0)
			snprintf(why, sizeof(why), "cannot read %s: %s", v + 1, strerror(-aerr));
		if (!aerr) {
			patch_lock();
			aerr = __args_set_spec(text ? text : v, why, sizeof(why));
			patch_unlock();
		}
		free(text);
		if (aerr) {
			dft_log("bad argument specification: %s; not recording",
				aerr == -ENOMEM ? "out of memory" : why);
			return;
		}
	}
	trace_cfg.filter = dft_getenv("DYNFTRACE_FILTER");
	trace_cfg.notrace = dft_getenv("DYNFTRACE_NOTRACE");
	if (trace_cfg.filter && !*trace_cfg.filter)
		trace_cfg.filter = NULL;
	if (trace_cfg.notrace && !*trace_cfg.notrace)
		trace_cfg.notrace = NULL;

	int err = claim_img();
	if (err) {
		dft_log("cannot record into %s: %s", trace_cfg.dir, strerror(-err));
		return;
	}
	size_t kb = 0; /* the ring's default (RING_DEFAULT_PAGES x RING_DEFAULT_PAGE_SIZE) */
	if ((v = dft_getenv("DYNFTRACE_BUFFER_KB")) && strtoul(v, NULL, 10) >= 8)
		kb = strtoul(v, NULL, 10);
	char ctf[4200], info[4200];
	snprintf(ctf, sizeof(ctf), "%s/ctf", trace_cfg.dir);
	snprintf(info, sizeof(info), "%s/info", trace_cfg.dir);
	mkdir(ctf, 0755);
	struct ring_config rc = {
	    .ctf_dir = ctf,
	    .info_path = info,
	    .img = trace_cfg.img,
	};
	ring_config_size(&rc, kb);
	v = dft_getenv("DYNFTRACE_OVERWRITE");
	rc.overwrite = v && *v && strcmp(v, "0");
	exec_rc = rc;
	snprintf(exec_ctf, sizeof(exec_ctf), "%s", ctf);
	snprintf(exec_info, sizeof(exec_info), "%s", info);
	exec_rc.ctf_dir = exec_ctf;
	exec_rc.info_path = exec_info;
	exec_rc.img = trace_cfg.img;
	__atomic_store_n(&ring_fatal_hook, profile_fatal_dump, __ATOMIC_RELEASE);
	err = ring_init(&rc);
	if (err) {
		dft_log("cannot record into %s: %s", ctf, strerror(-err));
		return;
	}
	char line[128];
	snprintf(line, sizeof(line), "pid: %s\n", trace_cfg.img);
	append_line("info", line);
	trace_rec_on = 1;
	trace_ring_made = 1;
	trace_ring_set(1);
	patch_lock();
	write_sites(NULL);
	/* The state live control starts from (-F with function_graph or
	 * profile: graph roots; with function: the filter). */
	if (trace_cfg.filter)
		list_parse(trace_cfg.filter, ",",
			   &lists[trace_cfg.kind == TR_FUNCTION ? TL_FILTER : TL_GRAPH_FUNCTION]);
	if (trace_cfg.notrace)
		list_parse(trace_cfg.notrace, ",", &lists[TL_NOTRACE]);
	trig_rebuild();
	if (lists[TL_GRAPH_FUNCTION].n || trig_has(TRIG_FILTER) || trig_has(TRIG_NOTRACE))
		build_roots();
	patch_unlock();
	tp_record_init(); /* -e GLOB: tracepoints (tp_record.c) */

	if (trace_cfg.kind == TR_NONE)
		return;
	trace_ops.func = trace_cfg.kind == TR_FUNCTION ? trace_function_func : trace_graph_func;
	v = dft_getenv("DYNFTRACE_GRAPH_SHORTCUT"); /* 0: the per-ops route (comparisons) */
	graph_shortcut = !(v && !strcmp(v, "0"));
	ops_set_graph(graph_shortcut ? &trace_ops : NULL); /* function too */
	if ((trace_cfg.kind == TR_FUNCTION && trace_cfg.filter &&
	     (err = set_globs(0, trace_cfg.filter))) ||
	    (trace_cfg.notrace && (err = set_globs(1, trace_cfg.notrace)))) {
		dft_log("bad filter: %s", strerror(-err));
		return;
	}
	v = dft_getenv("DYNFTRACE_DISABLED");
	if (v && *v && strcmp(v, "0")) {
		tracing_on = 0;
		return; /* live control turns it on later */
	}
	err = dynftrace_register_ops(&trace_ops);
	if (err)
		dft_log("cannot start the %s tracer: %s", tr && *tr ? tr : "function_graph",
			strerror(-err));
	else {
		ops_on = 1;
		trace_fast_ops(1);
	}
}

/* ---- live control (trace.h) -------------------------------------------- */
/*
 * The control thread changes the tracers of the running process. Every
 * function below holds tctl_lock; changes to trace_ops go through the ops
 * API, which re-patches at once and, on unregister, waits until no thread
 * is inside a callback (so trace_cfg.kind and trace_ops.func only change while no
 * callback can read them).
 *
 * | state                     | written under               | read by            |
 * |---------------------------|-----------------------------|--------------------|
 * | tracing_on, ops_on        | tctl_lock                   | control thread     |
 * | trace_cfg.kind, trace_ops.func  | tctl_lock, ops unregistered | callbacks (READ_ONCE)|
 * | trace_cfg.max_depth, time_filter| tctl_lock (WRITE_ONCE)      | callbacks (READ_ONCE)|
 * | lists[]                   | tctl_lock + patch_lock      | either lock holder |
 * | trace_roots                     | patch_lock (build_roots)    | callbacks (RCU)    |
 * | prof_gen, prof_all        | prof_lock                   | see prof_lock      |
 */
static pthread_mutex_t tctl_lock = PTHREAD_MUTEX_INITIALIZER;

#define LIST_MAX 4096

static const char *const tracer_names[] = {
    [TR_NONE] = "nop",
    [TR_FUNCTION] = "function",
    [TR_GRAPH] = "function_graph",
    [TR_PROFILE] = "profile",
};

static void list_free(struct glob_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* Append the SEPS-separated words of TEXT to OUT. 0, -ENOMEM or -E2BIG. */
static int list_parse(const char *text, const char *seps, struct glob_list *out)
{
	char *copy = strdup(text);
	if (!copy)
		return -ENOMEM;
	int err = 0;
	for (char *save, *g = strtok_r(copy, seps, &save); g && !err;
	     g = strtok_r(NULL, seps, &save)) {
		char **nv = out->n < LIST_MAX ? realloc(out->v, (out->n + 1) * sizeof(*nv)) : NULL;
		char *d = nv ? strdup(g) : NULL;
		if (nv)
			out->v = nv;
		if (!d) {
			err = out->n < LIST_MAX ? -ENOMEM : -E2BIG;
			break;
		}
		out->v[out->n++] = d;
	}
	free(copy);
	return err;
}

#define WHY(...) ((void)(why && snprintf(why, whylen, __VA_ARGS__)))

/* Every glob of L is valid and matches a function (patch_lock held). */
static int list_check(const struct glob_list *l, char *why, size_t whylen)
{
	for (size_t i = 0; i < l->n; i++) {
		const char *g = l->v[i][0] == '!' ? l->v[i] + 1 : l->v[i];
		if (!*g) {
			WHY("bad pattern '%s'", l->v[i]);
			return -EINVAL;
		}
		if (dft_pattern_check(g, why, whylen))
			return -EINVAL;
		size_t k = 0;
		while (k < site_count &&
		       !dft_glob_match_in(g, site_func_name(&site_tab[k]), site_tab[k].obj->path))
			k++;
		if (k == site_count) {
			WHY("no function matches '%s'", g);
			return -EINVAL;
		}
	}
	return 0;
}

/* Apply L to trace_ops' filter (NOTRACE 0) or notrace selection: all of it
 * (REPLACE), or added to what is there. */
static int ops_apply(const struct glob_list *l, int notrace, int replace)
{
	int (*set)(struct dynftrace_ops *, const char *, int) =
	    notrace ? dynftrace_set_notrace : dynftrace_set_filter;
	if (replace && !l->n)
		return set(&trace_ops, NULL, 1);
	for (size_t i = 0; i < l->n; i++) {
		int err = set(&trace_ops, l->v[i], replace && i == 0);
		if (err)
			return err;
	}
	return 0;
}

static const char *list_name(enum trace_list l)
{
	static const char *const names[TL_COUNT] = {"set_ftrace_filter", "set_ftrace_notrace",
						    "set_graph_function", "set_graph_notrace"};
	return names[l];
}

int trace_set_list(enum trace_list l, const char *text, int append, char *why, size_t whylen)
{
	if ((unsigned)l >= TL_COUNT)
		return -EINVAL;
	struct glob_list add = {0}, next = {0};
	int err = list_parse(text ? text : "", " \t\r\n", &add);
	if (err) {
		if (err == -E2BIG)
			WHY("too many globs (at most %d)", LIST_MAX);
		else
			WHY("out of memory");
		list_free(&add);
		return err;
	}
	pthread_mutex_lock(&tctl_lock);
	struct glob_list *cur = &lists[l];
	if (append && cur->n + add.n > LIST_MAX) {
		WHY("%s would hold more than %d globs", list_name(l), LIST_MAX);
		err = -E2BIG;
		goto out;
	}
	/* The new list, built before anything changes. */
	for (size_t i = 0; append && i < cur->n && !err; i++)
		if (!(next.v = realloc(next.v, (next.n + 1) * sizeof(*next.v))) ||
		    !(next.v[next.n] = strdup(cur->v[i])))
			err = -ENOMEM;
		else
			next.n++;
	for (size_t i = 0; i < add.n && !err; i++)
		if (!(next.v = realloc(next.v, (next.n + 1) * sizeof(*next.v))) ||
		    !(next.v[next.n] = strdup(add.v[i])))
			err = -ENOMEM;
		else
			next.n++;
	if (err) {
		WHY("out of memory");
		goto out;
	}
	/* Checked and applied in one patch_lock section (recursive: the ops
	 * API takes it again): no object comes or goes in between, so every
	 * glob that matched at the check still matches when applied. */
	patch_lock();
	err = list_check(&add, why, whylen);
	if (err)
		goto unlock;
	if (l == TL_FILTER || l == TL_NOTRACE) {
		err = ops_apply(append ? &add : &next, l == TL_NOTRACE, !append);
		if (err) {
			if (err == -ENODEV)
				WHY("tracing was stopped for good: %s", dft_kill_reason);
			else
				WHY("cannot apply %s: %s", list_name(l), strerror(-err));
			ops_apply(cur, l == TL_NOTRACE, 1); /* back to what it was */
			goto unlock;
		}
	}
	struct glob_list old = *cur;
	*cur = next;
	next = old; /* freed below */
	if (l == TL_GRAPH_FUNCTION || l == TL_GRAPH_NOTRACE)
		build_roots();
unlock:
	patch_unlock();
out:
	pthread_mutex_unlock(&tctl_lock);
	list_free(&add);
	list_free(&next);
	return err;
}

void trace_read_list(enum trace_list l, struct sbuf *out)
{
	if ((unsigned)l >= TL_COUNT)
		return;
	int notrace = l == TL_NOTRACE || l == TL_GRAPH_NOTRACE;
	size_t before = out->len;
	pthread_mutex_lock(&tctl_lock);
	patch_lock();
	const struct glob_list *gl = &lists[l];
	for (size_t i = 0; gl->n && i < site_count; i++) {
		const char *nm = site_func_name(&site_tab[i]);
		if (nm && list_selects(gl, &site_tab[i]))
			sb_printf(out, "%s\n", nm);
	}
	patch_unlock();
	pthread_mutex_unlock(&tctl_lock);
	if (out->len == before)
		sb_printf(out, notrace ? "#### no functions disabled ####\n"
				       : "#### all functions enabled ####\n");
}

/* Make trace_ops match kind and tracing_on (tctl_lock held). */
static int tracer_apply(enum tracer_kind kind, char *why, size_t whylen)
{
	int err;
	if (ops_on) {
		trace_fast_ops(0); /* before the grace period */
		err = dynftrace_unregister_ops(&trace_ops);
		if (err) {
			trace_fast_ops(1);
			WHY("cannot stop the %s tracer: %s", tracer_names[trace_cfg.kind],
			    strerror(-err));
			return err;
		}
		ops_on = 0;
	}
	if (kind != READ_ONCE(trace_cfg.kind)) {
		WRITE_ONCE(trace_cfg.kind, kind);
		trace_fast_update();
		if (kind == TR_PROFILE) { /* a new profile session */
			profile_restart();
		}
		ring_clear_all();
	}
	if (!tracing_on || kind == TR_NONE)
		return 0;
	trace_ops.func = kind == TR_FUNCTION ? trace_function_func : trace_graph_func;
	ops_set_graph(graph_shortcut ? &trace_ops : NULL); /* function too */
	err = dynftrace_register_ops(&trace_ops);
	if (err == -ENODEV)
		WHY("tracing was stopped for good: %s", dft_kill_reason);
	else if (err)
		WHY("cannot start the %s tracer: %s", tracer_names[kind], strerror(-err));
	else {
		ops_on = 1;
		trace_fast_ops(1);
	}
	return err;
}

/* `trace` and `trace_pipe` read the rings the tracers write (ring_read.c).
 * When recording they are the session's; without a session directory, the
 * rings start here, in memory only, keeping the newest events (overwrite,
 * as the kernel's buffers). */
void trace_ctl_start(size_t kb)
{
	ring_keep_exited(RING_KEEP_GONE); /* for `trace` */
	if (__atomic_load_n(&trace_ring_made, __ATOMIC_RELAXED))
		return; /* recording, or a fork child: its parent's ring is restarted */
	struct ring_config rc = {0};
	ring_config_size(&rc, kb ? kb : RING_KB_DEFAULT);
	int err = ring_init(&rc);
	if (err)
		dft_log("control: no trace buffers: %s", strerror(-err));
	else {
		__atomic_store_n(&trace_ring_made, 1, __ATOMIC_RELEASE);
		trace_ring_set(1);
	}
}

int trace_set_tracer(const char *name, char *why, size_t whylen)
{
	int kind = -1;
	for (size_t i = 0; i < ARRAY_SIZE(tracer_names); i++)
		if (!strcmp(name, tracer_names[i]))
			kind = (int)i;
	if (kind < 0) {
		WHY("unknown tracer '%s' (available: %s)", name, trace_available_tracers());
		return -EINVAL;
	}
	pthread_mutex_lock(&tctl_lock);
	int err = 0;
	if ((enum tracer_kind)kind != trace_cfg.kind || (tracing_on && kind != TR_NONE && !ops_on))
		err = tracer_apply((enum tracer_kind)kind, why, whylen);
	pthread_mutex_unlock(&tctl_lock);
	return err;
}

const char *trace_get_tracer(void)
{
	return tracer_names[READ_ONCE(trace_cfg.kind)];
}

const char *trace_available_tracers(void)
{
	return "function_graph function profile nop";
}

int trace_set_tracing_on(int on, char *why, size_t whylen)
{
	pthread_mutex_lock(&tctl_lock);
	int err = 0;
	on = !!on;
	if (on != tracing_on || (on && trace_cfg.kind != TR_NONE && !ops_on)) {
		int was = tracing_on;
		tracing_on = on;
		err = tracer_apply(trace_cfg.kind, why, whylen);
		if (err)
			tracing_on = ops_on ? 1 : (on ? was : 0);
	}
	pthread_mutex_unlock(&tctl_lock);
	return err;
}

int trace_get_tracing_on(void)
{
	pthread_mutex_lock(&tctl_lock);
	int on = tracing_on;
	pthread_mutex_unlock(&tctl_lock);
	return on;
}

int trace_set_max_depth(unsigned depth)
{
	pthread_mutex_lock(&tctl_lock);
	WRITE_ONCE(trace_cfg.max_depth, depth);
	trace_fast_update();
	pthread_mutex_unlock(&tctl_lock);
	return 0;
}

unsigned trace_get_max_depth(void)
{
	return READ_ONCE(trace_cfg.max_depth);
}

int trace_set_thresh(uint64_t ns)
{
	pthread_mutex_lock(&tctl_lock);
	WRITE_ONCE(trace_cfg.time_filter, ns);
	trace_fast_update();
	pthread_mutex_unlock(&tctl_lock);
	return 0;
}

uint64_t trace_get_thresh(void)
{
	return READ_ONCE(trace_cfg.time_filter);
}

int trace_recording(void)
{
	return trace_rec_on;
}

int trace_write_marker(const char *text, size_t len)
{
	pthread_mutex_lock(&tctl_lock);
	int on = tracing_on;
	pthread_mutex_unlock(&tctl_lock);
	if (!on)
		return 0;
	uint64_t ts;
	size_t n = len < RING_MARKER_MAX ? len : RING_MARKER_MAX;
	uint8_t *p = trace_ring_is_on() ? ring_event_begin(RING_EV_MARKER, n + 1, &ts) : NULL;
	if (p) {
		memcpy(p, text, n);
		p[n] = 0;
		ring_event_end(p);
	}
	return 0;
}

/* ---- detach ------------------------------------------------------------- */

/* Detach, while the program runs: every tracer off, every list empty, the
 * recording flushed and closed. The sites go back to NOPs as the ops
 * unregister. */
HIDDEN void trace_detach_prepare(void)
{
	char why[256];
	trace_set_tracing_on(0, why, sizeof(why));
	trace_set_tracer("nop", why, sizeof(why));
	for (int l = 0; l < TL_COUNT; l++)
		trace_set_list((enum trace_list)l, "", 0, why, sizeof(why));
	trace_shutdown();
	ring_shutdown();		   /* the rings of live control too: their consumer ends */
	dynftrace_free_filter(&trace_ops); /* its glob log (it is unregistered) */
}

/* Detach, every other thread stopped, control ended: the site names the
 * readers kept (no reader is left). */
HIDDEN void trace_detach_free(void)
{
	func_names_free();
}
