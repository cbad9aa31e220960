/* SPDX-License-Identifier: MIT */
/*
 * cmd_attach.c - `dynftrace attach PID` and `dynftrace detach PID`: load
 * the runtime into a process that is already running, and take it out.
 *
 * attach:
 *   1. refuse, in one sentence, what cannot work, before touching the
 *      process (attach_check);
 *   2. stop every thread, let all but one go again, and have that one call
 *      dlopen(libdynftrace-attach.so): the runtime finds every object's
 *      sites and prepares their conversion while the program runs; then
 *      dynftrace_attach_config(settings): the entries to patch by
 *      relocation (-P) get their blocks;
 *   3. stop every thread, move each out of any run of NOPs (also in its
 *      signal frames), and call dynftrace_attach_commit() with their
 *      instruction pointers: the sites become the canonical NOP, the
 *      relocated entries jump to their blocks, and each thread stopped
 *      inside an entry's replaced bytes is moved where the runtime says (its
 *      copy in the block). This is the only moment the whole process stands;
 *   4. dynftrace_attach_start(): control (and recording) start.
 * detach:
 *   1. dynftrace_detach_prepare() while the program runs;
 *   2. stop every thread, dynftrace_detach_finish(their IPs): may the
 *      runtime go? If a thread is inside it, let the process run a moment
 *      and ask again;
 *   3. dlclose it, and check that it is gone from the mappings.
 * The protocol is in include/dynftrace/attach.h.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <dynftrace/attach.h>

#include "arch_inject.h"
#include "attach.h"
#include "cli.h"
#include "elf.h"
#include "inject.h"
#include "seccomp.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The value of "KEY:" in /proc/PID/status, or -1. */
static long status_field(pid_t pid, const char *key, char *text, size_t tlen)
{
	char path[64], line[512];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	long v = -1;
	size_t kl = strlen(key);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			const char *p = line + kl + 1;
			while (*p == ' ' || *p == '\t')
				p++;
			if (text) {
				snprintf(text, tlen, "%s", p);
				text[strcspn(text, "\n")] = 0;
			}
			v = strtol(p, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static void comm_of(pid_t pid, char *buf, size_t n)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	FILE *f = fopen(path, "re");
	buf[0] = 0;
	if (f) {
		if (fgets(buf, (int)n, f))
			buf[strcspn(buf, "\n")] = 0;
		fclose(f);
	}
	if (!buf[0])
		snprintf(buf, n, "?");
}

/* A maps line's file name without the " (deleted)" of a file replaced or
 * removed since it was mapped (a dynftrace upgraded under an attached
 * runtime is still that runtime). */
static void strip_deleted(char *line)
{
	size_t l = strlen(line), dl = sizeof(" (deleted)") - 1;
	if (l > dl && !strcmp(line + l - dl, " (deleted)"))
		line[l - dl] = 0;
}

/* Does a mapping of PID come from a file whose name ends with SUFFIX? */
static int maps_have(pid_t pid, const char *suffix)
{
	char path[64], line[4096];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t sl = strlen(suffix);
	int found = 0;
	while (!found && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		strip_deleted(line);
		size_t l = strlen(line);
		found = l >= sl && !strcmp(line + l - sl, suffix);
	}
	fclose(f);
	return found;
}

/* Does PID map a libdynftrace.so, versioned (installed: libdynftrace.so.0.1.0)
 * or not (a build tree)? */
static int maps_have_runtime(pid_t pid)
{
	char path[64], line[4096];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	int found = 0;
	while (!found && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		strip_deleted(line);
		const char *base = strrchr(line, '/');
		found = base && !strncmp(base, "/libdynftrace.so", 16) &&
			(!base[16] || base[16] == '.');
	}
	fclose(f);
	return found;
}

/* The runtime's file as the mappings name it (the link resolved). */
static int runtime_real(char *buf, size_t n)
{
	char rt[PATH_MAX], real[PATH_MAX];
	int err = attach_runtime_path(rt, sizeof(rt));
	if (err)
		return err;
	if (!realpath(rt, real))
		return -errno;
	return (size_t)snprintf(buf, n, "%s", real) < n ? 0 : -ENAMETOOLONG;
}

/* 1: loaded by an attach; 0: not (or linked, preloaded); -errno: cannot
 * tell (its memory cannot be read). */
static int runtime_loaded(pid_t pid)
{
	char real[PATH_MAX];
	if (runtime_real(real, sizeof(real)) || !maps_have(pid, real))
		return 0;
	struct inj p;
	inj_open(&p, pid);
	int r = inj_loaded_as(&p, "/" DYNFTRACE_ATTACH_SONAME);
	inj_close(&p);
	return r;
}

/* Sites in every object PID has mapped (dlopen'ed ones too), read from
 * their files; -1 if its mappings cannot be read (ptrace will say why). */
static long mapped_sites(pid_t pid)
{
	char path[64], line[4096], last[4096] = "";
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	long total = 0;
	while (fgets(line, sizeof(line), f)) {
		char perms[8];
		int pos = 0;
		if (sscanf(line, "%*x-%*x %7s %*x %*s %*s %n", perms, &pos) < 1 || !pos ||
		    perms[2] != 'x' || line[pos] != '/')
			continue;
		char *p = line + pos;
		p[strcspn(p, "\n")] = 0;
		if (!strcmp(p, last))
			continue;
		snprintf(last, sizeof(last), "%s", p);
		struct elf_image img;
		if (!elf_load(&img, p, 0, 0))
			total += (long)img.nsites;
		elf_free(&img);
	}
	fclose(f);
	return total;
}

static int yama_scope(void)
{
	/* The file can be named for tests (kernels without Yama). */
	const char *yf = getenv("DYNFTRACE_YAMA_SCOPE_FILE");
	FILE *f = fopen(yf && *yf ? yf : "/proc/sys/kernel/yama/ptrace_scope", "re");
	int v = 0;
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

int attach_runtime_path(char *buf, size_t n)
{
	int err = cli_runtime(NULL, NULL, buf, n);
	if (err)
		return err;
	struct stat st;
	return stat(buf, &st) ? -errno : 0;
}

/* Everything that makes an attach impossible, said before the process is
 * touched. 0, or 1 with the sentence printed. PATCH: functions are to be
 * patched by relocation (a process without sites is fine then). */
int attach_check(pid_t pid, const char *runtime, int patch)
{
	char path[PATH_MAX], comm[64], text[256];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (pid <= 0 || stat(path, &st)) {
		cli_err("no process %d", (int)pid);
		return 1;
	}
	if (pid == getpid()) {
		cli_err("cannot attach to itself");
		return 1;
	}
	comm_of(pid, comm, sizeof(comm));
	long tgid = status_field(pid, "Tgid", NULL, 0);
	if (tgid > 0 && tgid != pid) {
		cli_err("%d is a thread of process %ld (%s): give the process's id", (int)pid, tgid,
			comm);
		return 1;
	}
	status_field(pid, "Uid", text, sizeof(text));
	unsigned r = 0, e = 0, s = 0, fs = 0;
	sscanf(text, "%u %u %u %u", &r, &e, &s, &fs);
	uid_t me = geteuid();
	if (me != 0 && (r != me || e != me || s != me)) {
		cli_err("process %d (%s) belongs to uid %u and dynftrace runs as uid %u: attach "
			"as that user or as root",
			(int)pid, comm, e, (unsigned)me);
		return 1;
	}
	long tracer = status_field(pid, "TracerPid", NULL, 0);
	if (tracer > 0) {
		char tc[64];
		comm_of((pid_t)tracer, tc, sizeof(tc));
		cli_err("process %d (%s) is already traced by process %ld (%s), a debugger or "
			"strace: only one tracer can attach; detach it first",
			(int)pid, comm, tracer, tc);
		return 1;
	}
	status_field(pid, "State", text, sizeof(text));
	if (text[0] == 'T' || text[0] == 't') {
		cli_err("process %d (%s) is stopped (%s): continue it first (kill -CONT %d)",
			(int)pid, comm, text, (int)pid);
		return 1;
	}
	if (text[0] == 'Z' || text[0] == 'X') {
		cli_err("process %d (%s) has ended", (int)pid, comm);
		return 1;
	}
	long sc = status_field(pid, "Seccomp", NULL, 0);
	if (sc == 1) {
		cli_err("process %d (%s) runs in seccomp strict mode, which allows no system call "
			"that loading the runtime needs",
			(int)pid, comm);
		return 1;
	}
	/* Filters (of any thread): would one kill it at a call the runtime makes? */
	char why[512];
	if (seccomp_check_process(pid, why, sizeof(why))) {
		cli_err("process %d (%s): %s", (int)pid, comm, why);
		return 1;
	}
	/* The runtime must be reachable by the same path inside the
	 * process's root (a container has its own). */
	struct stat r1, r2;
	snprintf(path, sizeof(path), "/proc/%d/root/", (int)pid);
	int rooterr = stat(path, &r1) || stat("/", &r2) ? errno : 0;
	if (rooterr && rooterr != EACCES && rooterr != EPERM) {
		cli_err("cannot read the root directory of process %d (%s): %s", (int)pid, comm,
			strerror(rooterr));
		return 1;
	}
	/* EACCES: not ours to read (not dumpable): ptrace will say why. */
	if (!rooterr && (r1.st_dev != r2.st_dev || r1.st_ino != r2.st_ino)) {
		struct stat a, b;
		snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, runtime);
		if (stat(path, &a) || stat(runtime, &b) || a.st_dev != b.st_dev ||
		    a.st_ino != b.st_ino) {
			cli_err("process %d (%s) has another root directory (a container?) in "
				"which %s is not our runtime: install dynftrace inside it",
				(int)pid, comm, runtime);
			return 1;
		}
	}
	if (runtime_loaded(pid) == 1) {
		cli_err("process %d (%s) is already attached: use `dynftrace ctl %d`, or "
			"`dynftrace detach %d` first",
			(int)pid, comm, (int)pid, (int)pid);
		return 1;
	}
	if (maps_have_runtime(pid)) {
		cli_err("process %d (%s) already runs the dynftrace runtime (linked or "
			"preloaded): start it with DYNFTRACE_CONTROL=1 and use `dynftrace ctl %d`",
			(int)pid, comm, (int)pid);
		return 1;
	}
	/* A static program has no loader to load the runtime with. */
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	size_t nsites = 0;
	int is_static = 0;
	char err[256] = "";
	if (!cli_sites_count(path, &nsites, &is_static, err, sizeof(err)) && is_static) {
		cli_err("process %d (%s) is statically linked: there is no dynamic loader in "
			"it to load the runtime with",
			(int)pid, comm);
		return 1;
	}
	long ns = mapped_sites(pid);
	if (ns < 0)
		return 0; /* its mappings are not ours to read: ptrace says why */
	if (!ns && !patch) {
		cli_err("process %d (%s) has no traceable sites: neither its program nor its "
			"libraries were built with `dynftrace cflags` (name functions to patch "
			"with -P)",
			(int)pid, comm);
		return 1;
	}
	if (!inj_symbol(pid, "/libc.so.6", "dlopen", NULL, 0) &&
	    !inj_symbol(pid, "/libdl.so.2", "dlopen", NULL, 0)) {
		cli_err("process %d (%s) has no dlopen (its C library is not glibc 2.34 or later "
			"and libdl is not loaded)",
			(int)pid, comm);
		return 1;
	}
	return 0;
}

/* A process that is not dumpable has /proc files owned by root. */
static int dumpable(pid_t pid)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	return !stat(path, &st) && st.st_uid == geteuid();
}

