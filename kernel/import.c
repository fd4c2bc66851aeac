/*
 * `nftrace import`: a trace-cmd file (trace.dat) into a session directory.
 * libtracecmd reads the file (every buffer instance in it, merged in time
 * order) and the formats stored in it; kernel/decode.c turns the records into
 * kernel events; the CTF writer writes them. The file's header is checked
 * first so that the common ways a file is bad get a precise message.
 */
#define _GNU_SOURCE /* O_TMPFILE, copy_file_range */
#include "kernel_int.h"
#include "contract/errors.h"
#include "contract/infile.h"

#include "contract/record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <stdint.h>
#include <unistd.h>

#include <trace-cmd.h>

#ifndef NF_VERSION
#define NF_VERSION "0.0.0"
#endif

/* "\027\010\104tracing": the magic every trace-cmd file starts with. */
static const unsigned char nf_tracecmd_magic[10] = { 0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g' };

/* The buffer instances a file can hold, at most (a bound on untrusted input). */
#define NF_IMPORT_MAX_BUFFERS 256

bool nf_kernel_file_is(const char *path)
{
	unsigned char h[sizeof(nf_tracecmd_magic)];
	struct stat st;
	bool yes = false;
	/* O_NONBLOCK: opening a FIFO does not wait for a writer */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return false;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && read(fd, h, sizeof(h)) == (ssize_t)sizeof(h))
		yes = memcmp(h, nf_tracecmd_magic, sizeof(h)) == 0;
	close(fd);
	return yes;
}

static int check_header(const char *path, struct nf_error *err)
{
	unsigned char h[32];
	ssize_t n;
	/* not blocking on a FIFO: refused as not a regular file */
	int fd = nf_infile_open(path, err);

	if (fd < 0)
		return fd;
	n = read(fd, h, sizeof(h));
	close(fd);
	if (n < 0)
		return nf_error_set(err, NF_EIO, "%s: %s", path, strerror(errno));
	if (n < (ssize_t)sizeof(nf_tracecmd_magic) || memcmp(h, nf_tracecmd_magic, sizeof(nf_tracecmd_magic)))
		return nf_error_set(err, NF_EFORMAT, "%s: not a trace-cmd file (no trace-cmd magic at offset 0)",
				    path);
	/* The version, in ASCII, NUL-terminated, right after the magic. */
	size_t i = sizeof(nf_tracecmd_magic), v0 = i;
	while (i < (size_t)n && h[i] >= '0' && h[i] <= '9' && i - v0 < 8)
		i++;
	if (i == (size_t)n)
		return nf_error_set(err, NF_EFORMAT, "%s: truncated in the file header (%zd bytes)", path, n);
	if (h[i] != '\0' || i == v0)
		return nf_error_set(err, NF_EFORMAT, "%s:10: bad trace-cmd file version field", path);
	if (strcmp((const char *)h + v0, "6") && strcmp((const char *)h + v0, "7"))
		return nf_error_set(err, NF_EFORMAT,
				    "%s:10: trace-cmd file version %s is not supported (versions 6 and 7 are)",
				    path, (const char *)h + v0);
	if ((size_t)n < i + 7)
		return nf_error_set(err, NF_EFORMAT, "%s: truncated in the file header (%zd bytes)", path, n);
	return 0;
}

/*
 * Version 6 files: walks the header sections up to the per-CPU data table and
 * checks that every section and every CPU's data lie inside the file
 * (libtracecmd trusts those offsets: a file cut short in its CPU data would
 * make it read past the end). Version 7 files carry section sizes that
 * libtracecmd checks itself.
 */
struct v6_walk {
	int fd;
	uint64_t pos, size;
	bool big;
	const char *path;
	struct nf_error *err;
};

static int v6_bytes(struct v6_walk *w, void *buf, size_t n, const char *what)
{
	if (w->pos > w->size || n > w->size - w->pos || pread(w->fd, buf, n, (off_t)w->pos) != (ssize_t)n)
		return nf_error_set(w->err, NF_EFORMAT, "%s:%llu: truncated in %s (file is %llu bytes)",
				    w->path, (unsigned long long)w->pos, what, (unsigned long long)w->size);
	w->pos += n;
	return 0;
}

static int v6_num(struct v6_walk *w, size_t n, uint64_t *v, const char *what)
{
	unsigned char b[8];
	int rc = v6_bytes(w, b, n, what);

	*v = 0;
	for (size_t i = 0; !rc && i < n; i++)
		*v |= (uint64_t)b[w->big ? i : n - 1 - i] << (8 * (n - 1 - i));
	return rc;
}

