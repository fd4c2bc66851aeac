/*
 * The export's buffered output: both writers put small pieces (a packet, a
 * JSON event) one after another, so they collect in one large buffer that
 * goes to the file in big writes. With nf_xout_start, a full buffer is
 * handed to a writer thread and the encoding goes on in a second buffer, so
 * the operating system's copy into the page cache (a large part of a big
 * export's cost) runs beside the encoding. A write error is kept and reported once,
 * when the export flushes at the end.
 */
#define _GNU_SOURCE 1 /* O_DIRECT */
#include "export_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Direct writes: a regular file is written with O_DIRECT when the file system
 * takes it. On this kind of machine the operating system's copy into the page
 * cache cost more than the whole encoding (3 GB: 8.5 s of system time buffered, 0.3 s
 * direct). O_DIRECT wants aligned addresses, lengths and offsets, so the thread
 * gathers the buffers it is handed in an aligned staging area and writes whole
 * blocks; the tail (less than a block) goes out with O_DIRECT cleared at the
 * final flush. Any refusal (EINVAL: a file system without it) falls back to
 * plain writes of what is staged, losing nothing.
 */
#define XOUT_ALIGN 4096u

struct nf_xout_bg {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t th;
	unsigned char *pending;  /* a full buffer being written (NULL: none) */
	size_t pending_len;
	unsigned char *spare;    /* the other buffer, free to fill */
	int quit;
	int finish;              /* the final flush asks for the staged tail */
	/* Direct writes (see above): fd with O_DIRECT set, the aligned staging area. */
	int direct, fd, fd_plain;  /* fd_plain: write(fd), not the FILE (after direct mode) */
	unsigned char *stage;
	size_t stage_len, stage_cap;
	/* What the thread did, taken over by the encoding thread at each handoff. */
	uint64_t written;
	int failed, err_no;
};

/* Writes n bytes at p to fd, whole or an error (errno set). */
static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = EIO;
			return -1;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Leaves direct mode: O_DIRECT cleared, the staged bytes written plainly. */
static int direct_end(struct nf_xout_bg *bg)
{
	int fl = fcntl(bg->fd, F_GETFL), rc = 0;

	bg->direct = 0;
	if (fl < 0 || fcntl(bg->fd, F_SETFL, fl & ~O_DIRECT) < 0)
		rc = -1;
	if (rc == 0 && bg->stage_len && write_all(bg->fd, bg->stage, bg->stage_len) < 0)
		rc = -1;
	bg->stage_len = 0;
	return rc;
}

/*
 * Stages n bytes and writes the whole blocks staged; 0, or -1 with errno set
 * and *used the bytes of p taken into the staging area (the rest are not).
 */
static int direct_write(struct nf_xout_bg *bg, const unsigned char *p, size_t n, size_t *used)
{
	*used = 0;
	while (*used < n) {
		size_t k = bg->stage_cap - bg->stage_len, whole;

		if (k > n - *used)
			k = n - *used;
		memcpy(bg->stage + bg->stage_len, p + *used, k);
		bg->stage_len += k;
		*used += k;
		whole = bg->stage_len & ~(size_t)(XOUT_ALIGN - 1);
		if (!whole)
			continue;
		if (write_all(bg->fd, bg->stage, whole) < 0)
			return -1;  /* what was staged stays staged */
		memmove(bg->stage, bg->stage + whole, bg->stage_len - whole);
		bg->stage_len -= whole;
	}
	return 0;
}

/* Writes a handed-over buffer: direct, else plainly to the descriptor (after
 * direct mode began or ended) or through the FILE; 0 or -1 (errno set). */