/* A ptrace refusal, explained. */
static void explain_seize(pid_t pid, const char *why, int err)
{
	char comm[64];
	comm_of(pid, comm, sizeof(comm));
	if (err == -EPERM) {
		int y = yama_scope();
		if (y == 3)
			cli_err("cannot attach to process %d (%s): kernel.yama.ptrace_scope is 3, "
				"which forbids every ptrace attach until reboot",
				(int)pid, comm);
		else if (y == 2 && geteuid() != 0)
			cli_err("cannot attach to process %d (%s): kernel.yama.ptrace_scope is 2: "
				"only a process with CAP_SYS_PTRACE (root) may attach",
				(int)pid, comm);
		else if (y == 1 && geteuid() != 0)
			cli_err("cannot attach to process %d (%s): kernel.yama.ptrace_scope is 1, "
				"which lets a process attach only to its own descendants: set it "
				"to 0 (sysctl kernel.yama.ptrace_scope=0) or attach with "
				"CAP_SYS_PTRACE (as root)",
				(int)pid, comm);
		else if (geteuid() != 0 && !dumpable(pid))
			cli_err("cannot attach to process %d (%s): it made itself non-dumpable "
				"(prctl PR_SET_DUMPABLE 0), which only CAP_SYS_PTRACE (root) may "
				"trace",
				(int)pid, comm);
		else
			cli_err("cannot attach to process %d (%s): ptrace is not permitted (%s)",
				(int)pid, comm, why);
		return;
	}
	cli_err("cannot attach to process %d (%s): %s", (int)pid, comm, why);
}

