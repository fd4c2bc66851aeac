/*
 * The export's buffered output: both writers put small pieces (a packet, a
 * JSON event) one after another, so they collect in one large buffer that
 * goes to the file in big writes. A write error is kept and reported once,
 * when the export flushes at the end.
 */
#include "export_int.h"

#include <errno.h>
#include <string.h>

int nf_xout_flush(struct nf_xout *o)
{
	if (o->failed)
		return -1;
	if (o->len && fwrite(o->buf, 1, o->len, o->f) != o->len) {
		o->failed = 1;
		o->err_no = errno ? errno : EIO;
		return -1;
	}
	o->written += o->len;
	o->len = 0;
	return 0;
}

unsigned char *nf_xout_reserve(struct nf_xout *o, size_t n)
{
	if (n > o->cap)
		return NULL;
	if (o->cap - o->len < n && nf_xout_flush(o) < 0)
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
		if (n && nf_xout_flush(o) < 0)
			return;
	}
}

void nf_xout_str(struct nf_xout *o, const char *s)
{
	nf_xout_bytes(o, s, strlen(s));
}