static int v6_skip(struct v6_walk *w, uint64_t n, const char *what)
{
	if (w->pos > w->size || n > w->size - w->pos)
		return nf_error_set(w->err, NF_EFORMAT,
				    "%s:%llu: truncated in %s (%llu bytes announced, file is %llu bytes)",
				    w->path, (unsigned long long)w->pos, what, (unsigned long long)n,
				    (unsigned long long)w->size);
	w->pos += n;
	return 0;
}

static int v6_tag(struct v6_walk *w, const char *tag, const char *what)
{
	char b[16];
	size_t n = strlen(tag) + 1;
	uint64_t at = w->pos;
	int rc = v6_bytes(w, b, n, what);

	if (!rc && memcmp(b, tag, n))
		return nf_error_set(w->err, NF_EFORMAT, "%s:%llu: expected the %s section", w->path,
				    (unsigned long long)at, what);
	return rc;
}

/*
 * An event format: checked to look like what the kernel writes, because
 * libtraceevent's parser and libtracecmd's error path (tracecmd_close from
 * tracecmd_open_fd) crash on some malformed ones (fuzzing found several);
 * what passes is parsed by libtracecmd in a child process first (probe_open).
 */

/* One "\tfield:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;" line, brackets balanced
 * and holding digits, or "[]" only for __data_loc / __rel_loc fields. */
static bool field_line_ok(const char *l, const char *eol)
{
	const char *semi = memchr(l, ';', (size_t)(eol - l));
	int depth = 0;
	unsigned a, b, c;
	int n = 0;

	if (!semi)
		return false;
	for (const char *p = l + 6; p < semi; p++) {
		if (*p == '[') {
			if (depth++)
				return false;
			/* "[]": a __data_loc/__rel_loc string, or a flexible array that runs to
			 * the end of the record (size 0: ftrace:print's "char buf[]"). */
			if (p[1] == ']' && !(strstr(l, "__data_loc ") && strstr(l, "__data_loc ") < semi) &&
			    !(strstr(l, "__rel_loc ") && strstr(l, "__rel_loc ") < semi) &&
			    !memmem(semi, (size_t)(eol - semi), "\tsize:0;", 8))
				return false;
		} else if (*p == ']') {
			if (!depth--)
				return false;
		} else if (depth && !(*p >= '0' && *p <= '9') && *p != ' ' && !((*p >= 'A' && *p <= 'Z') || *p == '_')) {
			return false;
		}
	}
	if (depth || !memchr(l + 6, ' ', (size_t)(semi - l - 6)))
		return false;
	if (sscanf(semi, ";\toffset:%u;\tsize:%u;\tsigned:%u;%n", &a, &b, &c, &n) != 3 || n <= 0 ||
	    semi + n != eol || a > 65535 || b > 65535)
		return false;
	return true;
}

/* What the kernel writes: printable ASCII, tabs and newlines, and field lines as above. */
static bool format_text_ok(const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)text[i];

		if ((ch < 0x20 && ch != '\t' && ch != '\n') || ch >= 0x7f)
			return false;
	}
	if (strncmp(text, "name: ", 6) || !strstr(text, "\nID: ") || !strstr(text, "\nformat:\n") ||
	    !strstr(text, "\nprint fmt: "))
		return false;
	for (const char *l = strstr(text, "\tfield:"); l; l = strstr(l + 7, "\tfield:")) {
		const char *eol = strchr(l, '\n');

		if (!eol || !field_line_ok(l + 1, eol))
			return false;
	}
	return true;
}

/*
 * header_page / header_event: printable text; header_page with the three
 * fields of a ring-buffer page header as the kernel describes them.
 */
static int v6_header(struct v6_walk *w, uint64_t len, const char *what)
{
	uint64_t at = w->pos;
	char *text;
	int rc;

	if (len > 65536)
		return nf_error_set(w->err, NF_EFORMAT, "%s:%llu: %s of %llu bytes", w->path,
				    (unsigned long long)at, what, (unsigned long long)len);
	if (!(text = malloc((size_t)len + 1)))
		return nf_error_set(w->err, NF_ENOMEM, "out of memory");
	if ((rc = v6_bytes(w, text, (size_t)len, what))) {
		free(text);
		return rc;
	}
	text[len] = '\0';
	for (size_t i = 0; i < len && !rc; i++) {
		unsigned char ch = (unsigned char)text[i];

		if ((ch < 0x20 && ch != '\t' && ch != '\n') || ch >= 0x7f)
			rc = NF_EFORMAT;
	}
	if (!rc && !strcmp(what, "header_page") &&
	    (!strstr(text, "\tfield: u64 timestamp;\toffset:0;\tsize:8;") ||
	     !strstr(text, "\tfield: local_t commit;\toffset:8;") || !strstr(text, " data;\toffset:")))
		rc = NF_EFORMAT;
	free(text);
	if (rc)
		return nf_error_set(w->err, NF_EFORMAT, "%s:%llu: a malformed %s", w->path,
				    (unsigned long long)at, what);
	return 0;
}