/* The settings block for dynftrace_attach_start: KEY=VALUE\0... */
int attach_config_add(char **buf, size_t *len, const char *key, const char *val)
{
	size_t n = strlen(key) + 1 + strlen(val) + 1;
	char *nb = realloc(*buf, *len + n);
	if (!nb)
		return -ENOMEM;
	snprintf(nb + *len, n, "%s=%s", key, val);
	*buf = nb;
	*len += n;
	return 0;
}

/* XDG_RUNTIME_DIR as PID started with it: the runtime makes its socket
 * where `dynftrace ctl` will look for it. */
static void target_xdg(pid_t pid, char **cfg, size_t *len);

void attach_config_target(pid_t pid, char **cfg, size_t *len)
{
	target_xdg(pid, cfg, len);
	const char *v = getenv("DYNFTRACE_VERBOSE"); /* the runtime explains itself */
	if (v && *v)
		attach_config_add(cfg, len, "DYNFTRACE_VERBOSE", v);
}

static void target_xdg(pid_t pid, char **cfg, size_t *len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	static char env[1 << 16];
	ssize_t n = read(fd, env, sizeof(env) - 1);
	close(fd);
	if (n <= 0)
		return;
	env[n] = 0;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(env + i) + 1)
		if (!strncmp(env + i, "XDG_RUNTIME_DIR=", 16)) {
			attach_config_add(cfg, len, "XDG_RUNTIME_DIR", env + i + 16);
			return;
		}
}

static uint64_t call_ret(struct inj *p, size_t *ti, uint64_t fn, const uint64_t *a, int na,
			 const void *data, size_t len, int run, int *err)
{
	uint64_t ret = 0;
	*err = inj_call(p, ti, fn, a, na, data, len, run, &ret);
	return ret;
}

/* A call of one of the runtime's dynftrace_attach_* / dynftrace_detach_*
 * entry points, which keep errno themselves: the agent then calls no
 * __errno_location in the target, which -P may have made traced. */
static uint64_t rt_call(struct inj *p, size_t *ti, uint64_t fn, const uint64_t *a, int na,
			const void *data, size_t len, int run, int *err)
{
	p->keeps_errno = 1;
	uint64_t ret = call_ret(p, ti, fn, a, na, data, len, run, err);
	p->keeps_errno = 0;
	return ret;
}

/* dynftrace_attach_commit(TPS, NTP, IPS, NREF), the world stopped; then
 * every instruction pointer it moved (out of an entry it relocated) goes
 * where it says, in the thread's registers or signal frame (*MOVED more). */
static int commit_call(struct inj *p, size_t *ti, uint64_t commit, const uint64_t *tps, size_t ntp,
		       const struct inj_ipref *refs, size_t nref, int64_t *rc, size_t *moved)
{
	size_t ipo = (ntp ? ntp : 1) * sizeof(uint64_t);
	size_t len = ipo + (nref ? nref : 1) * sizeof(uint64_t);
	uint64_t *blob = calloc(1, len);
	if (!blob) {
		snprintf(p->why, sizeof(p->why), "out of memory");
		return -ENOMEM;
	}
	memcpy(blob, tps, ntp * sizeof(uint64_t));
	uint64_t *ips = (uint64_t *)((char *)blob + ipo);
	for (size_t i = 0; i < nref; i++)
		ips[i] = refs[i].ip;
	int err;
	uint64_t ca[4] = {INJ_DATA, ntp, INJ_DATA + ipo, nref};
	*rc = (int32_t)rt_call(p, ti, commit, ca, 4, blob, len, 0, &err);
	if (!err && *rc >= 0 && nref)
		err = inj_read(p, inj_last_data(p) + ipo, ips, nref * sizeof(uint64_t));
	for (size_t i = 0; !err && *rc >= 0 && i < nref; i++) {
		if (ips[i] == refs[i].ip)
			continue;
		err = inj_set_ipref(p, &refs[i], ips[i]);
		if (err)
			snprintf(p->why, sizeof(p->why),
				 "cannot move thread %d out of a relocated entry: %s",
				 (int)p->t[refs[i].thread].tid, strerror(-err));
		(*moved)++;
	}
	free(blob);
	return err;
}