static int bg_write(struct nf_xout *o, struct nf_xout_bg *bg, const unsigned char *p, size_t n)
{
	size_t used = 0;

	if (bg->direct) {
		int e;

		if (direct_write(bg, p, n, &used) == 0)
			return 0;
		e = errno;
		/* EINVAL on the first whole blocks: the file system does not take
		 * direct writes after all (nothing of them was written). Plain
		 * writes of what is staged and of the rest. Anything else is an
		 * error as it would be without O_DIRECT. */
		if (e != EINVAL || bg->written || direct_end(bg) < 0) {
			errno = e;
			return -1;
		}
		bg->fd_plain = 1;
	}
	if (bg->fd_plain)
		return write_all(bg->fd, p + used, n - used);
	return fwrite(p, 1, n, o->f) == n ? 0 : -1;
}

/* Whether o's file can take direct writes from here; sets them up. */
static void direct_begin(struct nf_xout *o, struct nf_xout_bg *bg)
{
	struct stat sb;
	int fd, fl;
	void *mem;

	if (getenv("NFTRACE_EXPORT_BUFFERED"))
		return;
	if (!o->f || fflush(o->f) != 0 || (fd = fileno(o->f)) < 0 || fstat(fd, &sb) != 0 ||
	    !S_ISREG(sb.st_mode) || lseek(fd, 0, SEEK_CUR) % XOUT_ALIGN != 0)
		return;
	if (posix_memalign(&mem, XOUT_ALIGN, o->cap + XOUT_ALIGN) != 0)
		return;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_DIRECT) < 0) {
		free(mem);
		return;
	}
	bg->stage = mem;
	bg->stage_cap = o->cap + XOUT_ALIGN;
	bg->fd = fd;
	bg->direct = 1;
}

static void *bg_main(void *arg)
{
	struct nf_xout *o = arg;
	struct nf_xout_bg *bg = o->bg;

	pthread_mutex_lock(&bg->mu);
	for (;;) {
		unsigned char *p;
		size_t n;
		int ok;

		while (!bg->pending && !bg->quit && !bg->finish)
			pthread_cond_wait(&bg->cv, &bg->mu);
		if (!bg->pending && bg->finish) {
			/* The final flush: the staged tail, O_DIRECT cleared. */
			if (bg->direct) {
				errno = 0;
				if (direct_end(bg) < 0 && !bg->failed) {
					bg->failed = 1;
					bg->err_no = errno ? errno : EIO;
				}
				bg->fd_plain = 1;
			}
			bg->finish = 0;
			pthread_cond_broadcast(&bg->cv);
			continue;
		}
		if (!bg->pending)
			break;
		p = bg->pending;
		n = bg->pending_len;
		pthread_mutex_unlock(&bg->mu);
		errno = 0;
		ok = bg->failed || bg_write(o, bg, p, n) == 0;
		pthread_mutex_lock(&bg->mu);
		if (!ok && !bg->failed) {
			bg->failed = 1;
			bg->err_no = errno ? errno : EIO;
		} else if (ok && !bg->failed) {
			bg->written += n;
		}
		bg->spare = p;
		bg->pending = NULL;
		pthread_cond_broadcast(&bg->cv);
	}
	pthread_mutex_unlock(&bg->mu);
	return NULL;
}

/* Waits for the writer thread to be idle and takes over what it did. Locked. */
static void bg_settle(struct nf_xout *o)
{
	struct nf_xout_bg *bg = o->bg;

	while (bg->pending)
		pthread_cond_wait(&bg->cv, &bg->mu);
	o->written = bg->written;
	if (bg->failed && !o->failed) {
		o->failed = 1;
		o->err_no = bg->err_no;
	}
}

int nf_xout_start(struct nf_xout *o)
{
	struct nf_xout_bg *bg = calloc(1, sizeof(*bg));

	if (!bg || !(bg->spare = malloc(o->cap))) {
		free(bg);
		return -1;
	}
	pthread_mutex_init(&bg->mu, NULL);
	pthread_cond_init(&bg->cv, NULL);
	bg->written = o->written;
	direct_begin(o, bg);
	o->bg = bg;
	if (pthread_create(&bg->th, NULL, bg_main, o) != 0) {
		o->bg = NULL;
		pthread_cond_destroy(&bg->cv);
		pthread_mutex_destroy(&bg->mu);
		if (bg->direct)
			direct_end(bg);  /* nothing staged yet: clears O_DIRECT */
		free(bg->stage);
		free(bg->spare);
		free(bg);
		return -1;
	}
	return 0;
}

