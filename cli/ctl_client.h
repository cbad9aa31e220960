/* SPDX-License-Identifier: MIT */
/*
 * ctl_client.h - the client side of the control protocol (docs/CONTROL.md),
 * shared by `dynftrace ctl`, `ps` and `pipe`. Implemented in cmd_ctl.c.
 */
#ifndef DYNFTRACE_CTL_CLIENT_H
#define DYNFTRACE_CTL_CLIENT_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* A connection with a small read buffer. */
struct ctl_conn {
	int fd;
	pid_t pid;
	char buf[4096];
	size_t off, len;
};

/*
 * Connect to the control socket of PID: the one its environment names
 * ($XDG_RUNTIME_DIR/dynftrace/PID.sock) or /tmp/dynftrace-UID/PID.sock, and
 * check that PID itself serves it (SO_PEERCRED). 0, or -errno with ERR set
 * to one sentence (-ESRCH no such process, -ENOENT no control socket,
 * -EACCES not allowed, -ECONNREFUSED a stale socket: *STALE gets its path
 * when not NULL).
 */
int ctl_connect(pid_t pid, struct ctl_conn *c, char *err, size_t errlen, char *stale,
		size_t stalelen);
/* Connect to the socket at PATH (served by PID). Same returns. */
int ctl_connect_path(pid_t pid, const char *path, struct ctl_conn *c, char *err, size_t errlen);
void ctl_close(struct ctl_conn *c);

/* Send VERB FILE [DATA]: READ or STREAM without data, WRITE or APPEND with
 * LEN bytes. 0 or -errno. */
int ctl_send(struct ctl_conn *c, const char *verb, const char *file, const void *data, size_t len);

/*
 * Read one response. OK: every chunk is given to SINK (which returns 0, or
 * non-zero to stop), until the end; returns 0. ERR: returns 1 with the
 * server's message in ERR. Returns -1 with ERR set when the connection
 * breaks (or SINK stopped: -2), -EINTR when interrupted by a signal.
 */
int ctl_response(struct ctl_conn *c, int (*sink)(const char *p, size_t n, void *data), void *data,
		 char *err, size_t errlen);

/* A sink that writes to the FILE * in DATA. */
int ctl_sink_file(const char *p, size_t n, void *data);
/* A sink that appends to the struct ctl_text in DATA. */
struct ctl_text {
	char *p;
	size_t len;
};
int ctl_sink_text(const char *p, size_t n, void *data);

/* Send READ WHAT (trace_pipe) and copy the stream to stdout until SIGINT,
 * SIGTERM or SIGHUP, or until the process ends. Returns the exit status. */
int ctl_stream_pipe(struct ctl_conn *c, const char *what);

/* The directories control sockets live in for UID with runtime dir XDG
 * (may be NULL): up to 2 paths into DIRS (each PATH_MAX). Returns how many. */
int ctl_socket_dirs(uid_t uid, const char *xdg, char dirs[][4096]);

#endif