/*
 * While the agent holds the target (threads stopped, code and registers
 * borrowed), dynftrace must not die of a signal: the target would go on
 * with half of what was injected and crash. Ctrl-C, Ctrl-\, Ctrl-Z,
 * SIGTERM, SIGHUP and SIGPIPE wait until the target is let go; then they
 * act (the caller's own mask comes back). SIGKILL cannot wait.
 */
static void hold_signals(sigset_t *old)
{
	static const int sigs[] = {SIGINT, SIGQUIT, SIGTSTP, SIGTERM, SIGHUP, SIGPIPE};
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&set, sigs[i]);
	sigprocmask(SIG_BLOCK, &set, old);
}

/* The signals back as the caller had them; one that came meanwhile and
 * will now end dynftrace is told first, with what was done (DONE). */
static void release_signals(const sigset_t *old, const char *done)
{
	static const int sigs[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
	sigset_t pend;
	sigpending(&pend);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		if (sigismember(&pend, sigs[i]) && !sigismember(old, sigs[i])) {
			cli_err("%s: %s", strsignal(sigs[i]), done);
			break;
		}
	}
	sigprocmask(SIG_SETMASK, old, NULL);
}

static int attach_held(pid_t pid, const char *cfg, size_t cfglen, struct attach_result *res);

int attach_process(pid_t pid, const char *cfg, size_t cfglen, struct attach_result *res)
{
	sigset_t old;
	char done[200];
	hold_signals(&old);
	int rc = attach_held(pid, cfg, cfglen, res);
	if (rc)
		snprintf(done, sizeof(done), "the attach to process %d did not happen", (int)pid);
	else
		snprintf(done, sizeof(done),
			 "process %d was attached first: it keeps the runtime, tracing off "
			 "('dynftrace detach %d' takes it out)",
			 (int)pid, (int)pid);
	release_signals(&old, done);
	return rc;
}