static int v6_format(struct v6_walk *w, uint64_t len)
{
	uint64_t at = w->pos;
	char *text;
	int rc;

	if (len > (1u << 20))
		return nf_error_set(w->err, NF_EFORMAT, "%s:%llu: event format of %llu bytes", w->path,
				    (unsigned long long)at, (unsigned long long)len);
	if (!(text = malloc((size_t)len + 1)))
		return nf_error_set(w->err, NF_ENOMEM, "out of memory");
	if ((rc = v6_bytes(w, text, (size_t)len, "the event formats"))) {
		free(text);
		return rc;
	}
	text[len] = '\0';
	/* libtraceevent's format parser trusts its input (crashes seen under ASan
	 * on control bytes and on malformed field lines, and libtracecmd reads
	 * memory it never set after a field without offset or size): the text
	 * must look like what the kernel writes before it gets there. */
	rc = format_text_ok(text, (size_t)len) ? 0 :
		nf_error_set(w->err, NF_EFORMAT, "%s:%llu: a malformed event format", w->path,
			     (unsigned long long)at);
	free(text);
	return rc;
}

/*
 * What an old trace-cmd wrote differently, found while walking a version 6
 * file: the trace-cmd of 2017 (gpuvis' recorder, trace-cmd before 2.7) saved
 * the TGIDs (text lines "PID TGID") under option id 8, which trace-cmd 2.7 and
 * later use for CPUCOUNT (a 4-byte count): libtracecmd then takes the text for
 * a CPU count and refuses the file.
 */
struct v6_fixups {
	uint64_t tgid_at;      /* offset of that option's 2-byte id (0: none) */
	uint64_t tgid_len;     /* its size */
};

/* Option 8 of this size and content is the old TGID list, not a CPU count. */
static bool v6_is_old_tgids(struct v6_walk *w, uint64_t at, uint64_t len)
{
	char b[64];
	size_t n = len < sizeof(b) ? (size_t)len : sizeof(b);
	unsigned a, t;

	if (len == 4 || len < 4 || pread(w->fd, b, n, (off_t)at) != (ssize_t)n)
		return false;
	b[n - 1] = '\0';
	return sscanf(b, "%u %u", &a, &t) == 2;
}

/*
 * The options libtracecmd acts on, checked so that a damaged one gets a
 * message naming it instead of libtracecmd's refusal (or worse): CPUCOUNT (8)
 * must agree with the header's CPU count, unless it is the old TGID list;
 * BUFFER (3) must point inside the file and name its instance. Other ids
 * (DATE, CPUSTAT, TRACECLOCK, UNAME, ... and ids newer than libtracecmd) are
 * text or skipped by libtracecmd.
 */
static int v6_option(struct v6_walk *w, uint64_t at, uint64_t id, uint64_t len, uint64_t cpus,
		     struct v6_fixups *fx)
{
	unsigned char b[16];

	if (id == 8) {
		if (len == 4) {
			uint32_t c;

			if (pread(w->fd, b, 4, (off_t)w->pos) != 4)
				return nf_error_set(w->err, NF_EIO, "%s: %s", w->path, strerror(errno));
			c = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
			if (w->big)
				c = (uint32_t)b[3] | (uint32_t)b[2] << 8 | (uint32_t)b[1] << 16 | (uint32_t)b[0] << 24;
			if (c != cpus)
				return nf_error_set(w->err, NF_EFORMAT,
						    "%s:%llu: option 8 (CPU count) says %u CPUs, the header %llu",
						    w->path, (unsigned long long)at, c, (unsigned long long)cpus);
			return 0;
		}
		if (!v6_is_old_tgids(w, w->pos, len))
			return nf_error_set(w->err, NF_EFORMAT,
					    "%s:%llu: option 8 of %llu bytes is neither a CPU count (4 bytes) "
					    "nor the saved TGIDs of an old trace-cmd", w->path,
					    (unsigned long long)at, (unsigned long long)len);
		if (fx->tgid_at)
			return nf_error_set(w->err, NF_EFORMAT, "%s:%llu: a second option 8 (saved TGIDs)",
					    w->path, (unsigned long long)at);
		fx->tgid_at = at;
		fx->tgid_len = len;
		return 0;
	}
	if (id == 3) {
		uint64_t off = 0;

		if (len < 9 || pread(w->fd, b, 9, (off_t)w->pos) != 9)
			return nf_error_set(w->err, NF_EFORMAT, "%s:%llu: option 3 (buffer instance) of %llu bytes",
					    w->path, (unsigned long long)at, (unsigned long long)len);
		for (int i = 0; i < 8; i++)
			off |= (uint64_t)b[w->big ? i : 7 - i] << (8 * (7 - i));
		if (off >= w->size)
			return nf_error_set(w->err, NF_EFORMAT,
					    "%s:%llu: option 3 (buffer instance) at offset %llu, past the end of "
					    "the %llu-byte file", w->path, (unsigned long long)at,
					    (unsigned long long)off, (unsigned long long)w->size);
	}
	return 0;
}

