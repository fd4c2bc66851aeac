/*
 * Recording from inside a program: when `nftrace record -- PROGRAM` runs a
 * program that links libnfence, NFTRACE_RECORD_DIR tells the runtime to write
 * its events into that session directory. This file assembles that runtime
 * from the outside: it reads the NFTRACE_* environment, opens the session's
 * CTF writer, creates an ordinary runtime with the writer as its sink, and
 * hands the writer to it as its owner (runtime_owner.h) to close at
 * nf_runtime_close()/nf_runtime_destroy(). The engine includes none of this.
 */
#include "contract/ctf.h"
#include "contract/errors.h"
#include "nftrace/nfence.h"
#include "runtime_owner.h"
#include "session_env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int env_close(void *ctx, const struct nf_error *failure, struct nf_error *err);
static void env_abandon(void *ctx);
static void env_forked(void *ctx, const char *msg);

int nf_runtime_create_from_env(const struct nf_runtime_config *cfg, nf_runtime **out,
			       struct nf_error *err)
{
	const char *dir = getenv("NFTRACE_RECORD_DIR");
	struct nf_runtime_config c = *cfg;
	struct nf_ctf_writer *w = NULL;
	int rc;

	if (!dir || !*dir)
		return nf_runtime_create(cfg, out, err);
	/* Each value is what it says or the runtime is not created: a seed of
	 * "abc" was 0, "-5" wrapped around, an unknown mode was ignored. */
	const char *v = getenv("NFTRACE_SEED");
	if (v) {
		char *end;

		errno = 0;
		unsigned long long seed = strtoull(v, &end, 10);
		if (!*v || *v < '0' || *v > '9' || *end || errno)
			return nf_error_set(err, NF_EINVAL,
					    "NFTRACE_SEED='%.40s': not a decimal number from 0 to 18446744073709551615", v);
		c.seed = seed;
	}
	if ((v = getenv("NFTRACE_GROUND_TRUTH"))) {
		if (strcmp(v, "0") && strcmp(v, "1"))
			return nf_error_set(err, NF_EINVAL, "NFTRACE_GROUND_TRUTH='%.40s': must be 0 or 1", v);
		c.ground_truth = v[0] == '1';
	}
	if ((v = getenv("NFTRACE_MODE"))) {
		if (!strcmp(v, "threaded"))
			c.mode = NF_MODE_THREADED;
		else if (!strcmp(v, "deterministic"))
			c.mode = NF_MODE_DETERMINISTIC;
		else
			return nf_error_set(err, NF_EINVAL,
					    "NFTRACE_MODE='%.40s': must be deterministic or threaded", v);
	}
	const char *src = getenv("NFTRACE_SOURCE");
	rc = nf_session_writer_create(dir, &c, src ? src : "program", NULL, 0, &w, err);
	if (rc)
		return rc;
	c.sink = nf_ctf_writer_sink(w);
	rc = nf_runtime_create(&c, out, err);
	if (rc) {
		nf_ctf_writer_close(w, NULL);
		return rc;
	}
	const struct nf_runtime_owner owner = { w, env_close, env_abandon, env_forked };
	nf_runtime_set_owner(*out, &owner);
	return 0;
}

/*
 * `nftrace record -- PROGRAM` passes the write end of a pipe in
 * NFTRACE_STATUS_FD. nf_runtime_destroy() returns nothing and the program may
 * exit 0 whatever happened, so a recording that failed (the writer's close
 * error: disk full, a file size limit; or the runtime's own error, which the
 * program may have ignored) is told there, one line, for nftrace to report.
 */
static void report_status(const char *msg)
{
	const char *v = getenv("NFTRACE_STATUS_FD");
	char line[sizeof(((struct nf_error *)0)->msg) + 2];
	char *end;
	long fd;
	size_t len, off = 0;

	if (!v || !*v)
		return;
	errno = 0;
	fd = strtol(v, &end, 10);
	if (errno || *end || fd < 3 || fd > 1 << 20)
		return;
	len = (size_t)snprintf(line, sizeof(line), "%s\n", msg && *msg ? msg : "recording failed");
	if (len >= sizeof(line))
		len = sizeof(line) - 1;
	while (off < len) {
		ssize_t n = write((int)fd, line + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		off += (size_t)n;
	}
}

/* The owner's close: the writer's close error is the caller's error
 * (nf_runtime_close) and, with the runtime's own failure, told on the status
 * pipe (nf_runtime_destroy returns nothing; the program may exit 0). */
static int env_close(void *ctx, const struct nf_error *failure, struct nf_error *err)
{
	struct nf_error local;
	int rc;

	memset(&local, 0, sizeof(local));
	rc = nf_ctf_writer_close(ctx, &local);
	if (failure)
		report_status(failure->msg);
	else if (rc)
		report_status(local.msg);
	return rc ? nf_error_set(err, rc, "%s", local.msg) : 0;
}

static void env_abandon(void *ctx)
{
	nf_ctf_writer_abandon(ctx);
}

static void env_forked(void *ctx, const char *msg)
{
	(void)ctx;
	report_status(msg);
}