static int attach_held(pid_t pid, const char *cfg, size_t cfglen, struct attach_result *res)
{
	char runtime[PATH_MAX];
	memset(res, 0, sizeof(*res));
	int err = attach_runtime_path(runtime, sizeof(runtime));
	if (err) {
		cli_err("cannot find the runtime %s (next to the dynftrace command, or "
			"installed with it)",
			DYNFTRACE_ATTACH_SONAME);
		return 1;
	}
	int patch = 0;
	for (size_t i = 0; i < cfglen; i += strlen(cfg + i) + 1)
		patch |= !strncmp(cfg + i, "DYNFTRACE_PATCH=", 16);
	if (attach_check(pid, runtime, patch))
		return 1;
	uint64_t dl = inj_symbol(pid, "/libc.so.6", "dlopen", NULL, 0);
	uint64_t dlerr = inj_symbol(pid, "/libc.so.6", "dlerror", NULL, 0);
	if (!dl) {
		dl = inj_symbol(pid, "/libdl.so.2", "dlopen", NULL, 0);
		dlerr = inj_symbol(pid, "/libdl.so.2", "dlerror", NULL, 0);
	}
	struct inj p;
	inj_open(&p, pid);
	uint64_t t0 = now_ns();
	/* Only the thread that loads the runtime stops now: the others run. */
	pid_t worker = inj_choose_tid(pid, NULL, 0);
	err = worker > 0 ? inj_stop_thread(&p, worker) : -ESRCH;
	if (err) {
		explain_seize(pid, p.why, err);
		inj_close(&p);
		return 1;
	}
	size_t ti = 0;
	uint64_t t1 = now_ns();
	/* The load, with every other thread running: a thread stopped while
	 * holding the loader's or the allocator's lock must be able to let
	 * it go. */
	uint64_t a[2] = {INJ_DATA, RTLD_NOW | RTLD_LOCAL};
	uint64_t h = call_ret(&p, &ti, dl, a, 2, runtime, strlen(runtime) + 1, 1, &err);
	uint64_t t2 = now_ns();
	res->stop_ns = t1 - t0; /* the worker alone, until it was stopped */
	res->worker_ns = t2 - t0;
	if (!err && !h) {
		char msg[512] = "unknown reason";
		uint64_t s = dlerr ? call_ret(&p, &ti, dlerr, NULL, 0, NULL, 0, 0, &err) : 0;
		if (s && !inj_read(&p, s, msg, sizeof(msg) - 1))
			msg[sizeof(msg) - 1] = 0;
		inj_close(&p);
		cli_err("process %d could not load the runtime: %s", (int)pid, msg);
		return 1;
	}
	if (err) {
		cli_err("process %d: loading the runtime failed: %s", (int)pid, p.why);
		inj_close(&p);
		return 1;
	}
	char real[PATH_MAX] = "";
	runtime_real(real, sizeof(real));
	uint64_t config = inj_symbol(pid, real, "dynftrace_attach_config", NULL, 0);
	uint64_t commit = inj_symbol(pid, real, "dynftrace_attach_commit", NULL, 0);
	uint64_t start = inj_symbol(pid, real, "dynftrace_attach_start", NULL, 0);
	if (!config || !commit || !start) {
		inj_close(&p);
		cli_err("process %d loaded the runtime but its entry points are missing", (int)pid);
		return 1;
	}
	/* The settings, while the program runs: the entries to relocate get
	 * their blocks now. */
	uint64_t ga[2] = {INJ_DATA, cfglen};
	int64_t grc = (int32_t)rt_call(&p, &ti, config, ga, 2, cfg, cfglen, 1, &err);
	if (err) {
		cli_err("process %d: %s", (int)pid, p.why);
		inj_close(&p);
		return 1;
	}
	if (grc < 0) {
		inj_close(&p);
		cli_err("process %d: the runtime did not take its settings: %s", (int)pid,
			strerror((int)-grc));
		return 1;
	}
	res->relocated = (size_t)grc;
	/* How many it could not relocate: we say so, not the program's
	 * stderr (DYNFTRACE_PATCH_QUIET). */
	uint64_t refused = inj_symbol(pid, real, "dynftrace_attach_refused", NULL, 0);
	res->refused = 0;
	if (refused) {
		int64_t n = (int32_t)rt_call(&p, &ti, refused, NULL, 0, NULL, 0, 1, &err);
		if (err) {
			cli_err("process %d: %s", (int)pid, p.why);
			inj_close(&p);
			return 1;
		}
		if (n > 0)
			res->refused = (size_t)n;
	}
	/* The conversion: the whole process stands, every thread out of the
	 * NOP runs. A thread stopped inside the runtime's dlopen wrapper
	 * holds its lock (-EAGAIN): let it finish and try again. */
	int64_t rc = -EAGAIN;
	for (int tries = 0; tries < 200 && rc == -EAGAIN; tries++) {
		if (tries) {
			inj_resume_all(&p);
			struct timespec ts = {0, 2000000};
			nanosleep(&ts, NULL);
		}
		uint64_t s0 = now_ns();
		err = inj_stop_all(&p);
		size_t moved = 0;
		if (!err)
			err = inj_skip_nop_runs(&p, &moved);
		if (!err) {
			int k = -1;
			for (size_t i = 0; i < p.n; i++)
				if (p.t[i].tid == worker)
					k = (int)i;
			ti = k >= 0 ? (size_t)k : inj_pick_thread(&p);
			/* Threads that block SIGTRAP would die at the first
			 * breakpoint: the runtime learns they block it (virtually)
			 * and their real masks let it through. */
			uint64_t *tps = calloc(p.n ? p.n : 1, sizeof(*tps));
			size_t ntp = 0;
			uint64_t trapbit = UINT64_C(1) << (SIGTRAP - 1);
			for (size_t i = 0; tps && i < p.n; i++) {
				uint64_t m;
				if (!inj_sigmask(&p, i, &m, NULL) && (m & trapbit))
					tps[ntp++] = inj_thread_pointer(&p, i);
			}
			/* After the thread pointers: every instruction pointer,
			 * which the commit moves out of replaced entries. */
			struct inj_ipref *refs = NULL;
			size_t nref = 0;
			if (!tps)
				err = -ENOMEM;
			else if (!(err = inj_collect_iprefs(&p, &refs, &nref)))
				err =
				    commit_call(&p, &ti, commit, tps, ntp, refs, nref, &rc, &moved);
			free(refs);
			for (size_t i = 0; !err && rc >= 0 && i < p.n; i++) {
				uint64_t m;
				if (!inj_sigmask(&p, i, &m, NULL) && (m & trapbit)) {
					m &= ~trapbit;
					inj_sigmask(&p, i, NULL, &m);
					res->unblocked++;
				}
			}
			free(tps);
		}
		uint64_t s1 = now_ns();
		if (err)
			break;
		res->moved = moved;
		res->commit_ns = s1 - s0;
		res->threads = p.n;
	}
	if (!err && rc < 0) {
		inj_close(&p);
		cli_err("process %d: the runtime could not convert its sites: %s", (int)pid,
			strerror((int)-rc));
		return 1;
	}
	res->sites = (size_t)rc;
	if (!err) {
		uint64_t sa[2] = {INJ_DATA, cfglen};
		rc = (int32_t)rt_call(&p, &ti, start, sa, 2, cfg, cfglen, 1, &err);
	}
	if (!err && rc < 0) {
		inj_close(&p);
		cli_err("process %d: the runtime did not start: %s", (int)pid, strerror((int)-rc));
		return 1;
	}
	if (err) {
		cli_err("process %d: %s", (int)pid, p.why);
		inj_close(&p);
		return 1;
	}
	inj_close(&p);
	return 0;
}

static const char attach_usage[] =
    "usage: dynftrace attach [-P GLOB]... [--patch-libs] PID\n"
    "Load the tracing runtime into running process PID, which was not started\n"
    "under dynftrace. Tracing stays off and every site a NOP until `dynftrace\n"
    "ctl PID` turns it on. `dynftrace detach PID` takes the runtime out again.\n"
    "\n"
    "  -P, --patch GLOB        also make traceable the matching functions that\n"
    "                          were not built with dynftrace's flags: their\n"
    "                          entries are relocated (x86-64, needs\n"
    "                          libcapstone4). A plain glob names the program's\n"
    "                          functions, FUNC@OBJECT another object's\n"
    "                          (malloc@libc); repeatable. Detach puts them back.\n"
    "      --patch-libs        plain -P globs name every library's functions\n"
    "                          too (alias: uftrace's --nest-libcall).\n";