static int check_v6_layout(const char *path, struct v6_fixups *fx, struct nf_error *err)
{
	struct v6_walk w = { -1, 12, 0, false, path, err };
	struct stat st;
	uint64_t n, m, v, cpus;
	unsigned char b[10];
	int rc;

	w.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (w.fd < 0)
		return nf_error_set(err, NF_EIO, "%s: %s", path, strerror(errno));
	if (fstat(w.fd, &st) != 0) {
		rc = nf_error_set(err, NF_EIO, "%s: %s", path, strerror(errno));
		goto out_close;
	}
	w.size = (uint64_t)st.st_size;
	if ((rc = v6_bytes(&w, b, 6, "the file header")))
		goto out_close;
	w.big = b[0] != 0;
	if (b[1] != 4 && b[1] != 8) {
		rc = nf_error_set(err, NF_EFORMAT, "%s:13: long size %u (4 or 8 expected)", path, b[1]);
		goto out_close;
	}
	if ((rc = v6_tag(&w, "header_page", "header_page")) || (rc = v6_num(&w, 8, &n, "header_page")) ||
	    (rc = v6_header(&w, n, "header_page")) || (rc = v6_tag(&w, "header_event", "header_event")) ||
	    (rc = v6_num(&w, 8, &n, "header_event")) || (rc = v6_header(&w, n, "header_event")) ||
	    (rc = v6_num(&w, 4, &m, "the ftrace formats")))
		goto out_close;
	for (uint64_t i = 0; i < m; i++)
		if ((rc = v6_num(&w, 8, &n, "the ftrace formats")) || (rc = v6_skip(&w, n, "the ftrace formats")))
			goto out_close;
	if ((rc = v6_num(&w, 4, &m, "the event formats")))
		goto out_close;
	for (uint64_t s = 0; s < m; s++) {
		char c = 1;

		for (int len = 0; c; len++)
			if (len > 4096 || (rc = v6_bytes(&w, &c, 1, "an event system name"))) {
				if (!rc)
					rc = nf_error_set(err, NF_EFORMAT, "%s:%llu: event system name too long",
							  path, (unsigned long long)w.pos);
				goto out_close;
			}
		if ((rc = v6_num(&w, 4, &n, "the event formats")))
			goto out_close;
		for (uint64_t e = 0; e < n; e++)
			if ((rc = v6_num(&w, 8, &v, "the event formats")) ||
			    (rc = v6_format(&w, v)))
				goto out_close;
	}
	if ((rc = v6_num(&w, 4, &n, "kallsyms")) || (rc = v6_skip(&w, n, "kallsyms")) ||
	    (rc = v6_num(&w, 4, &n, "the printk formats")) || (rc = v6_skip(&w, n, "the printk formats")) ||
	    (rc = v6_num(&w, 8, &n, "the cmdlines")) || (rc = v6_skip(&w, n, "the cmdlines")) ||
	    (rc = v6_num(&w, 4, &cpus, "the CPU count")))
		goto out_close;
	for (;;) {
		if ((rc = v6_bytes(&w, b, 10, "the data section")))
			goto out_close;
		if (!memcmp(b, "options  ", 10)) {
			for (;;) {
				if ((rc = v6_num(&w, 2, &n, "the options")))
					goto out_close;
				if (n == 0)
					break;
				uint64_t opt_at = w.pos - 2;

				if ((rc = v6_num(&w, 4, &v, "the options")))
					goto out_close;
				if (v > w.size - w.pos) {
					rc = nf_error_set(err, NF_EFORMAT,
							  "%s:%llu: option %llu of %llu bytes runs past the end of the "
							  "%llu-byte file", path, (unsigned long long)opt_at,
							  (unsigned long long)n, (unsigned long long)v,
							  (unsigned long long)w.size);
					goto out_close;
				}
				if ((rc = v6_option(&w, opt_at, n, v, cpus, fx)))
					goto out_close;
				if ((rc = v6_skip(&w, v, "the options")))
					goto out_close;
			}
			continue;
		}
		if (!memcmp(b, "latency  ", 10))
			break;
		if (memcmp(b, "flyrecord", 10)) {
			rc = nf_error_set(err, NF_EFORMAT, "%s:%llu: unknown data section", path,
					  (unsigned long long)(w.pos - 10));
			goto out_close;
		}
		for (uint64_t c = 0; c < cpus; c++) {
			uint64_t off, len;

			if ((rc = v6_num(&w, 8, &off, "the CPU data table")) ||
			    (rc = v6_num(&w, 8, &len, "the CPU data table")))
				goto out_close;
			if (off > w.size || len > w.size - off) {
				rc = nf_error_set(err, NF_EFORMAT,
						  "%s: truncated: CPU %llu data at offset %llu, %llu bytes, "
						  "past the end of the %llu-byte file", path, (unsigned long long)c,
						  (unsigned long long)off, (unsigned long long)len,
						  (unsigned long long)w.size);
				goto out_close;
			}
		}
		break;
	}
	rc = 0;
out_close:
	close(w.fd);
	return rc;
}

