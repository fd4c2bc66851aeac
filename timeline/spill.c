/*
 * Spill files and the external sorter (spill.h): what the timeline builder
 * cannot keep in memory goes to unlinked temporary files as fixed-size records,
 * written and read sequentially through large buffers.
 */
#include "contract/spill.h"
#include "contract/errors.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An unlinked temporary file in dir; returns the fd or -1 with err filled. */
static int temp_fd(const char *dir, struct nf_error *err)
{
	const char *d = dir && *dir ? dir : getenv("TMPDIR");
	char path[4096];
	int fd;

	if (!d || !*d)
		d = "/tmp";
	if ((size_t)snprintf(path, sizeof(path), "%s/.nftrace-spill.XXXXXX", d) >= sizeof(path)) {
		nf_error_set(err, NF_EIO, "%s: path too long", d);
		return -1;
	}
	fd = mkstemp(path);
	if (fd < 0) {
		nf_error_set(err, NF_EIO, "%s: cannot create a temporary file: %s", d,
			     strerror(errno));
		return -1;
	}
	unlink(path);
	return fd;
}

/*
 * A spill is two buffers of whole records. Records are put into one while the
 * other is written to the file on a thread of its own, so the copy into the
 * page cache (a tenth of the x10 build's main thread when it was inline) runs
 * beside the stream. A spill that never fills its first buffer never has a
 * file at all. It is read back through a reader (nf_spill_reader): pread on
 * the reading thread (a read ahead on another thread was no faster: the
 * records then cross between cores).
 */
#define SPILL_CHUNK (4u << 20)

/* A write of the file on a thread of its own, or a read on the caller's. */
struct spill_job {
	int fd;
	char *buf;
	size_t len;         /* bytes to write or to read; after a read, the bytes got */
	off_t off;
	bool read;
	int err_no;         /* 0, or the errno of the failed call (-1: the file ended early) */
};

struct nf_spill {
	char dir[4096];
	int fd;             /* -1 until the first buffer is full */
	size_t rec_size, cap; /* cap: the bytes of whole records a buffer holds */
	uint64_t n;
	char *cur, *spare;  /* cur: being filled (or, with no file, every record); spare: the job's, or free (both freed when a file is sealed) */
	size_t used;        /* bytes in cur */
	off_t end;          /* bytes written, or being written, to the file */
	bool reading;       /* sealed: no more records */
	struct nf_spill_reader *rd; /* nf_spill_get's, from the last rewind */
	int failed;         /* the errno of a failed write or read (-1: the file ended early): every later call fails */
	bool failed_read;
	struct spill_job job;
	pthread_t th;
	bool th_on;         /* the job runs on th */
	bool job_on;        /* a job was started and its result not yet taken */
};

struct nf_spill *nf_spill_create(const char *dir, size_t rec_size, struct nf_error *err)
{
	struct nf_spill *s;

	if (rec_size == 0 || rec_size > SPILL_CHUNK) {
		nf_error_set(err, NF_EINVAL, "spill: records of %zu bytes (1 to %u)", rec_size, SPILL_CHUNK);
		return NULL;
	}
	if ((s = calloc(1, sizeof(*s))) != NULL) {
		snprintf(s->dir, sizeof(s->dir), "%s", dir ? dir : "");
		s->fd = -1;
		s->rec_size = rec_size;
		s->cap = SPILL_CHUNK / rec_size * rec_size;
		/* Pages of a malloc this size are not touched, so cost nothing, until used. */
		s->cur = malloc(s->cap);
	}
	if (!s || !s->cur) {
		free(s);
		nf_error_set(err, NF_ENOMEM, "spill: out of memory");
		return NULL;
	}
	return s;
}

