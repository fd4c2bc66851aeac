/*
 * The export's buffered output: both writers put small pieces (a packet, a
 * JSON event) one after another, so they collect in one large buffer that
 * goes to the file in big writes. With nf_xout_start, a full buffer is
 * handed to a writer thread and the encoding goes on in a second buffer, so
 * the kernel's copy into the page cache (a large part of a big export's
 * cost) runs beside the encoding. A write error is kept and reported once,
 * when the export flushes at the end.
 */
#include "export_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct nf_xout_bg {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t th;
	unsigned char *pending;  /* a full buffer being written (NULL: none) */
	size_t pending_len;
	unsigned char *spare;    /* the other buffer, free to fill */
	int quit;
	/* What the thread did, taken over by the encoding thread at each handoff. */
	uint64_t written;
	int failed, err_no;
};

static void *bg_main(void *arg)
{
	struct nf_xout *o = arg;
	struct nf_xout_bg *bg = o->bg;

	pthread_mutex_lock(&bg->mu);
	for (;;) {
		unsigned char *p;
		size_t n;
		int ok;

		while (!bg->pending && !bg->quit)
			pthread_cond_wait(&bg->cv, &bg->mu);
		if (!bg->pending)
			break;
		p = bg->pending;
		n = bg->pending_len;
		pthread_mutex_unlock(&bg->mu);
		errno = 0;
		ok = bg->failed || fwrite(p, 1, n, o->f) == n;
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
	o->bg = bg;
	if (pthread_create(&bg->th, NULL, bg_main, o) != 0) {
		o->bg = NULL;
		pthread_cond_destroy(&bg->cv);
		pthread_mutex_destroy(&bg->mu);
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
	bg->quit = 1;
	pthread_cond_broadcast(&bg->cv);
	pthread_mutex_unlock(&bg->mu);
	pthread_join(bg->th, NULL);
	pthread_cond_destroy(&bg->cv);
	pthread_mutex_destroy(&bg->mu);
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
		pthread_mutex_lock(&o->bg->mu);
		bg_settle(o);
		pthread_mutex_unlock(&o->bg->mu);
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
