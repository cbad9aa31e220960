/* SPDX-License-Identifier: MIT */
/*
 * ctl_client.h - the client side of the control protocol (docs/CONTROL.md),
 * shared by `dynftrace ctl`, `ps` and `pipe`. Implemented in ctl_client.c
 * (ctl_stream_pipe in cmd_ctl.c).
 *
 * Every wait has a deadline (a process may be stopped, or a listener may
 * never answer): connecting, sending a request and each read of an answer
 * wait at most the connection's timeout. Times are nanoseconds of
 * CLOCK_MONOTONIC; a timeout or deadline of 0 means none.
 */
#ifndef DYNFTRACE_CTL_CLIENT_H
#define DYNFTRACE_CTL_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* What `--timeout` changes (at most CTL_TIMEOUT_MAX_S; 0: no limit). */
#define CTL_TIMEOUT_DEFAULT_NS (5 * (int64_t)1000000000)
#define CTL_TIMEOUT_MAX_S      86400

/* A connection with a small read buffer. */
struct ctl_conn {
	int fd; /* non-blocking; -1 when closed */
	pid_t pid;
	int64_t timeout_ns; /* the longest wait of each step, 0: none */
	int stream;	    /* ctl_response: no deadline once OK came (trace_pipe) */
	int untimed;	    /* inside such a response now */
	char buf[4096];
	size_t off, len;
};

int64_t ctl_now_ns(void);
/* now + TIMEOUT_NS, or 0 (none) when TIMEOUT_NS is 0. */
int64_t ctl_deadline(int64_t timeout_ns);
/* The poll() timeout until DEADLINE: ms rounded up, -1 for none. */
int ctl_poll_ms(int64_t deadline);
/* "process PID did not answer within T s (stopped? use --timeout)" */
void ctl_timeout_msg(pid_t pid, int64_t timeout_ns, char *err, size_t errlen);

/* An unconnected C whose steps wait at most TIMEOUT_NS (0: no limit). */
void ctl_conn_init(struct ctl_conn *c, int64_t timeout_ns);

/*
 * Connect C (from ctl_conn_init) to the control socket of PID: the one its
 * environment names ($XDG_RUNTIME_DIR/dynftrace/PID.sock) or
 * /tmp/dynftrace-UID/PID.sock, and check that PID itself serves it
 * (SO_PEERCRED). 0, or -errno with ERR set to one sentence (-ESRCH no such
 * process, -ENOENT no control socket, -EACCES not allowed, -ECONNREFUSED a
 * stale socket, -ETIMEDOUT the process did not take the connection in time).
 */
int ctl_connect(pid_t pid, struct ctl_conn *c, char *err, size_t errlen);
/* Connect to the socket at PATH (served by PID). Same returns. */
int ctl_connect_path(pid_t pid, const char *path, struct ctl_conn *c, char *err, size_t errlen);
/* One attempt, never waiting: as ctl_connect_path, or -EAGAIN when the
 * listen queue is full (C keeps its socket for the next attempt). */
int ctl_connect_try(pid_t pid, const char *path, struct ctl_conn *c, char *err, size_t errlen);
void ctl_close(struct ctl_conn *c);

/* The request line of VERB FILE (LEN bytes of data follow for WRITE and
 * APPEND) into LINE: its length, or -ENAMETOOLONG. */
int ctl_request_line(char *line, size_t cap, const char *verb, const char *file, size_t len);
/* Send VERB FILE [DATA]: READ or STREAM without data, WRITE or APPEND with
 * LEN bytes. 0 or -errno (-ETIMEDOUT: not taken in time; -EINTR). */
int ctl_send(struct ctl_conn *c, const char *verb, const char *file, const void *data, size_t len);

/*
 * Read one response. OK: every chunk is given to SINK (which returns 0, or
 * non-zero to stop), until the end; returns 0. ERR: returns 1 with the
 * server's message in ERR. Otherwise a negative errno with ERR set:
 * -ETIMEDOUT (nothing came for the timeout; ERR names the pid and the
 * timeout), -EPROTO (the connection broke or the answer is malformed),
 * -ECANCELED (SINK stopped); -EINTR when a signal handler ran (ERR unset).
 */
int ctl_response(struct ctl_conn *c, int (*sink)(const char *p, size_t n, void *data), void *data,
		 char *err, size_t errlen);

/*
 * A whole answer to a READ at P (N bytes received so far), for callers that
 * read several connections at once: its length, with the first line of its
 * data in OUT; 0 while incomplete; -1 when it is ERR or malformed.
 */
long ctl_parse_small(const char *p, size_t n, char *out, size_t outlen);

/* A sink that writes to the FILE * in DATA. */
int ctl_sink_file(const char *p, size_t n, void *data);
/* A sink that appends to the struct ctl_text in DATA. */
struct ctl_text {
	char *p;
	size_t len;
};
int ctl_sink_text(const char *p, size_t n, void *data);

/* Send READ WHAT (trace_pipe) and copy the stream to stdout until SIGINT,
 * SIGTERM or SIGHUP, or until the process ends. The timeout covers the
 * request and the first answer, not the wait for events. Returns the exit
 * status. */
int ctl_stream_pipe(struct ctl_conn *c, const char *what);

/* The options the commands that talk to a process (ctl, pipe, ps) share, at
 * ARGV[*I]: -h/--help (prints USAGE) and --timeout SECONDS (sets
 * *TIMEOUT_NS). CLI_OPT_TAKEN, CLI_OPT_NONE, or the exit status to end with
 * (cli.h). */
int ctl_cmd_opt(const char *usage, int argc, char **argv, int *i, int64_t *timeout_ns);

/* The directories control sockets live in for UID with runtime dir XDG
 * (may be NULL): up to 2 paths into DIRS (each PATH_MAX). Returns how many. */
int ctl_socket_dirs(uid_t uid, const char *xdg, char dirs[][4096]);

#endif
