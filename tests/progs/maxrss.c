/* SPDX-License-Identifier: MIT */
/* maxrss.c - maxrss CMD [ARGS...]: run CMD and print, on stderr after
 * whatever CMD printed, "maxrss KIB" (the peak resident set of CMD as the
 * kernel counted it: wait4's ru_maxrss) and "anon KIB" (the largest
 * RssAnon seen in /proc/PID/status, read every millisecond: a lower bound,
 * only for diagnostics). Exits with CMD's status, 127 if it cannot run.
 * Used by tests/sh/replay-memory.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long rss_anon(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "RssAnon:", 8))
			kb = strtol(line + 8, NULL, 10);
	fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	struct timespec ms = {0, 1000000};
	struct rusage ru;
	long anon = 0, a;
	int status;
	pid_t pid, r;

	if (argc < 2) {
		fprintf(stderr, "usage: maxrss CMD [ARGS...]\n");
		return 2;
	}
	pid = fork();
	if (pid < 0)
		return 127;
	if (pid == 0) {
		execvp(argv[1], argv + 1);
		_exit(127);
	}
	while ((r = wait4(pid, &status, WNOHANG, &ru)) == 0) {
		a = rss_anon(pid);
		if (a > anon)
			anon = a;
		nanosleep(&ms, NULL);
	}
	if (r < 0)
		return 127;
	fprintf(stderr, "maxrss %ld\nanon %ld\n", ru.ru_maxrss, anon);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
