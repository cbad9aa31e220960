/* SPDX-License-Identifier: MIT */
/* attach.h - loading the runtime into a running process (cmd_attach.c),
 * shared by attach, detach, record -p and live -p. */
#ifndef DYNFTRACE_CLI_ATTACH_H
#define DYNFTRACE_CLI_ATTACH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct attach_result {
	size_t sites;	    /* sites the runtime holds */
	size_t threads;	    /* threads stopped */
	size_t moved;	    /* threads or signal frames moved out of NOP runs or
			       relocated entries */
	size_t relocated;   /* entries relocated (-P) */
	size_t refused;	    /* entries selected (-P) that could not be */
	size_t unblocked;   /* threads whose real mask lost SIGTRAP */
	uint64_t stop_ns;   /* every thread stopped, before the load */
	uint64_t worker_ns; /* the loading thread held */
	uint64_t commit_ns; /* every thread stopped for the conversion */
};

/* KEY=VALUE appended to the settings block. 0 or -ENOMEM. */
int attach_config_add(char **buf, size_t *len, const char *key, const char *val);
/* The settings every attach passes for PID: where its control socket
 * goes (its own XDG_RUNTIME_DIR), DYNFTRACE_VERBOSE if we have it. */
void attach_config_target(pid_t pid, char **cfg, size_t *len);
/* PID's command line as a NULL-terminated vector (malloc'd, one block). */
char **attach_cmdline(pid_t pid);
/* Detach every process below PID that a fork gave the runtime: count. */
int detach_descendants(pid_t pid);
/* Refuse what cannot work (one sentence printed): 0 or 1. */
int attach_check(pid_t pid, const char *runtime, int patch);
/* Where the runtime is, under the name that tells it it was attached. */
int attach_runtime_path(char *buf, size_t n);
/* Attach with settings CFG (CFGLEN bytes): 0, or 1 with the reason said. */
int attach_process(pid_t pid, const char *cfg, size_t cfglen, struct attach_result *res);
/* Take the runtime out: 0, or 1 with the reason said. UNLOADED: 1 if it
 * was unmapped, 0 if it stays loaded and inert (WHY said). */
int detach_process(pid_t pid, int *unloaded, uint64_t *stop_ns);

#endif