static void *spill_job_main(void *arg)
{
	struct spill_job *j = arg;
	size_t done = 0;

	j->err_no = 0;
	while (done < j->len) {
		ssize_t k = j->read ? pread(j->fd, j->buf + done, j->len - done, j->off + (off_t)done)
				    : pwrite(j->fd, j->buf + done, j->len - done, j->off + (off_t)done);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			j->err_no = k < 0 ? errno : -1;
			break;
		}
		done += (size_t)k;
	}
	j->len = done;
	return NULL;
}

/* NF_EIO once a write or read failed (what was lost is not in the file), else 0. */
static int spill_failed(const struct nf_spill *s, struct nf_error *err)
{
	if (!s->failed)
		return 0;
	return nf_error_set(err, NF_EIO, "spill: %s failed: %s", s->failed_read ? "read" : "write",
			    s->failed > 0 ? strerror(s->failed) : "the file ended early");
}

/* Takes the result of the write started last, waiting for it: 0 or NF_EIO. */
static int spill_join(struct nf_spill *s, struct nf_error *err)
{
	if (!s->job_on)
		return 0;
	if (s->th_on)
		pthread_join(s->th, NULL);
	s->th_on = s->job_on = false;
	if (s->job.err_no && !s->failed)
		s->failed = s->job.err_no;
	return spill_failed(s, err);
}

/*
 * Starts writing cur's records at the file's end on a thread of its own (here
 * when no thread can be had), after the write before it; the file is made
 * with the first. 0, NF_EIO.
 */
static int spill_write_behind(struct nf_spill *s, struct nf_error *err)
{
	int rc;

	if ((rc = spill_join(s, err)) != 0)
		return rc;
	if (s->fd < 0 && (s->fd = temp_fd(s->dir, err)) < 0)
		return NF_EIO;
	s->job = (struct spill_job){ s->fd, s->cur, s->used, s->end, false, 0 };
	s->job_on = true;
	s->th_on = pthread_create(&s->th, NULL, spill_job_main, &s->job) == 0;
	if (!s->th_on)
		spill_job_main(&s->job);
	s->end += (off_t)s->used;
	return 0;
}

int nf_spill_put(struct nf_spill *s, const void *rec, struct nf_error *err)
{
	int rc;

	if (s->reading)
		return nf_error_set(err, NF_ESTATE, "spill: a record put after its writing ended");
	if (s->used + s->rec_size > s->cap) {
		/* The full buffer goes to the file behind; the records go on in the other. */
		char *full = s->cur;

		if (!s->spare && !(s->spare = malloc(s->cap)))
			return nf_error_set(err, NF_ENOMEM, "spill: out of memory");
		if ((rc = spill_write_behind(s, err)) != 0)
			return rc;
		s->cur = s->spare;
		s->spare = full;
		s->used = 0;
	}
	memcpy(s->cur + s->used, rec, s->rec_size);
	s->used += s->rec_size;
	s->n++;
	return 0;
}

uint64_t nf_spill_count(const struct nf_spill *s)
{
	return s->n;
}

int nf_spill_seal(struct nf_spill *s, struct nf_error *err)
{
	int rc;

	if (s->reading)
		return spill_failed(s, err);
	/* The last, partly filled buffer goes to the file too. */
	if (s->fd >= 0 && s->used > 0 && (rc = spill_write_behind(s, err)) != 0)
		return rc;
	if ((rc = spill_join(s, err)) != 0)
		return rc;
	if (s->fd >= 0) {
		/* The writing's buffers: a reader of a file has its own. */
		free(s->cur);
		free(s->spare);
		s->cur = s->spare = NULL;
	}
	s->reading = true;
	return 0;
}

/*
 * A reader of a spill with a file reads it through a buffer of its own with
 * pread (the file offset is not shared); one of a spill without a file reads
 * the spill's one buffer, which sealing left whole.
 */
#define SPILL_READER_BUF (1u << 20)

struct nf_spill_reader {
	const struct nf_spill *s;
	const char *mem;    /* the records (no file), else NULL */
	char *buf;
	size_t cap, used, pos;
	off_t off;          /* the file's next byte to read */
	uint64_t read;
	int err_no;         /* after a failed read: its errno (-1: the file ended early) */
};

