/*
 * The error setters every nftrace module uses (contract between core and the
 * other modules; not installed: a program linking libnfence reads errors with
 * nftrace/error.h only). See nftrace/error.h for struct nf_error and the codes.
 */
#ifndef NF_CONTRACT_ERRORS_H
#define NF_CONTRACT_ERRORS_H

#include <stdarg.h>

#include "nftrace/error.h"

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

#endif
