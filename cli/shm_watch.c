// SPDX-License-Identifier: MIT
/*
 * shm_watch.c - record's watch over the shared trace buffers of a session
 * (see shm_watch.h; the files' layout is lib/ring/ring.c's, section 6, read by
 * lib/ring/ring_salvage.c).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "ring.h"
#include "shm_watch.h"

#define SHM_BASE "/dev/shm"

/*
 * Is the process PID that started at START (/proc's starttime; 0: unknown)
 * gone? A zombie counts as gone once it has no thread left running (a main
 * thread that called pthread_exit is a zombie while the others still run);
 * a process with another start time is a later one with the same pid, so
 * START's is gone. Without START, a pid used again for another process
 * looks alive: its buffers are then only removed at the end, not recovered.
 */
static int pid_gone(pid_t pid, uint64_t start)
{
	struct ring_proc p;
	int err;

	if (kill(pid, 0) && errno == ESRCH)
		return 1;
	err = ring_proc_stat(pid, &p);
	if (err)
		return err == -ENOENT;
	if (start && p.start != start)
		return 1;
	return (p.state == 'Z' || p.state == 'X') && p.threads <= 1;
}

/* Directories of recorders that died (killed themselves): their pid is in the name. */
static void shm_clean_stale(void)
{
	DIR *d = opendir(SHM_BASE);
	struct dirent *e;
	char path[PATH_MAX];
	struct stat st;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char *end;
		long pid;

		if (strncmp(e->d_name, "dynftrace-", 10))
			continue;
		pid = strtol(e->d_name + 10, &end, 10);
		if (pid <= 0 || *end != '.' || !pid_gone((pid_t)pid, 0))
			continue;
		snprintf(path, sizeof(path), SHM_BASE "/%s", e->d_name);
		if (!lstat(path, &st) && S_ISDIR(st.st_mode) && st.st_uid == geteuid())
			cli_rm_tree(path);
	}
	closedir(d);
}

void shm_watch_mkdir(char *out, size_t size)
{
	shm_clean_stale();
	snprintf(out, size, SHM_BASE "/dynftrace-%d.XXXXXX", (int)getpid());
	if (!mkdtemp(out))
		out[0] = 0;
}

/* A process image of the session, as its runtime's info lines tell it
 * (docs/FORMAT.md): "started:", then "flushed:" or "signal:" once its
 * buffers are written; "noshm:" when one of them is ordinary memory. */
struct img_ent {
	char img[32]; /* "PID" or "PID.K" */
	pid_t pid;
	uint64_t start; /* its process's start time; 0 unknown */
	int flushed;	/* the last of its lines says flushed */
	int noshm;	/* a buffer of this recording was not a shared file */
	int salvaged;	/* record recovered a buffer of it */
	int gone;	/* this scan: the process is gone, say what it left */
	int said;	/* its "unflushed:" line is written (or nothing to say) */
};

static struct img_ent *img_find(struct shm_watch *w, const char *img, size_t len, int add)
{
	struct img_ent *e;

	if (!len || len >= sizeof(w->imgs[0].img))
		return NULL;
	for (size_t i = 0; i < w->nimgs; i++)
		if (!strncmp(w->imgs[i].img, img, len) && !w->imgs[i].img[len])
			return &w->imgs[i];
	if (!add)
		return NULL;
	e = realloc(w->imgs, (w->nimgs + 1) * sizeof(*e));
	if (!e)
		return NULL;
	w->imgs = e;
	e = &w->imgs[w->nimgs++];
	memset(e, 0, sizeof(*e));
	memcpy(e->img, img, len);
	e->pid = (pid_t)strtol(e->img, NULL, 10);
	return e;
}

/* Read the lines the runtimes appended to the info file since last time. */
static void info_catch_up(struct shm_watch *w)
{
	static const char *const keys[] = {"started: ", "flushed: ", "signal: ", "noshm: "};
	char path[PATH_MAX], *line = NULL;
	size_t cap = 0;
	ssize_t len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/info", w->dir);
	f = fopen(path, "re");
	if (!f || fseeko(f, w->info_off, SEEK_SET)) {
		if (f)
			fclose(f);
		return;
	}
	while ((len = getline(&line, &cap, f)) > 0 && line[len - 1] == '\n') {
		w->info_off += len;
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			size_t kl = strlen(keys[k]);
			const char *v = line + kl;
			struct img_ent *e;

			if (strncmp(line, keys[k], kl))
				continue;
			e = img_find(w, v, strspn(v, "0123456789."), 1);
			if (!e || e->pid <= 0)
				break;
			if (k == 0) { /* it records (again, after a failed exec) */
				e->start = strtoull(v + strlen(e->img), NULL, 10);
				e->flushed = e->noshm = e->said = 0;
			} else if (k == 3) {
				e->noshm = 1;
			} else {
				e->flushed = 1;
			}
			break;
		}
	}
	free(line);
	fclose(f);
}

