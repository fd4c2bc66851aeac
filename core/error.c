/* The error context shared by every nftrace library (see include/nftrace/error.h). */
#include "contract/errors.h"

#include <stdio.h>
#include <string.h>

void nf_error_clear(struct nf_error *err)
{
	if (!err)
		return;
	err->code = NF_OK;
	err->msg[0] = '\0';
}

int nf_error_vset(struct nf_error *err, int code, const char *fmt, va_list ap)
{
	if (!err || err->code != NF_OK)
		return code;
	err->code = code;
	/* A message longer than msg (a very long path) keeps its start and its
	 * end, where "what is wrong" is, with "..." between. */
	char full[8192];
	int n = vsnprintf(full, sizeof(full), fmt, ap);
	size_t len = n < 0 ? 0 : (size_t)n < sizeof(full) ? (size_t)n : sizeof(full) - 1;
	if (len < sizeof(err->msg)) {
		memcpy(err->msg, full, len + 1);
	} else {
		size_t head = 160, tail = sizeof(err->msg) - 1 - head - 3;
		memcpy(err->msg, full, head);
		memcpy(err->msg + head, "...", 3);
		memcpy(err->msg + head + 3, full + len - tail, tail + 1);
	}
	/* Messages are one line: fold any newline that slipped in from input. */
	for (char *p = err->msg; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	return code;
}

int nf_error_set(struct nf_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	nf_error_vset(err, code, fmt, ap);
	va_end(ap);
	return code;
}

void nf_error_prefix(struct nf_error *err, const char *fmt, ...)
{
	char prefix[256], old[NF_ERROR_MSG_MAX];
	va_list ap;

	if (!err || err->code == NF_OK)
		return;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	/* Truncation is fine here: the message stays one bounded line. */
	size_t plen = strnlen(prefix, sizeof(prefix) - 1);
	size_t room = sizeof(err->msg) - 1;
	size_t n = plen < room ? plen : room;

	memcpy(err->msg, prefix, n);
	if (n + 2 <= room) {
		err->msg[n++] = ':';
		err->msg[n++] = ' ';
	}
	size_t olen = strnlen(old, sizeof(old) - 1);
	if (olen > room - n)
		olen = room - n;
	memcpy(err->msg + n, old, olen);
	err->msg[n + olen] = '\0';
}

const char *nf_strerror(int code)
{
	switch (code) {
	case NF_OK: return "success";
	case NF_EINVAL: return "invalid argument";
	case NF_ENOMEM: return "out of memory or over a resource limit";
	case NF_EIO: return "input/output error";
	case NF_EFORMAT: return "malformed input";
	case NF_ENOENT: return "not found";
	case NF_EEXIST: return "already exists";
	case NF_ESTATE: return "not allowed in this state";
	case NF_ETIMEOUT: return "timed out";
	case NF_EUNSUPP: return "not supported";
	case NF_ESQL: return "sql error";
	case NF_EINTR: return "interrupted";
	}
	return "unknown error";
}
