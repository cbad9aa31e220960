/* SPDX-License-Identifier: MIT */
/*
 * sweep_cache.c - the relocator's sweep of an object, kept between the
 * processes of one recording.
 *
 * Before entries are relocated, all of an object's code is decoded for
 * direct branches into other functions' first bytes (entries.c,
 * foreign_branches): for the C library, 1.4 MB and most of an exec'd
 * image's start-up with `-P '*@libc.so*'`. Every image a traced shell or
 * make runs does it again for the same libraries. What the sweep finds
 * near entries (a branch landing in the first SWEEP_WINDOW bytes of a
 * function, not on its first byte) is small and depends only on the
 * file, so it is kept in DYNFTRACE_RELOC_CACHE (`record` sets it to the
 * session's cache/ directory), one file per object:
 *
 *	dynftrace-sweep 1 DEV INO SIZE MTIME_NS NENTRIES NHITS
 *	TARGET FROM			(hex offsets from the load bias, NHITS lines)
 *
 * named sweep-DEV-INO.txt. A file whose first line does not match the
 * object's now (another size or time: the file was replaced) or that does
 * not parse is ignored and written again. Writers use a temporary name
 * and rename(2), so a reader sees a whole file or none; concurrent writers
 * of one object write the same content.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "sweep_cache.h"

#define SWEEP_FILE_MAX (64u << 20) /* a larger file is not ours */

static const char *cache_dir(void)
{
	const char *d = dft_getenv("DYNFTRACE_RELOC_CACHE");
	return d && d[0] == '/' ? d : NULL;
}

int sweep_key_of(const char *path, size_t nentries, struct sweep_key *k)
{
	struct stat st;
	if (!cache_dir())
		return -ENOENT;
	if (!path || path[0] != '/' || stat(path, &st) || !S_ISREG(st.st_mode))
		return -ENOENT;
	k->dev = (uint64_t)st.st_dev;
	k->ino = (uint64_t)st.st_ino;
	k->size = (uint64_t)st.st_size;
	k->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
	k->nentries = nentries;
	return 0;
}

static int file_name(const struct sweep_key *k, char *buf, size_t n)
{
	const char *d = cache_dir();
	if (!d)
		return -ENOENT;
	int l = snprintf(buf, n, "%s/sweep-%" PRIu64 "-%" PRIu64 ".txt", d, k->dev, k->ino);
	return l > 0 && (size_t)l < n ? 0 : -ENAMETOOLONG;
}

static int header(const struct sweep_key *k, size_t nhits, char *buf, size_t n)
{
	return snprintf(buf, n,
			"dynftrace-sweep 1 %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
			" %zu\n",
			k->dev, k->ino, k->size, k->mtime_ns, k->nentries, nhits);
}

/* The whole file at PATH, NUL-terminated, in *OUT (malloc'd). */
static int slurp(const char *path, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int err = -EINVAL;
	char *buf = NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > SWEEP_FILE_MAX)
		goto out;
	buf = malloc((size_t)st.st_size + 1);
	err = -ENOMEM;
	if (!buf)
		goto out;
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	err = -EIO;
	if (got != (size_t)st.st_size)
		goto out;
	buf[got] = 0;
	*out = buf;
	*len = got;
	buf = NULL;
	err = 0;
out:
	free(buf);
	close(fd);
	return err;
}

int sweep_cache_load(const struct sweep_key *k, uint64_t **hits, size_t *n)
{
	char path[4200], want[200];
	char *text = NULL;
	size_t len = 0;
	if (file_name(k, path, sizeof(path)) || slurp(path, &text, &len))
		return -ENOENT;
	int err = -EINVAL;
	uint64_t *v = NULL;
	/* The header, with the count the writer gave (not known to us yet). */
	const char *nl = memchr(text, '\n', len);
	char *end;
	if (!nl)
		goto out;
	const char *cnt = nl;
	while (cnt > text && cnt[-1] != ' ')
		cnt--;
	errno = 0;
	unsigned long long nh = strtoull(cnt, &end, 10);
	if (errno || end != nl || cnt == nl || nh > SWEEP_FILE_MAX / 4)
		goto out;
	int hl = header(k, (size_t)nh, want, sizeof(want));
	if (hl <= 0 || (size_t)hl != (size_t)(nl - text) + 1 || memcmp(text, want, (size_t)hl))
		goto out; /* another object, or another version of it */
	v = malloc((nh ? nh : 1) * 2 * sizeof(*v));
	err = -ENOMEM;
	if (!v)
		goto out;
	err = -EINVAL;
	const char *p = nl + 1;
	for (size_t i = 0; i < nh; i++) {
		for (int j = 0; j < 2; j++) {
			if (*p < '0' || *p > 'f')
				goto out;
			errno = 0;
			v[2 * i + j] = strtoull(p, &end, 16);
			if (errno || end == p || *end != (j ? '\n' : ' '))
				goto out;
			p = end + 1;
		}
	}
	if (*p)
		goto out; /* more than it says */
	*hits = v;
	*n = (size_t)nh;
	v = NULL;
	err = 0;
out:
	free(v);
	free(text);
	return err;
}

void sweep_cache_store(const struct sweep_key *k, const uint64_t *hits, size_t n)
{
	char path[4200], tmp[4300];
	if (file_name(k, path, sizeof(path)))
		return;
	mkdir(cache_dir(), 0755); /* EEXIST: another process made it */
	int l = snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	if (l <= 0 || (size_t)l >= sizeof(tmp))
		return;
	size_t cap = 200 + n * 36, len = 0;
	char *buf = malloc(cap);
	if (!buf)
		return;
	len = (size_t)header(k, n, buf, cap);
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%" PRIx64 " %" PRIx64 "\n",
					hits[2 * i], hits[2 * i + 1]);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int ok = fd >= 0;
	for (size_t done = 0; ok && done < len;) {
		ssize_t w = write(fd, buf + done, len - done);
		if (w <= 0)
			ok = 0;
		else
			done += (size_t)w;
	}
	if (fd >= 0)
		close(fd);
	if (!ok || rename(tmp, path))
		unlink(tmp); /* a full disk: the next process sweeps again */
	free(buf);
}