/*
 * Recover the buffer files of processes that are gone without flushing,
 * and say what such processes lost (docs/FORMAT.md): each file once, then
 * removed. FINAL: the program has ended with STATUS; process MAIN counts
 * too, and files of processes that still run (descendants that outlive
 * the program) are only unlinked: their mappings stay, they flush as
 * usual. Before that, MAIN is left for the end (its status gives the
 * signal).
 *
 * A process that flushes at exit (or a fatal signal) marks every buffer
 * flushed (lost_reported, in the file) before it unlinks the file and
 * writes "flushed:", and it does all that before it is gone: a file read
 * once its process is gone is either flushed (nothing done) or not
 * (recovered); a file the runtime unlinked meanwhile was flushed.
 */
void shm_watch_scan(struct shm_watch *w, int final, int status)
{
	char path[PATH_MAX], line[160];
	char(*gone)[256] = NULL;
	size_t ngone = 0;
	DIR *d = *w->shmdir ? opendir(w->shmdir) : NULL;
	struct dirent *de;
	struct sigaction ign = {.sa_handler = SIG_IGN}, old;

	/* First the info file: an image's "started:" line comes before its files. */
	info_catch_up(w);
	while (d && (de = readdir(d))) {
		const char *dash = strrchr(de->d_name, '-');
		struct img_ent *e;
		pid_t pid;
		void *g;

		if (de->d_name[0] == '.' || !dash)
			continue;
		pid = (pid_t)strtol(de->d_name, NULL, 10);
		e = img_find(w, de->d_name, (size_t)(dash - de->d_name), 0);
		if (pid <= 0 || (!final && pid == w->main))
			continue;
		snprintf(path, sizeof(path), "%s/%s", w->shmdir, de->d_name);
		if (!pid_gone(pid, e ? e->start : 0)) {
			if (final)
				unlink(path);
			continue;
		}
		g = realloc(gone, (ngone + 1) * sizeof(*gone));
		if (!g)
			break;
		gone = g;
		snprintf(gone[ngone++], sizeof(*gone), "%s", de->d_name);
	}
	if (d)
		closedir(d);
	for (size_t i = 0; i < w->nimgs; i++) {
		struct img_ent *e = &w->imgs[i];

		e->gone = !e->said && !e->flushed && (final || e->pid != w->main) &&
			  pid_gone(e->pid, e->start);
	}
	/* Everything a gone process wrote is in the file by now. */
	info_catch_up(w);

	/* a file size limit: EFBIG (counted lost), not death */
	sigaction(SIGXFSZ, &ign, &old);
	for (size_t i = 0; i < ngone; i++) {
		struct ring_salvage r;
		struct img_ent *e;
		int err;

		snprintf(path, sizeof(path), "%s/%s", w->shmdir, gone[i]);
		err = ring_salvage(path, w->ctf, &r);
		if (err == -ENOENT)
			continue; /* flushed and removed by its runtime meanwhile */
		if (err && err != -EINVAL)
			cli_err("warning: recovering the trace buffer of thread %d: %s", (int)r.tid,
				strerror(-err));
		if (err != -EINVAL && !r.flushed) {
			snprintf(line, sizeof(line), "salvaged: %s %d %" PRIu64 "\n", r.img,
				 (int)r.tid, r.events);
			cli_info_append(w->dir, line);
			if (r.lost) {
				snprintf(line, sizeof(line), "lost: %d %d %" PRIu64 "\n",
					 (int)r.pid, (int)r.tid, r.lost);
				cli_info_append(w->dir, line);
			}
			if (r.overwritten) {
				snprintf(line, sizeof(line), "overwritten: %d %d %" PRIu64 "\n",
					 (int)r.pid, (int)r.tid, r.overwritten);
				cli_info_append(w->dir, line);
			}
			e = img_find(w, r.img, strlen(r.img), 1);
			if (e) {
				e->salvaged = 1;
				e->gone = !e->said;
			}
		}
		unlink(path);
	}
	sigaction(SIGXFSZ, &old, NULL);
	free(gone);

	/* What each gone process left: recovered from its files, or lost
	 * (a buffer in ordinary memory: "noshm:", also written when there is
	 * no directory for files). The signal is known for MAIN only. */
	for (size_t i = 0; i < w->nimgs; i++) {
		struct img_ent *e = &w->imgs[i];
		int is_main = final && e->pid == w->main, sig = 0, lost;

		if (!e->gone)
			continue;
		e->gone = 0;
		if (e->flushed && !e->salvaged)
			continue;
		e->said = 1;
		if (is_main && WIFSIGNALED(status))
			sig = WTERMSIG(status);
		lost = e->noshm;
		if (!lost && !e->salvaged && !sig)
			continue; /* nothing was buffered */
		snprintf(line, sizeof(line), "unflushed: %d %d %s\n", (int)e->pid, sig,
			 lost ? "lost" : "recovered");
		cli_info_append(w->dir, line);
	}
}

void shm_watch_init(struct shm_watch *w, const char *dir, const char *shmdir, const char *absdir,
		    pid_t main)
{
	memset(w, 0, sizeof(*w));
	w->dir = dir;
	w->shmdir = shmdir;
	snprintf(w->ctf, sizeof(w->ctf), "%s/ctf", absdir);
	w->main = main;
}

void shm_watch_free(struct shm_watch *w)
{
	free(w->imgs);
	w->imgs = NULL;
	w->nimgs = 0;
}