int cmd_attach(int argc, char **argv)
{
	if (argc == 2 && cli_is_help(argv[1])) {
		fputs(attach_usage, stdout);
		return 0;
	}
	if (!ARCH_INJ_SUPPORTED) {
		cli_err("attach: not implemented on this architecture (x86-64, aarch64 and riscv64 "
			"only); start the program under 'dynftrace record' or link it with the "
			"runtime");
		return 1;
	}
	struct cli_globs patch = {0};
	int patch_libs = 0, i;
	const char *v;
	for (i = 1; i < argc - 1; i++) {
		int r;
		if ((r = cli_opt(argc, argv, &i, "-P", "--patch", &v))) {
			if (r < 0 || cli_glob_add(&patch, v)) {
				if (r > 0)
					cli_err("out of memory");
				cli_glob_free(&patch);
				return 2;
			}
		} else if (!strcmp(argv[i], "--patch-libs") || !strcmp(argv[i], "--nest-libcall")) {
			patch_libs = 1;
		} else {
			break;
		}
	}
	uint64_t pid;
	if (i != argc - 1 || cli_parse_uint(argv[i], INT_MAX, &pid)) {
		cli_glob_free(&patch);
		fputs(attach_usage, stderr);
		return 2;
	}
	char *cfg = NULL, *globs = patch.n ? cli_glob_join(&patch) : NULL;
	size_t len = 0;
	int bad = patch.n && !globs;
	cli_glob_free(&patch);
	bad |= attach_config_add(&cfg, &len, "DYNFTRACE_CONTROL", "1");
	/* tracing_on 0: choosing a tracer starts nothing before the filters */
	bad |= attach_config_add(&cfg, &len, "DYNFTRACE_DISABLED", "1");
	if (globs)
		bad |= attach_config_add(&cfg, &len, "DYNFTRACE_PATCH", globs);
	if (patch_libs)
		bad |= attach_config_add(&cfg, &len, "DYNFTRACE_PATCH_LIBS", "1");
	if (globs) /* we report the refusals */
		bad |= attach_config_add(&cfg, &len, "DYNFTRACE_PATCH_QUIET", "1");
	free(globs);
	if (bad) {
		free(cfg);
		cli_err("out of memory");
		return 1;
	}
	attach_config_target((pid_t)pid, &cfg, &len);
	struct attach_result r;
	int rc = attach_process((pid_t)pid, cfg, len, &r);
	free(cfg);
	if (rc)
		return rc;
	char comm[64];
	comm_of((pid_t)pid, comm, sizeof(comm));
	printf("attached to process %d (%s): %zu sites, %zu threads\n", (int)pid, comm, r.sites,
	       r.threads);
	if (r.relocated)
		printf("%zu of them are functions' entries patched by relocation\n", r.relocated);
	if (r.refused)
		printf("%zu function%s named by -P could not be patched: 'dynftrace sites --all "
		       "/proc/%d/exe' says why, for its libraries too\n",
		       r.refused, r.refused == 1 ? "" : "s", (int)pid);
	printf("stopped: %.3f ms, every thread (one thread was held %.3f ms while the runtime "
	       "loaded)%s\n",
	       r.commit_ns / 1e6, r.worker_ns / 1e6,
	       r.moved ? "; threads moved out of NOP runs or patched entries" : "");
	printf("tracing is off: dynftrace ctl %d current_tracer function_graph; "
	       "(set_ftrace_filter, ...;) dynftrace ctl %d tracing_on 1\n",
	       (int)pid, (int)pid);
	return 0;
}

static int detach_held(pid_t pid, int *unloaded, uint64_t *stop_ns);

int detach_process(pid_t pid, int *unloaded, uint64_t *stop_ns)
{
	sigset_t old;
	char done[120];
	hold_signals(&old);
	int rc = detach_held(pid, unloaded, stop_ns);
	snprintf(done, sizeof(done),
		 rc ? "the detach from process %d failed first"
		    : "the detach from process %d was done first",
		 (int)pid);
	release_signals(&old, done);
	return rc;
}