struct nf_spill_reader *nf_spill_reader_open(struct nf_spill *s, struct nf_error *err)
{
	struct nf_spill_reader *r;

	if (!s->reading) {
		nf_error_set(err, NF_ESTATE, "spill: read before it was sealed");
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (r) {
		r->s = s;
		r->cap = SPILL_READER_BUF > s->rec_size ? SPILL_READER_BUF / s->rec_size * s->rec_size
							 : s->rec_size;
		if (s->fd < 0)
			r->mem = s->cur;
		else if (!(r->buf = malloc(r->cap))) {
			free(r);
			r = NULL;
		}
	}
	if (!r)
		nf_error_set(err, NF_ENOMEM, "spill: out of memory");
	return r;
}

int nf_spill_reader_get(struct nf_spill_reader *r, void *rec, struct nf_error *err)
{
	const struct nf_spill *s = r->s;

	if (r->read == s->n)
		return 0;
	if (r->mem) {
		memcpy(rec, r->mem + r->read * s->rec_size, s->rec_size);
		r->read++;
		return 1;
	}
	if (r->pos + s->rec_size > r->used) {
		size_t want = s->end - r->off < (off_t)r->cap ? (size_t)(s->end - r->off) : r->cap;
		struct spill_job j = { s->fd, r->buf, want, r->off, true, 0 };

		spill_job_main(&j);
		if (j.err_no || j.len < s->rec_size) {
			r->err_no = j.err_no ? j.err_no : -1;
			return nf_error_set(err, NF_EIO, "spill: read failed: %s",
					    j.err_no > 0 ? strerror(j.err_no) : "the file ended early");
		}
		r->off += (off_t)j.len;
		r->used = j.len;
		r->pos = 0;
	}
	memcpy(rec, r->buf + r->pos, s->rec_size);
	r->pos += s->rec_size;
	r->read++;
	return 1;
}

void nf_spill_reader_close(struct nf_spill_reader *r)
{
	if (!r)
		return;
	free(r->buf);
	free(r);
}

int nf_spill_rewind(struct nf_spill *s, struct nf_error *err)
{
	int rc;

	if ((rc = nf_spill_seal(s, err)) != 0)
		return rc;
	nf_spill_reader_close(s->rd);
	s->rd = nf_spill_reader_open(s, err);
	return s->rd ? 0 : NF_ENOMEM;
}

int nf_spill_get(struct nf_spill *s, void *rec, struct nf_error *err)
{
	int rc;

	if (!s->rd)
		return nf_error_set(err, NF_ESTATE, "spill: read before a rewind");
	if ((rc = spill_failed(s, err)) != 0)
		return rc;
	if ((rc = nf_spill_reader_get(s->rd, rec, err)) < 0) {
		s->failed = s->rd->err_no;
		s->failed_read = true;
	}
	return rc;
}

void nf_spill_destroy(struct nf_spill *s)
{
	if (!s)
		return;
	spill_join(s, NULL);
	nf_spill_reader_close(s->rd);
	if (s->fd >= 0)
		close(s->fd);
	free(s->cur);
	free(s->spare);
	free(s);
}

/* ---- external sort ---- */

#define RUN_BUF_BYTES (256u << 10)
/*
 * Runs merged at once, at most: beyond, groups of runs are first merged into
 * longer runs (one more pass over the data), so the read buffers stay within
 * SORT_FANIN * RUN_BUF_BYTES however large the sort.
 */
#define SORT_FANIN 64u

struct run {
	off_t off;          /* next unread byte of the run */
	uint64_t left;      /* records not yet loaded */
	char *buf;          /* loaded records */
	size_t n, pos;      /* loaded, consumed */
};

/* A full buffer being sorted and written as a run, on a thread of its own. */
struct run_job {
	char *buf;
	size_t n, rec_size;
	off_t off;
	int fd;
	nf_sort_cmp cmp;
	int rc;             /* 0, or NF_EIO with err filled */
	struct nf_error err;
};

struct nf_sorter {
	char dir[4096];
	size_t rec_size, cap;
	nf_sort_cmp cmp;
	char *mem;          /* records in memory (being added) */
	size_t n, alloc;
	char *spare;        /* the other buffer: the one the run job sorts, or free */
	struct run_job job;
	pthread_t th;
	bool th_on;         /* a run job is in flight */
	uint64_t total;
	int fd;             /* runs file, -1 until the first run */
	off_t end;
	struct run *runs;
	size_t n_runs, cap_runs;
	size_t *heap, n_heap; /* run indices, smallest current record first */
	size_t mem_pos;     /* reading the in-memory records (no runs) */
	bool sorted;
};

struct nf_sorter *nf_sorter_create(const char *dir, size_t rec_size, size_t mem_budget,
				   nf_sort_cmp cmp, struct nf_error *err)
{
	struct nf_sorter *s = calloc(1, sizeof(*s));

	if (!s) {
		nf_error_set(err, NF_ENOMEM, "sort: out of memory");
		return NULL;
	}
	snprintf(s->dir, sizeof(s->dir), "%s", dir ? dir : "");
	s->rec_size = rec_size;
	/* Two buffers share the budget: one fills while the other is sorted and written. */
	s->cap = mem_budget / 2 / rec_size;
	if (s->cap < 1024)
		s->cap = 1024;
	s->cmp = cmp;
	s->fd = -1;
	return s;
}

static int sorter_grow(struct nf_sorter *s, struct nf_error *err)
{
	/* Grow geometrically up to the budget, so small sorts stay small. */
	size_t want = s->alloc ? s->alloc * 2 : 4096;
	char *m;

	if (want > s->cap)
		want = s->cap;
	m = realloc(s->mem, want * s->rec_size);
	if (!m)
		return nf_error_set(err, NF_ENOMEM, "sort: out of memory");
	s->mem = m;
	s->alloc = want;
	return 0;
}

static int write_all(int fd, const void *p, size_t len, off_t off)
{
	const char *c = p;

	while (len > 0) {
		ssize_t w = pwrite(fd, c, len, off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		len -= (size_t)w;
		off += w;
	}
	return 0;
}

/*
 * Sorts n records of sz bytes with a stable bottom-up merge sort through a
 * buffer as large as the records: sequential copies only. (qsort on records
 * over 32 bytes sorts pointers and then permutes the records, scattered
 * copies that showed as the sorts' main cost.) Returns -1 when the buffer
 * cannot be had; the records are then left to qsort.
 */
#define SORT_BLOCK 16u
/* Copies one record: records are whole 8-byte words, copied inline. */
static inline void copy_rec(char *d, const char *s, size_t sz)
{
	if (sz % 8 == 0) {
		for (size_t i = 0; i < sz; i += 8) {
			uint64_t w;

			memcpy(&w, s + i, 8);
			memcpy(d + i, &w, 8);
		}
	} else {
		memcpy(d, s, sz);
	}
}

static int merge_sort(char *a, size_t n, size_t sz, int (*cmp)(const void *, const void *))
{
	char *t, *src, *dst;

	if (n < 2)
		return 0;
	t = malloc(n * sz);
	if (!t)
		return -1;
	/* Insertion sort of blocks, the record in hand kept at t. */
	for (size_t lo = 0; lo < n; lo += SORT_BLOCK) {
		size_t hi = n - lo < SORT_BLOCK ? n : lo + SORT_BLOCK;

		for (size_t i = lo + 1; i < hi; i++) {
			size_t j = i;

			if (cmp(a + (i - 1) * sz, a + i * sz) <= 0)
				continue;
			memcpy(t, a + i * sz, sz);
			while (j > lo && cmp(a + (j - 1) * sz, t) > 0)
				j--;
			memmove(a + (j + 1) * sz, a + j * sz, (i - j) * sz);
			memcpy(a + j * sz, t, sz);
		}
	}
	src = a;
	dst = t;
	for (size_t w = SORT_BLOCK; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = n - lo < w ? n : lo + w;
			size_t hi = n - lo < 2 * w ? n : lo + 2 * w;
			const char *l = src + lo * sz, *le = src + mid * sz;
			const char *r = le, *re = src + hi * sz;
			char *o = dst + lo * sz;

			while (l < le && r < re) {
				if (cmp(l, r) <= 0) {
					copy_rec(o, l, sz);
					l += sz;
				} else {
					copy_rec(o, r, sz);
					r += sz;
				}
				o += sz;
			}
			memcpy(o, l, (size_t)(le - l));
			o += le - l;
			memcpy(o, r, (size_t)(re - r));
		}
		char *x = src;

		src = dst;
		dst = x;
	}
	if (src != a)
		memcpy(a, src, n * sz);
	free(t);
	return 0;
}

static void sort_recs(char *buf, size_t n, size_t sz, nf_sort_cmp cmp)
{
	if (merge_sort(buf, n, sz, cmp) != 0)
		qsort(buf, n, sz, cmp);
}

static void sort_mem(struct nf_sorter *s)
{
	sort_recs(s->mem, s->n, s->rec_size, s->cmp);
}

/* Sorts a run job's buffer and writes it at its place in the runs file. */
static void *run_job_main(void *arg)
{
	struct run_job *j = arg;

	sort_recs(j->buf, j->n, j->rec_size, j->cmp);
	if (write_all(j->fd, j->buf, j->n * j->rec_size, j->off) != 0)
		j->rc = nf_error_set(&j->err, NF_EIO, "sort: cannot write a run: %s",
				     strerror(errno));
	return NULL;
}

/* Waits for the run job in flight, if any; returns its error. */
static int join_job(struct nf_sorter *s, struct nf_error *err)
{
	if (!s->th_on)
		return 0;
	pthread_join(s->th, NULL);
	s->th_on = false;
	if (s->job.rc && err)
		*err = s->job.err;
	return s->job.rc;
}

/*
 * Makes the records in memory a run of the runs file: sorted and written on a
 * thread of their own when background is set (the records keep coming into
 * the other buffer meanwhile; at most one job is in flight), else here.
 */
static int flush_run(struct nf_sorter *s, bool background, struct nf_error *err)
{
	int rc;

	if (s->n == 0)
		return 0;
	if (s->fd < 0) {
		s->fd = temp_fd(s->dir, err);
		if (s->fd < 0)
			return NF_EIO;
	}
	if (s->n_runs == s->cap_runs) {
		size_t cap = s->cap_runs ? s->cap_runs * 2 : 8;
		struct run *r = realloc(s->runs, cap * sizeof(*r));

		if (!r)
			return nf_error_set(err, NF_ENOMEM, "sort: out of memory");
		s->runs = r;
		s->cap_runs = cap;
	}
	if ((rc = join_job(s, err)) != 0)
		return rc;
	if (background && !s->spare && !(s->spare = malloc(s->cap * s->rec_size)))
		background = false; /* no second buffer: sort here */
	s->job = (struct run_job){ s->mem, s->n, s->rec_size, s->end, s->fd, s->cmp, 0, { 0 } };
	s->runs[s->n_runs++] = (struct run){ s->end, s->n, NULL, 0, 0 };
	s->end += (off_t)(s->n * s->rec_size);
	s->n = 0;
	if (background && pthread_create(&s->th, NULL, run_job_main, &s->job) == 0) {
		char *m = s->mem;

		s->th_on = true;
		s->mem = s->spare;
		s->spare = m;
		s->alloc = s->cap;
		return 0;
	}
	run_job_main(&s->job);
	if (s->job.rc && err)
		*err = s->job.err;
	return s->job.rc;
}

int nf_sorter_add(struct nf_sorter *s, const void *rec, struct nf_error *err)
{
	int rc;

	if (s->n == s->cap && (rc = flush_run(s, true, err)) != 0)
		return rc;
	if (s->n == s->alloc && (rc = sorter_grow(s, err)) != 0)
		return rc;
	memcpy(s->mem + s->n * s->rec_size, rec, s->rec_size);
	s->n++;
	s->total++;
	return 0;
}

static int run_load(struct nf_sorter *s, struct run *r, struct nf_error *err)
{
	size_t per = RUN_BUF_BYTES / s->rec_size;
	size_t want = r->left < per ? (size_t)r->left : per;
	size_t len = want * s->rec_size, got = 0;

	if (!r->buf) {
		r->buf = malloc(per * s->rec_size);
		if (!r->buf)
			return nf_error_set(err, NF_ENOMEM, "sort: out of memory");
	}
	while (got < len) {
		ssize_t n = pread(s->fd, r->buf + got, len - got, r->off + (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return nf_error_set(err, NF_EIO, "sort: cannot read a run");
		got += (size_t)n;
	}
	r->off += (off_t)len;
	r->left -= want;
	r->n = want;
	r->pos = 0;
	return 0;
}

static const void *run_cur(const struct nf_sorter *s, const struct run *r)
{
	return r->buf + r->pos * s->rec_size;
}

static bool heap_less(const struct nf_sorter *s, size_t a, size_t b)
{
	int c = s->cmp(run_cur(s, &s->runs[a]), run_cur(s, &s->runs[b]));

	return c < 0 || (c == 0 && a < b);
}

static void heap_down(struct nf_sorter *s, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < s->n_heap && heap_less(s, s->heap[l], s->heap[m]))
			m = l;
		if (r < s->n_heap && heap_less(s, s->heap[r], s->heap[m]))
			m = r;
		if (m == i)
			return;
		size_t t = s->heap[i];

		s->heap[i] = s->heap[m];
		s->heap[m] = t;
		i = m;
	}
}

/*
 * Merges runs[first .. first + count) into one run appended to the file, which
 * takes their place in the runs (in order: the merge stays stable).
 */
static int merge_group(struct nf_sorter *s, size_t first, size_t count, struct nf_error *err)
{
	size_t per = RUN_BUF_BYTES / s->rec_size, n_out = 0;
	char *out = malloc(per * s->rec_size);
	off_t start = s->end;
	uint64_t total = 0;
	int rc = 0;

	if (!out)
		return nf_error_set(err, NF_ENOMEM, "sort: out of memory");
	s->n_heap = 0;
	for (size_t i = first; i < first + count && rc == 0; i++) {
		rc = run_load(s, &s->runs[i], err);
		s->heap[s->n_heap++] = i;
	}
	for (size_t i = s->n_heap / 2; rc == 0 && i-- > 0;)
		heap_down(s, i);
	while (rc == 0 && s->n_heap) {
		struct run *r = &s->runs[s->heap[0]];

		memcpy(out + n_out * s->rec_size, run_cur(s, r), s->rec_size);
		total++;
		if (++n_out == per) {
			if (write_all(s->fd, out, n_out * s->rec_size, s->end) != 0)
				rc = nf_error_set(err, NF_EIO, "sort: cannot write a run: %s",
						  strerror(errno));
			s->end += (off_t)(n_out * s->rec_size);
			n_out = 0;
		}
		if (++r->pos == r->n) {
			if (r->left)
				rc = rc ? rc : run_load(s, r, err);
			else
				s->heap[0] = s->heap[--s->n_heap];
		}
		if (s->n_heap)
			heap_down(s, 0);
	}
	if (rc == 0 && n_out) {
		if (write_all(s->fd, out, n_out * s->rec_size, s->end) != 0)
			rc = nf_error_set(err, NF_EIO, "sort: cannot write a run: %s", strerror(errno));
		s->end += (off_t)(n_out * s->rec_size);
	}
	free(out);
	for (size_t i = first; i < first + count; i++) {
		free(s->runs[i].buf);
		s->runs[i].buf = NULL;
	}
	if (rc)
		return rc;
	s->runs[first] = (struct run){ start, total, NULL, 0, 0 };
	memmove(&s->runs[first + 1], &s->runs[first + count],
		(s->n_runs - first - count) * sizeof(*s->runs));
	s->n_runs -= count - 1;
	s->n_heap = 0;
	return 0;
}

int nf_sorter_sort(struct nf_sorter *s, struct nf_error *err)
{
	int rc;

	if (s->sorted)
		return nf_error_set(err, NF_ESTATE, "sort: already sorted");
	s->sorted = true;
	if (s->n_runs == 0) {
		if (s->n)
			sort_mem(s);
		return 0;
	}
	rc = flush_run(s, false, err);
	rc = rc ? rc : join_job(s, err);
	if (rc)
		return rc;
	free(s->mem);
	s->mem = NULL;
	free(s->spare);
	s->spare = NULL;
	s->heap = malloc((s->n_runs < SORT_FANIN ? s->n_runs : SORT_FANIN) * sizeof(*s->heap));
	if (!s->heap)
		return nf_error_set(err, NF_ENOMEM, "sort: out of memory");
	/*
	 * Too many runs: merge consecutive groups (the merged run takes the
	 * group's place, so the order stays) until at most SORT_FANIN are left,
	 * no group larger than needed, and a pass over fresh runs before merged
	 * ones are merged again.
	 */
	for (size_t g = 0; s->n_runs > SORT_FANIN;) {
		size_t count = s->n_runs - SORT_FANIN + 1;

		if (count > SORT_FANIN)
			count = SORT_FANIN;
		if (count > s->n_runs - g)
			count = s->n_runs - g;
		if (count < 2) {
			g = 0; /* the pass reached the end: the next one starts over */
			continue;
		}
		if ((rc = merge_group(s, g, count, err)) != 0)
			return rc;
		g++;
	}
	for (size_t i = 0; i < s->n_runs; i++) {
		rc = run_load(s, &s->runs[i], err);
		if (rc)
			return rc;
		s->heap[s->n_heap++] = i;
	}
	for (size_t i = s->n_heap / 2; i-- > 0;)
		heap_down(s, i);
	return 0;
}

int nf_sorter_next(struct nf_sorter *s, const void **rec, struct nf_error *err)
{
	if (!s->sorted)
		return nf_error_set(err, NF_ESTATE, "sort: not sorted");
	if (s->n_runs == 0) {
		if (s->mem_pos == s->n)
			return 0;
		*rec = s->mem + s->mem_pos++ * s->rec_size;
		return 1;
	}
	/*
	 * The record handed out last time is consumed now, so the pointer given
	 * to the caller stayed valid until this call.
	 */
	if (s->mem_pos) {
		struct run *r = &s->runs[s->heap[0]];

		if (++r->pos == r->n) {
			if (r->left) {
				int rc = run_load(s, r, err);

				if (rc)
					return rc;
			} else {
				s->heap[0] = s->heap[--s->n_heap];
			}
		}
		if (s->n_heap)
			heap_down(s, 0);
	}
	if (s->n_heap == 0)
		return 0;
	s->mem_pos = 1;
	*rec = run_cur(s, &s->runs[s->heap[0]]);
	return 1;
}

uint64_t nf_sorter_count(const struct nf_sorter *s)
{
	return s->total;
}

void nf_sorter_destroy(struct nf_sorter *s)
{
	if (!s)
		return;
	join_job(s, NULL);
	for (size_t i = 0; i < s->n_runs; i++)
		free(s->runs[i].buf);
	free(s->runs);
	free(s->heap);
	free(s->mem);
	free(s->spare);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
}
