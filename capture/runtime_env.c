/*
 * Recording from inside a program: when `nftrace record -- PROGRAM` runs a
 * program that links libnfence, NFTRACE_RECORD_DIR tells the runtime to write
 * its events into that session directory. The session is closed when the
 * runtime is destroyed.
 */
#include "engine_int.h"
#include "nftrace/ctf.h"
#include "session_env.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	(*out)->owned_writer = w;
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

int nf_runtime_close_owned(nf_runtime *rt, struct nf_error *err)
{
	struct nf_error local;
	int rc = 0;

	if (!rt || !rt->owned_writer)
		return 0;
	memset(&local, 0, sizeof(local));
	if (!err)
		err = &local;
	if (!rt->finished && !rt->err.code)
		rc = nf_runtime_finish(rt, err);
	int rc2 = nf_ctf_writer_close(rt->owned_writer, rc ? NULL : err);
	rt->owned_writer = NULL;
	rc = rc ? rc : rc2;
	if (rc)
		report_status(err->msg);
	else if (rt->err.code)
		report_status(rt->err.msg);
	return rc;
}

/* Forks counted in the child (pthread_atfork), so a runtime can tell it is
 * used by a process it does not belong to without a getpid() per call. */
static atomic_uint nf_fork_gen;
static pthread_once_t nf_fork_once = PTHREAD_ONCE_INIT;

static void fork_child(void)
{
	atomic_fetch_add_explicit(&nf_fork_gen, 1, memory_order_relaxed);
}

static void fork_register(void)
{
	pthread_atfork(NULL, NULL, fork_child);
}

void nf_fork_watch(struct nf_runtime *rt)
{
	pthread_once(&nf_fork_once, fork_register);
	rt->fork_gen = atomic_load_explicit(&nf_fork_gen, memory_order_relaxed);
	rt->pid = (int)getpid();
}

int nf_fork_check(const struct nf_runtime *rt, struct nf_error *err)
{
	static atomic_int told;
	char msg[200];

	if (!rt || rt->fork_gen == atomic_load_explicit(&nf_fork_gen, memory_order_relaxed))
		return 0;
	/* Its events would interleave with the parent's in one session (or be
	 * lost): refused, each process must create its own runtime. */
	snprintf(msg, sizeof(msg),
		 "this runtime belongs to process %d; process %d, forked from it, must create its own (its events are refused)",
		 rt->pid, (int)getpid());
	if (rt->owned_writer && !atomic_exchange(&told, 1))
		report_status(msg);
	return nf_error_set(err, NF_ESTATE, "%s", msg);
}

void nf_runtime_abandon_owned(struct nf_runtime *rt)
{
	if (rt && rt->owned_writer) {
		nf_ctf_writer_abandon(rt->owned_writer);
		rt->owned_writer = NULL;
	}
}