void nf_xout_stop(struct nf_xout *o)
{
	struct nf_xout_bg *bg = o->bg;

	if (!bg)
		return;
	pthread_mutex_lock(&bg->mu);
	bg_settle(o);
	if (bg->direct) {
		bg->finish = 1;
		pthread_cond_broadcast(&bg->cv);
		while (bg->finish)
			pthread_cond_wait(&bg->cv, &bg->mu);
		bg_settle(o);
	}
	bg->quit = 1;
	pthread_cond_broadcast(&bg->cv);
	pthread_mutex_unlock(&bg->mu);
	pthread_join(bg->th, NULL);
	pthread_cond_destroy(&bg->cv);
	pthread_mutex_destroy(&bg->mu);
	free(bg->stage);
	free(bg->spare);
	free(bg);
	o->bg = NULL;
}

/* A full buffer out: to the writer thread (taking its spare), else written here. */
static int xout_drain(struct nf_xout *o)
{
	struct nf_xout_bg *bg = o->bg;

	if (!bg)
		return nf_xout_flush(o);
	if (o->failed)
		return -1;
	if (!o->len)
		return 0;
	pthread_mutex_lock(&bg->mu);
	bg_settle(o);
	if (!o->failed) {
		unsigned char *full = o->buf;

		o->buf = bg->spare;
		bg->spare = NULL;
		bg->pending = full;
		bg->pending_len = o->len;
		o->len = 0;
		pthread_cond_broadcast(&bg->cv);
	}
	pthread_mutex_unlock(&bg->mu);
	return o->failed ? -1 : 0;
}

int nf_xout_flush(struct nf_xout *o)
{
	if (o->bg) {
		struct nf_xout_bg *bg = o->bg;

		/* The rest goes through the thread too (it may hold a staged tail
		 * that must come first), then the tail is written. */
		if (xout_drain(o) < 0)
			return -1;
		pthread_mutex_lock(&bg->mu);
		bg_settle(o);
		bg->finish = 1;
		pthread_cond_broadcast(&bg->cv);
		while (bg->finish)
			pthread_cond_wait(&bg->cv, &bg->mu);
		bg_settle(o);
		pthread_mutex_unlock(&bg->mu);
		if (o->failed)
			return -1;
		if (bg->fd_plain)
			return 0;  /* nothing of ours in the FILE's buffer */
	}
	if (o->failed)
		return -1;
	if (o->len && fwrite(o->buf, 1, o->len, o->f) != o->len) {
		o->failed = 1;
		o->err_no = errno ? errno : EIO;
		return -1;
	}
	o->written += o->len;
	if (o->bg)
		o->bg->written = o->written;
	o->len = 0;
	return 0;
}

unsigned char *nf_xout_reserve(struct nf_xout *o, size_t n)
{
	if (n > o->cap)
		return NULL;
	if (o->cap - o->len < n && xout_drain(o) < 0)
		return NULL;
	return o->failed ? NULL : o->buf + o->len;
}

void nf_xout_bytes(struct nf_xout *o, const void *p, size_t n)
{
	const unsigned char *s = p;

	while (n && !o->failed) {
		size_t room = o->cap - o->len, k = n < room ? n : room;

		memcpy(o->buf + o->len, s, k);
		o->len += k;
		s += k;
		n -= k;
		if (n && xout_drain(o) < 0)
			return;
	}
}

void nf_xout_str(struct nf_xout *o, const char *s)
{
	nf_xout_bytes(o, s, strlen(s));
}