static bool version6(const char *path)
{
	char b[12];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool v6 = fd >= 0 && pread(fd, b, 12, 0) == 12 && b[10] == '6' && b[11] == '\0';

	if (fd >= 0)
		close(fd);
	return v6;
}

/*
 * libtracecmd 1.3.1 can crash on its own error path when a file's headers are
 * corrupt in ways the checks above do not see (fuzzing found several): the
 * first open is tried in a child process, and only a file it opened and
 * closed cleanly is opened here.
 */
static int probe_open(const char *open_path, const char *path, struct nf_error *err)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return nf_error_set(err, NF_EIO, "%s: fork: %s", path, strerror(errno));
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (null >= 0)
			dup2(null, STDERR_FILENO);
		struct tracecmd_input *h = tracecmd_open(open_path, TRACECMD_FL_LOAD_NO_PLUGINS |
								TRACECMD_FL_LOAD_NO_SYSTEM_PLUGINS);
		if (!h)
			_exit(3);
		tracecmd_close(h);
		_exit(0);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return nf_error_set(err, NF_EIO, "%s: waitpid: %s", path, strerror(errno));
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
		return nf_error_set(err, NF_EFORMAT,
				    "%s: libtracecmd cannot read it: truncated or corrupt headers, formats "
				    "or CPU data", path);
	return nf_error_set(err, NF_EFORMAT, "%s: corrupt headers or formats (libtracecmd crashed reading them)",
			    path);
}

/* The saved TGIDs of an old file: thread -> process. */
struct tgid_pair {
	uint32_t tid, tgid;
};

struct tgid_list {
	struct tgid_pair *v;
	size_t n;
};

/* The TGID option is text, at most this long (a bound on untrusted input). */
#define NF_IMPORT_MAX_TGIDS_BYTES (16u << 20)

static int parse_tgids(const char *path, const char *text, size_t len, uint64_t at, struct tgid_list *out,
		       struct nf_error *err)
{
	size_t cap = 0;
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		char line[64];
		size_t n = (size_t)((eol ? eol : end) - p);
		unsigned long tid, tgid;
		char extra;

		if (n == 0 || (n == 1 && *p == '\0')) {
			p += n + 1;
			continue;
		}
		if (n >= sizeof(line))
			return nf_error_set(err, NF_EFORMAT, "%s:%llu: a saved TGIDs line of %zu bytes", path,
					    (unsigned long long)(at + (uint64_t)(p - text)), n);
		memcpy(line, p, n);
		line[n] = '\0';
		if (sscanf(line, "%lu %lu %c", &tid, &tgid, &extra) != 2 || tid > UINT32_MAX || tgid > UINT32_MAX)
			return nf_error_set(err, NF_EFORMAT, "%s:%llu: a damaged saved TGIDs line in option 8",
					    path, (unsigned long long)(at + (uint64_t)(p - text)));
		if (out->n == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct tgid_pair *nv = realloc(out->v, ncap * sizeof(*nv));

			if (!nv)
				return nf_error_set(err, NF_ENOMEM, "out of memory");
			out->v = nv;
			cap = ncap;
		}
		out->v[out->n++] = (struct tgid_pair){ (uint32_t)tid, (uint32_t)tgid };
		p += n + 1;
	}
	return 0;
}

/*
 * A corrected view of a file libtracecmd would refuse: an unnamed copy (an
 * O_TMPFILE in $TMPDIR, gone when closed) where the old TGID option's id is
 * renumbered to one libtracecmd skips, opened through /proc/self/fd. The TGIDs
 * are read here. The original file is never written.
 */
#define NF_IMPORT_SKIPPED_OPTION 0x7fffu

static int corrected_view(const char *path, const struct v6_fixups *fx, int *view_fd, char *view,
			  size_t view_len, struct tgid_list *tgids, struct nf_error *err)
{
	const char *dir = getenv("TMPDIR");
	int in = open(path, O_RDONLY | O_CLOEXEC), out = -1, rc = 0;
	unsigned char id[2] = { NF_IMPORT_SKIPPED_OPTION & 0xff, NF_IMPORT_SKIPPED_OPTION >> 8 };
	char *text = NULL;
	struct stat stt;
	off_t off = 0;

	if (in < 0 || fstat(in, &stt) != 0) {
		rc = nf_error_set(err, NF_EIO, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (fx->tgid_len > NF_IMPORT_MAX_TGIDS_BYTES) {
		rc = nf_error_set(err, NF_EFORMAT, "%s:%llu: option 8 of %llu bytes", path,
				  (unsigned long long)fx->tgid_at, (unsigned long long)fx->tgid_len);
		goto out;
	}
	if (!(text = malloc((size_t)fx->tgid_len + 1))) {
		rc = nf_error_set(err, NF_ENOMEM, "out of memory");
		goto out;
	}
	if (pread(in, text, (size_t)fx->tgid_len, (off_t)(fx->tgid_at + 6)) != (ssize_t)fx->tgid_len) {
		rc = nf_error_set(err, NF_EFORMAT, "%s:%llu: truncated in option 8", path,
				  (unsigned long long)fx->tgid_at);
		goto out;
	}
	if ((rc = parse_tgids(path, text, (size_t)fx->tgid_len, fx->tgid_at + 6, tgids, err)))
		goto out;
	out = open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (out < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		/* A file system without O_TMPFILE: a named file, unlinked at once. */
		char tmpl[4096];

		snprintf(tmpl, sizeof(tmpl), "%s/.nftrace-import-XXXXXX", dir && *dir ? dir : "/tmp");
		out = mkostemp(tmpl, O_CLOEXEC);
		if (out >= 0)
			unlink(tmpl);
	}
	if (out < 0) {
		rc = nf_error_set(err, NF_EIO, "%s: cannot make a corrected copy in %s: %s", path,
				  dir && *dir ? dir : "/tmp", strerror(errno));
		goto out;
	}
	while (off < stt.st_size) {
		ssize_t k = copy_file_range(in, &off, out, NULL, (size_t)(stt.st_size - off), 0);

		if (k <= 0) {
			rc = nf_error_set(err, NF_EIO, "%s: making a corrected copy: %s", path,
					  k < 0 ? strerror(errno) : "short copy");
			goto out;
		}
	}
	if (pwrite(out, id, 2, (off_t)fx->tgid_at) != 2) {
		rc = nf_error_set(err, NF_EIO, "%s: making a corrected copy: %s", path, strerror(errno));
		goto out;
	}
	snprintf(view, view_len, "/proc/self/fd/%d", out);
	*view_fd = out;
	out = -1;
out:
	free(text);
	if (out >= 0)
		close(out);
	if (in >= 0)
		close(in);
	return rc;
}

/* Removes a session directory we created (plain files only). */
void nf_kimport_remove_dir(const char *dir, bool rm_dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[4200];

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	if (rm_dir)
		rmdir(dir);
}

struct import_ctx {
	struct nf_kdecoder *d;
	struct nf_error *err;
	int rc;
	volatile int *interrupt; /* stop when it becomes non-zero (NULL: never) */
	uint64_t n;
	const char *path;
	uint64_t *per_cpu;       /* records of each CPU (ncpus) in the top buffer, which CPUSTAT describes */
	int ncpus;
	struct tracecmd_input *top;
};

/* libtracecmd keeps the CPUSTAT option's text (its own reader of the option); not in its header. */
const char *tracecmd_get_cpustats(struct tracecmd_input *handle);

/*
 * The CPUSTAT text ("CPU: 0\nentries: 0\noverrun: 0\n...read events: 44623\n",
 * one block per CPU) into the stats of each CPU. A block that does not parse
 * is left out (the CPU then has no stat: its first record is its start).
 */
static void parse_cpustats(const char *text, struct nf_kcpu_stat *cs, int ncpus)
{
	long cpu = -1;

	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char line[128];
		unsigned long long v;

		snprintf(line, sizeof(line), "%.*s", (int)(len < sizeof(line) ? len : sizeof(line) - 1), p);
		if (sscanf(line, "CPU: %llu", &v) == 1)
			cpu = v < (unsigned long long)ncpus ? (long)v : -1;
		else if (cpu >= 0 && sscanf(line, "overrun: %llu", &v) == 1)
			cs[cpu].overrun = v;
		else if (cpu >= 0 && sscanf(line, "dropped events: %llu", &v) == 1)
			cs[cpu].dropped = v;
		else if (cpu >= 0 && sscanf(line, "read events: %llu", &v) == 1) {
			cs[cpu].read_events = v;
			cs[cpu].has_stat = true; /* the block's last line */
		}
		p = nl ? nl + 1 : NULL;
	}
}

static int import_record(struct tracecmd_input *h, struct tep_record *rec, int cpu, void *data)
{
	struct import_ctx *c = data;

	(void)cpu; /* libtracecmd passes something else here: the record knows its CPU */
	c->rc = nf_kdecoder_record(c->d, rec, rec->cpu, c->err);
	if (h == c->top && rec->cpu >= 0 && rec->cpu < c->ncpus)
		c->per_cpu[rec->cpu]++;
	if (!c->rc && (++c->n & 4095) == 0 && c->interrupt && *c->interrupt)
		c->rc = nf_error_set(c->err, NF_EINTR, "%s: interrupted", c->path);
	return c->rc ? -1 : 0;
}

/* The CTF writer of an imported kernel session in out_dir: its environment
 * says source path, mode, the start (first, kernel ns) and note (omitted when
 * ""), on a 1 GHz clock (kernel nanoseconds). */
int nf_kimport_writer_create(const char *out_dir, const char *path, const char *mode, uint64_t first,
			     const char *note, struct nf_ctf_writer **w, struct nf_error *err)
{
	struct nf_ctf_env_entry env[] = {
		{ "domain", false, 0, "nftrace" },
		{ "tool_version", false, 0, NF_VERSION },
		{ "schema_version", true, NF_SCHEMA_VERSION, NULL },
		{ "source", false, 0, path },
		{ "mode", false, 0, mode },
		{ "host", false, 0, "unknown" },
		{ "seed", true, 0, NULL },
		{ "cpu_frequency", true, 1000000000, NULL },
		{ "start_ticks", true, (int64_t)first, NULL },
		{ "ground_truth", true, 0, NULL },
		{ "import_note", false, 0, note },
	};
	struct nf_ctf_writer_options o = { 0 };

	o.cpu_frequency = 1000000000u;
	o.env = env;
	o.n_env = sizeof(env) / sizeof(env[0]) - (note[0] ? 0 : 1);
	return nf_ctf_writer_create(out_dir, &o, w, err);
}

/* Ends an import: the decoder destroyed, the writer closed (its error kept
 * when rc is 0), and on failure what it wrote removed (out_dir itself when
 * the import made it). Returns rc, or the close's error. */
int nf_kimport_close(struct nf_kdecoder *d, struct nf_ctf_writer *w, int rc, bool created, const char *out_dir,
		     bool existed, struct nf_error *err)
{
	nf_kdecoder_destroy(d);
	int rc2 = nf_ctf_writer_close(w, rc ? NULL : err);

	if (!rc)
		rc = rc2;
	if (rc && created)
		nf_kimport_remove_dir(out_dir, !existed);
	return rc;
}

void nf_kernel_stats_summary(const struct nf_kernel_stats *st, const char *what, char *buf, size_t len)
{
	snprintf(buf, len,
		 "%" PRIu64 " %s on %u CPUs (%" PRIu64 " dma_fence, %" PRIu64 " sched, %" PRIu64 " GPU job/vblank, %" PRIu64
		 " markers, %" PRIu64 " other), %" PRIu64 " events lost by the kernel",
		 st->records, what, st->cpus, st->dma_fence, st->sched, st->gpu, st->markers, st->raw, st->lost_events);
}

int nf_kernel_import(const char *path, const char *out_dir, volatile int *interrupt,
		     struct nf_kernel_stats *st, struct nf_error *err)
{
	struct tracecmd_input *handles[NF_IMPORT_MAX_BUFFERS + 1];
	struct tracecmd_input *h;
	struct nf_ctf_writer *w = NULL;
	struct nf_kdecoder *d = NULL;
	struct tep_handle *tep;
	struct stat sst;
	int n = 0, rc, nbuf;
	bool created = false, existed;
	uint64_t first = 0;
	struct v6_fixups fx = { 0, 0 };
	struct tgid_list tgids = { NULL, 0 };
	int view_fd = -1;
	char view[64];
	const char *open_path = path;
	char note[sizeof(st->note)];

	memset(st, 0, sizeof(*st));
	if ((rc = check_header(path, err)))
		return rc;
	if (version6(path) && (rc = check_v6_layout(path, &fx, err)))
		return rc;
	tracecmd_set_loglevel(TEP_LOG_NONE);
	tep_set_loglevel(TEP_LOG_NONE);
	if (fx.tgid_at) {
		if ((rc = corrected_view(path, &fx, &view_fd, view, sizeof(view), &tgids, err)))
			goto out_view;
		snprintf(st->note, sizeof(st->note),
			 "option 8 at offset %llu (%llu bytes) holds the saved TGIDs of the trace-cmd of "
			 "2017, not the CPU count trace-cmd 2.7 and later store under id 8: read as TGIDs "
			 "(%zu threads), and libtracecmd was given a copy with that option renumbered",
			 (unsigned long long)fx.tgid_at, (unsigned long long)fx.tgid_len, tgids.n);
		open_path = view;
	}
	if ((rc = probe_open(open_path, path, err)))
		goto out_view;
	h = tracecmd_open(open_path, TRACECMD_FL_LOAD_NO_PLUGINS | TRACECMD_FL_LOAD_NO_SYSTEM_PLUGINS);
	if (!h) {
		rc = nf_error_set(err, NF_EFORMAT,
				  "%s: libtracecmd cannot read it: truncated or corrupt headers, formats "
				  "or CPU data", path);
		goto out_view;
	}
	tep = tracecmd_get_tep(h);
	if (!tep || tep_get_events_count(tep) == 0) {
		rc = nf_error_set(err, NF_EFORMAT, "%s: no event formats stored in the file", path);
		goto out_close;
	}
	handles[n++] = h;
	nbuf = tracecmd_buffer_instances(h);
	if (nbuf < 0 || nbuf > NF_IMPORT_MAX_BUFFERS) {
		rc = nf_error_set(err, NF_EFORMAT, "%s: %d buffer instances (at most %d)", path, nbuf,
				  NF_IMPORT_MAX_BUFFERS);
		goto out_close;
	}
	for (int i = 0; i < nbuf; i++) {
		struct tracecmd_input *b = tracecmd_buffer_instance_handle(h, i);

		if (!b) {
			rc = nf_error_set(err, NF_EFORMAT, "%s: buffer instance %s is unreadable", path,
					  tracecmd_buffer_instance_name(h, i));
			goto out_close;
		}
		handles[n++] = b;
	}
	/* The session starts at the first event of any buffer. */
	for (int i = 0; i < n; i++) {
		uint64_t t = tracecmd_get_first_ts(handles[i]);

		if (t && (!first || t < first))
			first = t;
	}
	st->cpus = (uint32_t)tep_get_cpus(tep);
	if ((rc = nf_record_prepare_dir(out_dir, false, err)))
		goto out_close;
	existed = stat(out_dir, &sst) == 0;
	if ((rc = nf_kimport_writer_create(out_dir, path, "kernel-import", first, st->note, &w, err)))
		goto out_close;
	created = true;
	struct nf_kclock_map map = { first, first, 1000000000u };
	d = nf_kdecoder_create(tep, w, &map, st->cpus, 0, "unknown (trace-cmd file)", path, err);
	if (!d) {
		rc = err->code ? err->code : NF_ENOMEM;
		goto out_writer;
	}
	for (size_t i = 0; i < tgids.n; i++)
		if ((rc = nf_kdecoder_task(d, tgids.v[i].tid, tgids.v[i].tgid, err)))
			goto out_writer;
	int ncpus = (int)st->cpus;
	uint64_t *per_cpu = calloc(ncpus > 0 ? (size_t)ncpus : 1, sizeof(*per_cpu));

	if (!per_cpu) {
		rc = nf_error_set(err, NF_ENOMEM, "%s: out of memory", path);
		goto out_writer;
	}
	struct import_ctx ctx = { d, err, 0, interrupt, 0, path, per_cpu, ncpus, h };
	int irc = n == 1 ? tracecmd_iterate_events(h, NULL, 0, import_record, &ctx)
			 : tracecmd_iterate_events_multi(handles, n, import_record, &ctx);
	if (ctx.rc || irc < 0) {
		free(per_cpu);
		rc = ctx.rc ? ctx.rc
			    : nf_error_set(err, NF_EFORMAT, "%s: libtracecmd failed reading the CPU data (truncated?)",
					   path);
		goto out_writer;
	}
	/* Each CPU's buffer: what the file holds, what the recorder read (CPUSTAT). */
	{
		struct nf_kcpu_stat *cs = calloc(ncpus > 0 ? (size_t)ncpus : 1, sizeof(*cs));

		if (!cs) {
			free(per_cpu);
			rc = nf_error_set(err, NF_ENOMEM, "%s: out of memory", path);
			goto out_writer;
		}
		parse_cpustats(tracecmd_get_cpustats(h), cs, ncpus);
		for (int c = 0; c < ncpus && rc == 0; c++) {
			cs[c].cpu = (uint32_t)c;
			cs[c].records = per_cpu[c];
			rc = nf_kdecoder_cpu_stat(d, &cs[c], err);
		}
		free(cs);
		free(per_cpu);
		if (rc)
			goto out_writer;
	}
	memcpy(note, st->note, sizeof(note));
	nf_kdecoder_get_stats(d, st);
	memcpy(st->note, note, sizeof(note));
	st->cpus = (uint32_t)tep_get_cpus(tep);
	rc = 0;
out_writer:
	rc = nf_kimport_close(d, w, rc, created, out_dir, existed, err);
out_close:
	for (int i = n - 1; i >= 1; i--)
		tracecmd_close(handles[i]);
	tracecmd_close(h);
out_view:
	if (view_fd >= 0)
		close(view_fd);
	free(tgids.v);
	if (rc)
		st->note[0] = '\0';
	return rc;
}
