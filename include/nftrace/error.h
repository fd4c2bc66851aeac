/*
 * nftrace error context: how every library module reports failure.
 *
 * Library functions return 0 or a negative NF_E* code and fill a caller-owned
 * struct nf_error with a one-line message. The first error set wins; callers may
 * prefix context (a file name, an offset) with nf_error_prefix(). Only the CLI's
 * main prints the message and maps the code to an exit status.
 */
#ifndef NFTRACE_ERROR_H
#define NFTRACE_ERROR_H

#include <stdarg.h>

#include "nftrace/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

enum nf_errcode {
	NF_OK = 0,
	NF_EINVAL = -1,   /* bad argument or bad handle passed by the caller */
	NF_ENOMEM = -2,   /* allocation failed or a resource bound was hit */
	NF_EIO = -3,      /* a read or write failed (disk full, permission, ...) */
	NF_EFORMAT = -4,  /* input data is malformed (file, offset and cause in msg) */
	NF_ENOENT = -5,   /* a file, session or object does not exist */
	NF_EEXIST = -6,   /* refusing to overwrite something that exists */
	NF_ESTATE = -7,   /* operation not allowed in the object's current state */
	NF_ETIMEOUT = -8, /* a wait timed out */
	NF_EUNSUPP = -9,  /* the adapter or OS does not support the operation */
	NF_ESQL = -10,    /* an SQL statement failed */
	NF_EINTR = -11,   /* interrupted by a signal; work so far was kept */
};

#define NF_ERROR_MSG_MAX 512

struct nf_error {
	int code;                     /* first error code set, NF_OK if none */
	char msg[NF_ERROR_MSG_MAX];   /* one line, no trailing newline */
};

/* Clears an error context so it can be reused (code NF_OK, empty message).
 * NULL is a no-op. Touches only *err. */
NF_API void nf_error_clear(struct nf_error *err);

/*
 * Records an error unless one is already recorded (first error wins).
 * Returns code, so that `return nf_error_set(err, NF_EINVAL, "...")` reads well.
 * err may be NULL, in which case only the code is returned.
 */
int nf_error_set(struct nf_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int nf_error_vset(struct nf_error *err, int code, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* Prepends "<prefix>: " to the recorded message (adds context on the way up);
 * the result is cut to NF_ERROR_MSG_MAX - 1 bytes. A no-op when err is NULL
 * or holds no error. Returns nothing: it cannot fail. */
void nf_error_prefix(struct nf_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A short lowercase name for a code ("invalid argument", ...): a static
 * string, never NULL ("unknown error" for a code not in enum nf_errcode).
 * Thread-safe. */
NF_API const char *nf_strerror(int code);

/*
 * Text from a session or a message is shown on a terminal with its control
 * characters as '?': returns the length in bytes of the control character at
 * s (1 for C0 bytes and DEL, 2 for the UTF-8 encoding of a C1 control
 * U+0080..U+009F, such as U+009B CSI), or 0 when s starts with anything else
 * (including the end of the string). Newlines and tabs count as controls;
 * callers that keep them test for them first.
 */
int nf_text_control_len(const char *s);

#ifdef __cplusplus
}
#endif

#endif
