/*
 * nftrace error context: how every library module reports failure.
 *
 * Library functions return 0 or a negative NF_E* code and fill a caller-owned
 * struct nf_error with a one-line message. The first error set wins; callers may
 * prefix context (a file name, an offset) with nf_error_prefix() (the setters are
 * nftrace's own, in contract/errors.h). Only the CLI's main prints the message and
 * maps the code to an exit status.
 */
#ifndef NFTRACE_ERROR_H
#define NFTRACE_ERROR_H

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

/* A short lowercase name for a code ("invalid argument", ...): a static
 * string, never NULL ("unknown error" for a code not in enum nf_errcode).
 * Thread-safe. */
NF_API const char *nf_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif
