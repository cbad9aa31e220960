/* SPDX-License-Identifier: MIT */
/*
 * shm_watch.h - record's watch over the session's trace buffers while the
 * program runs and once it has ended (docs/FORMAT.md; lib/ring/ring.c, section
 * 6): each buffer is a file in a directory of /dev/shm; the buffers of a
 * process that died without flushing (SIGKILL, OOM killer, _exit) are
 * recovered into its streams (ring_salvage) and removed, and the info file
 * says what such a process left ("salvaged:", "lost:", "unflushed:").
 *
 *   shm_watch_mkdir(shmdir)          before the program starts
 *   shm_watch_init(&w, ..., pid)     once it runs
 *   shm_watch_scan(&w, 0, 0)         now and then (record: every second)
 *   shm_watch_scan(&w, 1, status)    after it ended
 *   shm_watch_free(&w)
 *
 * Only record's main thread uses a watch.
 */
#ifndef DYNFTRACE_SHM_WATCH_H
#define DYNFTRACE_SHM_WATCH_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

/* What the watch knows of the session; the fields are shm_watch.c's. */
struct shm_watch {
	const char *dir, *shmdir;
	char ctf[PATH_MAX + 8];
	pid_t main;
	off_t info_off; /* the info file is read up to here (whole lines) */
	struct img_ent *imgs;
	size_t nimgs;
};

/* Make the session's buffer directory (/dev/shm/dynftrace-PID.XXXXXX) in
 * OUT, after removing those of recorders that died; "" when there is none:
 * the runtime then uses ordinary memory, and a death without flush loses
 * what it held, which the info file then says. */
void shm_watch_mkdir(char *out, size_t size);

/* Watch the program MAIN recording into the session DIR (ABSDIR: the same,
 * absolute) with its buffers in SHMDIR (from shm_watch_mkdir, maybe ""). */
void shm_watch_init(struct shm_watch *w, const char *dir, const char *shmdir, const char *absdir,
		    pid_t main);

/*
 * Recover the buffer files of processes that are gone without flushing,
 * and say what such processes lost: each file once, then removed. FINAL:
 * the program has ended with STATUS (a wait status); MAIN counts too, and
 * files of processes that still run are only unlinked. Before that, MAIN
 * is left for the end (its status gives the signal).
 */
void shm_watch_scan(struct shm_watch *w, int final, int status);

void shm_watch_free(struct shm_watch *w);

#endif