static int detach_held(pid_t pid, int *unloaded, uint64_t *stop_ns)
{
	char comm[64], runtime[PATH_MAX];
	*unloaded = 0;
	*stop_ns = 0;
	comm_of(pid, comm, sizeof(comm));
	char so[PATH_MAX];
	if (attach_runtime_path(runtime, sizeof(runtime)) || runtime_real(so, sizeof(so))) {
		cli_err("cannot find the runtime %s (next to the dynftrace command, or "
			"installed with it)",
			DYNFTRACE_ATTACH_SONAME);
		return 1;
	}
	long tgid = status_field(pid, "Tgid", NULL, 0);
	if (tgid > 0 && tgid != pid) {
		cli_err("%d is a thread of process %ld (%s): give the process's id", (int)pid, tgid,
			comm);
		return 1;
	}
	if (runtime_loaded(pid) != 1) {
		cli_err("process %d (%s) has no runtime that `dynftrace attach` loaded", (int)pid,
			comm);
		return 1;
	}
	/* A stopped process runs nothing the detach needs (it would wait for
	 * its deadline and say less). */
	char state[64] = "";
	status_field(pid, "State", state, sizeof(state));
	if (state[0] == 'T' || state[0] == 't') {
		cli_err("process %d (%s) is stopped (%s): continue it first (kill -CONT %d)",
			(int)pid, comm, state, (int)pid);
		return 1;
	}
	uint64_t prep = inj_symbol(pid, so, "dynftrace_detach_prepare", NULL, 0);
	uint64_t fin = inj_symbol(pid, so, "dynftrace_detach_finish", NULL, 0);
	uint64_t dl = inj_symbol(pid, "/libc.so.6", "dlopen", NULL, 0);
	uint64_t dc = inj_symbol(pid, "/libc.so.6", "dlclose", NULL, 0);
	if (!dl || !dc) {
		dl = inj_symbol(pid, "/libdl.so.2", "dlopen", NULL, 0);
		dc = inj_symbol(pid, "/libdl.so.2", "dlclose", NULL, 0);
	}
	if (!prep || !fin || !dl || !dc) {
		cli_err("process %d (%s): the runtime's or the loader's entry points are missing",
			(int)pid, comm);
		return 1;
	}
	struct inj p;
	inj_open(&p, pid);
	pid_t worker = inj_choose_tid(pid, NULL, 0);
	int err = worker > 0 ? inj_stop_thread(&p, worker) : -ESRCH;
	if (err) {
		explain_seize(pid, p.why, err);
		inj_close(&p);
		return 1;
	}
	char why[256] = "";
	size_t ti = 0;
	uint64_t pa[2] = {INJ_DATA, sizeof(why)};
	int64_t rc = (int32_t)rt_call(&p, &ti, prep, pa, 2, why, sizeof(why), 1, &err);
	/* Borrowed inside a callback: let it out and borrow again. */
	for (int tries = 0; !err && rc == -EAGAIN && tries < 200; tries++) {
		inj_resume_all(&p);
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
		worker = inj_choose_tid(pid, NULL, 0);
		err = worker > 0 ? inj_stop_thread(&p, worker) : -ESRCH;
		ti = 0;
		if (!err)
			rc = (int32_t)rt_call(&p, &ti, prep, pa, 2, why, sizeof(why), 1, &err);
	}
	if (!err && rc < 0) {
		inj_read(&p, inj_last_data(&p), why, sizeof(why));
		why[sizeof(why) - 1] = 0;
		inj_close(&p);
		cli_err("process %d (%s): detaching failed: %s", (int)pid, comm,
			why[0] ? why : strerror((int)-rc));
		return 1;
	}
	/* Every thread out of the runtime's code: ask with the process
	 * standing; if one is inside, let it run a moment and ask again. */
	rc = -EBUSY;
	for (int tries = 0; !err && rc == -EBUSY && tries < 100; tries++) {
		if (tries) {
			inj_resume_all(&p);
			struct timespec ts = {0, 5000000};
			nanosleep(&ts, NULL);
		}
		uint64_t s0 = now_ns();
		if ((err = inj_stop_all(&p)))
			break;
		/* A breakpoint of the last patching whose SIGTRAP is still on its
		 * way must meet the runtime's handler, not the program's SIG_DFL
		 * that finish puts back: let it be delivered first. */
		int trap = 0;
		for (size_t i = 0; i < p.n && !trap; i++)
			trap = inj_trap_pending(&p, i);
		if (trap) {
			rc = -EBUSY;
			snprintf(why, sizeof(why), "a thread has a breakpoint trap on its way");
			continue;
		}
		struct inj_ipref *refs = NULL;
		size_t nips = 0;
		if ((err = inj_collect_iprefs(&p, &refs, &nips)))
			break;
		/* per thread {tp, sp, stack lo, stack hi, link}: attach.h */
		enum { TW = DYNFTRACE_DETACH_THREAD_WORDS };
		size_t ntp = p.n, tpo = sizeof(why) + nips * sizeof(uint64_t);
		size_t blen = tpo + ntp * TW * sizeof(uint64_t);
		char *blob = calloc(1, blen);
		if (!blob) {
			free(refs);
			err = -ENOMEM;
			break;
		}
		for (size_t i = 0; i < nips; i++)
			memcpy(blob + sizeof(why) + i * sizeof(uint64_t), &refs[i].ip,
			       sizeof(uint64_t));
		for (size_t i = 0; i < ntp; i++) {
			uint64_t r[TW];
			r[0] = inj_thread_pointer(&p, i);
			inj_thread_stack(&p, i, &r[1], &r[2], &r[3]);
			r[4] = inj_link(&p, i);
			memcpy(blob + tpo + i * sizeof(r), r, sizeof(r));
		}
		uint64_t fa[6] = {
		    INJ_DATA + sizeof(why), nips, INJ_DATA + tpo, ntp, INJ_DATA, sizeof(why)};
		size_t fi = inj_pick_thread(&p);
		rc = (int32_t)rt_call(&p, &fi, fin, fa, 6, blob, blen, 0, &err);
		if (!err && rc < 0) {
			inj_read(&p, inj_last_data(&p), why, sizeof(why));
			why[sizeof(why) - 1] = 0;
		}
		/* Threads in a relocated entry's copy go to the original
		 * instruction, written back. */
		if (!err && rc == 0 && nips &&
		    !(err = inj_read(&p, inj_last_data(&p) + sizeof(why), blob + sizeof(why),
				     nips * sizeof(uint64_t))))
			for (size_t i = 0; i < nips && !err; i++) {
				uint64_t ip;
				memcpy(&ip, blob + sizeof(why) + i * sizeof(ip), sizeof(ip));
				if (ip != refs[i].ip && (err = inj_set_ipref(&p, &refs[i], ip)))
					snprintf(p.why, sizeof(p.why),
						 "cannot move thread %d back from a relocated "
						 "entry: %s",
						 (int)p.t[refs[i].thread].tid, strerror(-err));
			}
		free(refs);
		/* The threads that block SIGTRAP (virtually, for the runtime)
		 * block it for real again; a link register that held a hooked
		 * return gets the original. */
		if (!err && rc == 0 &&
		    !inj_read(&p, inj_last_data(&p) + tpo, blob + tpo, ntp * TW * sizeof(uint64_t)))
			for (size_t i = 0; i < ntp; i++) {
				uint64_t r[TW], m, trapbit = UINT64_C(1) << (SIGTRAP - 1);
				memcpy(r, blob + tpo + i * sizeof(r), sizeof(r));
				if (r[0] == 1 && !inj_sigmask(&p, i, &m, NULL)) {
					m |= trapbit;
					inj_sigmask(&p, i, NULL, &m);
				}
				if (r[4] != inj_link(&p, i))
					inj_set_link(&p, i, r[4]);
			}
		free(blob);
		*stop_ns = now_ns() - s0;
	}
	if (err) {
		cli_err("process %d (%s): %s", (int)pid, comm, p.why);
		inj_close(&p);
		return 1;
	}
	if (rc < 0) {
		inj_close(&p);
		printf("detached from process %d (%s), but the runtime stays loaded, inert: %s\n",
		       (int)pid, comm, why[0] ? why : strerror((int)-rc));
		return 0;
	}
	/* Unload while the program runs: dlclose runs destructors. Our handle
	 * is the attach's; a NOLOAD open gives it back (and counts once). */
	ti = inj_pick_thread(&p);
	uint64_t oa[2] = {INJ_DATA, RTLD_NOW | RTLD_NOLOAD};
	uint64_t h = call_ret(&p, &ti, dl, oa, 2, runtime, strlen(runtime) + 1, 1, &err);
	for (int k = 0; !err && h && k < 2; k++) {
		uint64_t ca[1] = {h};
		call_ret(&p, &ti, dc, ca, 1, NULL, 0, 1, &err);
	}
	inj_close(&p);
	if (err) {
		cli_err("process %d (%s): unloading the runtime failed: %s", (int)pid, comm, p.why);
		return 1;
	}
	*unloaded = !maps_have(pid, so);
	if (!*unloaded)
		printf("detached from process %d (%s), but the loader kept the runtime mapped "
		       "(inert)\n",
		       (int)pid, comm);
	return 0;
}

