/* SPDX-License-Identifier: MIT */
/*
 * trace_session.h - a session directory opened (docs/FORMAT.md): the bottom
 * layer of the reader.
 *
 * tr_open() reads the text files (info, sites-*.txt, maps-*.txt, the uuid of
 * ctf/metadata) and maps every ctf/stream-* file read-only, one struct
 * tr_stream each. Nothing is decoded here: trace_stream.h decodes a stream,
 * trace_merge.h merges streams and walks their call stacks.
 *
 * Nothing in the files is trusted: a damaged text file fails tr_open() with
 * one sentence in s->err naming the file and the line. Errors are negative
 * errno values: -ENOENT (no such session), -EINVAL (damaged file), -ENOMEM.
 * Not thread-safe: one session per thread.
 */
#ifndef DYNFTRACE_TRACE_SESSION_H
#define DYNFTRACE_TRACE_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define TR_ERR_LEN 512

/* Format a message into ERR (TR_ERR_LEN bytes), for the reader's files. */
void tr_set_err(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One line of sites-KEY.txt: "ID ADDR SIZE NAME OBJECT". */
struct tr_site {
	uint32_t id;
	uint64_t addr, size;
	const char *name; /* never NULL */
	const char *obj;  /* "" when absent */
	char *dname;	  /* demangled name, filled by tr_func_name() */
	int dname_done;
};

/* One line of maps-KEY.txt: "START END BIAS PATH". */
struct tr_map {
	uint64_t start, end, bias;
	const char *path;
	struct elf_image *img; /* loaded on demand for symbols; NULL until then */
	int img_failed;
};

/* One process image of the session. KEY is the file-name key: "PID", or
 * "PID.N" for the N-th image after an exec, if the runtime names them so. */
struct tr_proc {
	char key[32];
	pid_t pid;
	int has_sites;
	struct tr_site *sites; /* sorted by id */
	size_t nsites;
	int dense;		  /* sites[i].id == i for all i */
	struct tr_site **by_addr; /* sorted by addr, for caller lookups */
	struct tr_map *maps;	  /* sorted by start */
	size_t nmaps;
	char *text; /* backing storage of names and paths */
	char *maps_text;
	/* fork-KEY.txt: a fork child's open frames, inherited from the thread
	 * that forked (outermost first); their returns are in the child's
	 * stream of thread PID, their entries in the parent's. */
	pid_t parent;	  /* 0: not a fork child, or nothing was open */
	uint64_t fork_ns; /* when it forked */
	struct tr_inherit {
		uint32_t func;
		uint64_t ts; /* entry time, in the parent */
	} * inherit;
	size_t ninherit;
	char *fork_path; /* for the check of its ids once the sites are read */
	/* tracepoints-KEY.txt, read on first use by tr_tracepoint_desc() */
	int tp_loaded;
	char *tp_text;
	char **tp_lines; /* by index: "NAME K:S:F ..." inside tp_text, or NULL */
	size_t ntp;
};

/*
 * One ctf/stream-* file, mapped by tr_open(). The identity and the mapping
 * are set here; the cursor and the counts below them belong to the decoder
 * (trace_stream.c), which is the only code that changes them.
 */
struct tr_stream {
	struct tr_session *sess;
	struct tr_proc *proc;
	size_t proc_idx;
	char *path; /* as shown in messages: "DIR/ctf/stream-P-T" */
	char *name; /* "stream-KEY-TID[.N]", KEY being "PID" or "PID.K" */
	pid_t pid, tid;
	unsigned gen; /* N of "stream-KEY-TID.N" (a reused thread id), else 0 */
	const uint8_t *data;
	uint64_t size;
	char pre_err[TR_ERR_LEN]; /* found at open (no sites file): reported at the start */
	/* cursor */
	uint64_t pkt;			/* offset of the current packet */
	uint64_t pkt_content, pkt_next; /* content end, next packet's offset */
	uint64_t pos;			/* next event */
	uint64_t released;		/* the mapping's pages below were given back */
	int in_packet;
	int done;  /* TR_END delivered */
	int ended; /* no more events; TR_END pending */
	uint64_t prev_ts, last_ts;
	size_t inherit_pos; /* inherited frames delivered (proc->inherit) */
	uint64_t discarded;
	uint64_t seq;
	int have_packet;
	int failed;	   /* err holds the damage */
	uint64_t fail_off; /* failed: the byte offset of the damage */
	char err[TR_ERR_LEN];
	/* counts since the last rewind, complete once TR_END was read */
	uint64_t nevents; /* events decoded (not counting DISCARDED/END) */
	uint64_t ncalls;  /* ENTRY + FUNCTION + CALL events */
	uint64_t nlost;	  /* sum of LOST events' counts */
	uint64_t npackets;
	uint64_t first_ts;
	int have_first;
	/* kept across rewinds: set when TR_END was delivered once */
	int complete;
	uint64_t final_discarded, final_nlost, final_nevents, final_ncalls;
	/* A -t session's stream (whole calls, written at their end): all its
	 * events in time order, each call as an entry at its start and an
	 * exit at its end (trace_stream.c: calls_expand). Made at the first
	 * read, shared by forks, freed by tr_close. */
	struct tr_event *xev;
	size_t nxev, xpos;
};

struct tr_lost_line {
	pid_t pid, tid;
	uint64_t count;
	uint64_t overwritten; /* of COUNT: replaced by newer events (overwrite mode) */
	uint64_t dropped;     /* of COUNT: dropped by the writer (its buffer was full) */
};

/* "unflushed: PID SIG MODE": process PID ended without the runtime's flush
 * (SIG: the signal that killed it, 0 unknown); RECOVERED: its buffers were
 * read back from shared memory by record, else what they held is lost and
 * not counted. "salvaged: IMG TID EVENTS" lines add up in EVENTS. */
struct tr_unflushed {
	pid_t pid;
	int sig;
	int recovered;
	uint64_t events;
};

struct tr_info {
	int version;
	char *command, *tracer, *filter, *notrace;
	char *trigger;	/* record -T: "FUNC@ACTIONS;..." */
	char *argument; /* record -A/-R: "FUNC@ITEMS;..." */
	uint64_t depth, time_filter_ns, buffer_kb, start_ns, end_ns;
	int overwrite, has_start, has_end;
	char (*pids)[32]; /* "pid:" lines: "PID" or "PID.K" (an exec'd image) */
	size_t npids;
	int has_exit, exit_signaled, exit_code;
	pid_t exit_pid;
	/* record -p: "attached: PID at_ns T stopped_ns S sites N threads N",
	 * "detached: PID (ended | end_ns T stopped_ns S children N)" */
	int has_attach, has_detach, detach_ended;
	pid_t attach_pid;
	uint64_t attach_ns, attach_stop_ns, attach_sites, detach_ns, detach_stop_ns,
	    detach_children;
	struct tr_lost_line *lost;
	size_t nlost;
	struct tr_unflushed *unflushed;
	size_t nunflushed;
	uint64_t salvaged; /* events of "salvaged:" lines (all processes) */
};

struct tr_session {
	char *dir;
	struct tr_info info;
	uint8_t uuid[16];
	int has_uuid;
	int has_metadata;
	struct tr_proc *procs;
	size_t nprocs;
	struct tr_stream *streams; /* sorted by pid, then tid */
	size_t nstreams;
	char err[TR_ERR_LEN];
	struct tr_enums *enums; /* DIR/enums.txt, read on first use (args_fmt.c) */
	int enums_read;
};

/*
 * Open the session in DIR. Returns 0, or -errno with s->err holding one
 * sentence: -ENOENT (no such directory, or no info file in it), -EINVAL (a
 * damaged info, metadata, sites or maps file), -ENOMEM. A damaged stream is
 * not an error here: it fails when read. tr_close() must be called in all
 * cases.
 */
int tr_open(struct tr_session *s, const char *dir);
void tr_close(struct tr_session *s);

/* The site ID of process P, or NULL. */
const struct tr_site *tr_site(const struct tr_proc *p, uint32_t id);
/* Display name of site ID: a C++ symbol demangled as tr_demangle says
 * (0: not, 1: simple, the default, 2: full). */
extern int tr_demangle;
const char *tr_func_name(const struct tr_proc *p, uint32_t id);
/* Does a function match GLOBS by its display or its raw name? */
struct cli_globs;
int tr_func_match(const struct tr_proc *p, uint32_t id, const struct cli_globs *globs);
/*
 * Name the code at run-time address IP of process P into BUF: "func" for a
 * traced function, "func [libx.so]" or "func+0x12 [libx.so]" from the
 * object's symbols through maps-KEY.txt, "sub_1190+0x1b [prog]" for a
 * function without a symbol whose FDE holds IP (as `sites --all` names
 * it), else "0x7f..." (with the object when IP is in one). Returns BUF.
 */
const char *tr_symbolize(struct tr_proc *p, uint64_t ip, char *buf, size_t size);

/* The description of tracepoint INDEX of process P, "NAME K:S:F ...", from
 * DIR/tracepoints-KEY.txt (read on first use), or NULL. */
const char *tr_tracepoint_desc(struct tr_session *s, struct tr_proc *p, uint32_t index);

/* The "process ... before it could flush" lines of the info file, each
 * prefixed by PREFIX (several processes recovered whole after _exit share
 * one line); returns how many lines it printed. */
int tr_print_unflushed(const struct tr_session *s, FILE *out, const char *prefix);

/* Copy S into BUF with control characters shown as '?' (names and marker
 * texts come from files and go to terminals). Returns BUF. */
const char *tr_printable(const char *s, char *buf, size_t size);

#endif
