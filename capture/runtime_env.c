/*
 * Recording from inside a program: when `nftrace record -- PROGRAM` runs a
 * program that links libnfence, NFTRACE_RECORD_DIR tells the runtime to write
 * its events into that session directory. The session is closed when the
 * runtime is destroyed.
 */
#include "engine_int.h"
#include "nftrace/ctf.h"
#include "session_env.h"

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
	if (getenv("NFTRACE_SEED"))
		c.seed = strtoull(getenv("NFTRACE_SEED"), NULL, 10);
	if (getenv("NFTRACE_GROUND_TRUTH"))
		c.ground_truth = atoi(getenv("NFTRACE_GROUND_TRUTH")) != 0;
	if (getenv("NFTRACE_MODE") && !strcmp(getenv("NFTRACE_MODE"), "threaded"))
		c.mode = NF_MODE_THREADED;
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

int nf_runtime_close_owned(nf_runtime *rt, struct nf_error *err)
{
	int rc = 0;

	if (!rt || !rt->owned_writer)
		return 0;
	if (!rt->finished && !rt->err.code)
		rc = nf_runtime_finish(rt, err);
	int rc2 = nf_ctf_writer_close(rt->owned_writer, err);
	rt->owned_writer = NULL;
	return rc ? rc : rc2;
}