static const char detach_usage[] =
    "usage: dynftrace detach PID\n"
    "Stop all tracing of PID, put every site back to a NOP, close its control\n"
    "endpoint and unload the runtime that `dynftrace attach` loaded into it.\n";

int cmd_detach(int argc, char **argv)
{
	if (argc == 2 && cli_is_help(argv[1])) {
		fputs(detach_usage, stdout);
		return 0;
	}
	if (!ARCH_INJ_SUPPORTED) {
		cli_err("detach: not implemented on this architecture (x86-64, aarch64 and riscv64 "
			"only)");
		return 1;
	}
	uint64_t pid;
	if (argc != 2 || cli_parse_uint(argv[1], INT_MAX, &pid)) {
		fputs(detach_usage, stderr);
		return 2;
	}
	int unloaded;
	uint64_t ns;
	/* The children it forked since the attach carry the runtime too (as
	 * record -p does at its end): they go first. */
	int kids = runtime_loaded((pid_t)pid) == 1 ? detach_descendants((pid_t)pid) : 0;
	int rc = detach_process((pid_t)pid, &unloaded, &ns);
	if (kids)
		printf("detached from %d process%s it forked\n", kids, kids == 1 ? "" : "es");
	if (rc)
		return rc;
	if (unloaded) {
		char comm[64];
		comm_of((pid_t)pid, comm, sizeof(comm));
		printf("detached from process %d (%s): stopped %.3f ms; the runtime is unloaded\n",
		       (int)pid, comm, ns / 1e6);
	}
	return 0;
}

/* PID's arguments, as a NULL-terminated vector in one allocation (one
 * empty argument if they cannot be read: the attach says why). NULs at the end are dropped, as ps
 * drops them: a process that rewrites its argv for a title (redis, nginx,
 * postgres) pads the rest of it with NULs, which would read as empty
 * arguments. */
char **attach_cmdline(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t cap = 8192, n = 0;
	char *buf = malloc(cap);
	while (fd >= 0 && buf) {
		if (n + 1 == cap) {
			char *nb = cap < (1u << 20) ? realloc(buf, cap * 2) : NULL;
			if (!nb)
				break; /* over 1 MiB: the rest is left out */
			buf = nb;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	if (fd >= 0)
		close(fd);
	if (!buf)
		return NULL;
	while (n > 0 && buf[n - 1] == 0)
		n--;
	buf[n] = 0;
	size_t argc = 0;
	for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
		argc++;
	argc += !argc;
	char **v = malloc((argc + 1) * sizeof(*v) + n + 1);
	if (v) {
		char *s = (char *)(v + argc + 1);
		memcpy(s, buf, n + 1);
		size_t k = 0;
		for (size_t i = 0; k < argc; i += strlen(s + i) + 1)
			v[k++] = s + i;
		v[k] = NULL;
	}
	free(buf);
	return v;
}

/* PID's parent, or -1. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the name may hold anything */
	int ppid;
	return p && sscanf(p + 1, " %*c %d", &ppid) == 1 ? (pid_t)ppid : -1;
}

int detach_descendants(pid_t pid)
{
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		pid_t p = (pid_t)atoi(de->d_name);
		if (p <= 0 || p == pid)
			continue;
		/* below PID, at any depth */
		pid_t q = p;
		for (int k = 0; k < 64 && q > 1 && q != pid; k++)
			q = parent_of(q);
		if (q != pid || runtime_loaded(p) != 1)
			continue;
		int unloaded;
		uint64_t ns;
		n += n < 1000 && !detach_process(p, &unloaded, &ns);
	}
	closedir(d);
	return n;
}
