/* nftrace push: sessions into a ClickHouse fleet store (push/, include/contract/push.h). */
#include "cli.h"

#include "contract/escape.h"
#include "contract/push.h"

#include <stdio.h>

enum { O_CLICKHOUSE, O_DATABASE, O_BATCH_BYTES, O_CLUSTER, O_STREAMS, O_TIMEOUT, O_QUIET };

static const struct nf_cli_option options[] = {
	[O_CLICKHOUSE] = { .name = "clickhouse", .arg = "URL", .flags = NF_OPT_REQUIRED | NF_OPT_REPEAT,
			   .help = "the server (http://host:8123); with --cluster, one per shard, in order" },
	[O_DATABASE] = { .name = "database", .arg = "DB", .help = "database (default nftrace)" },
	[O_BATCH_BYTES] = { .name = "batch-bytes", .arg = "N",
			    .help = "bytes per INSERT, from 4096 to 1 GiB (default 256 MiB)" },
	[O_CLUSTER] = { .name = "cluster", .arg = "NAME", .help = "the servers' cluster (remote_servers) to shard over" },
	[O_STREAMS] = { .name = "streams", .arg = "K", .help = "connections at once, 1 to 64 (default 2)" },
	[O_TIMEOUT] = { .name = "timeout", .arg = "S",
			.help = "seconds one HTTP request may take, 1 to 86400 (default 600)" },
	[O_QUIET] = { .name = "quiet", .short_name = 'q', .help = "print nothing when it worked" },
	{ 0 },
};

#define PUSH_MAX_URLS 64

struct push_state {
	struct nf_push_options po;
	const char *urls[PUSH_MAX_URLS];
};

/* Usage checks; every session's timeline is built before the store is touched. */
static int push_prepare(struct nf_cli *c)
{
	struct push_state *st = c->state;
	struct nf_push_options *po = &st->po;
	long long v;
	const char *u;
	size_t nurls = 0;
	int pos = 0, r;

	while ((u = nf_cli_next(c, O_CLICKHOUSE, &pos))) {
		if (nurls == PUSH_MAX_URLS)
			return nf_cli_usage_error("push", "more than %d --clickhouse URLs", PUSH_MAX_URLS);
		st->urls[nurls++] = u;
	}
	po->database = nf_cli_get(c, O_DATABASE);
	v = 0;
	if ((r = nf_cli_int(c, O_BATCH_BYTES, 4096, 1ll << 30, &v)))
		return r;
	po->batch_bytes = (size_t)v;
	po->cluster = nf_cli_get(c, O_CLUSTER);
	v = 0;
	if ((r = nf_cli_int(c, O_STREAMS, 1, 64, &v)))
		return r;
	po->streams = (unsigned)v;
	v = 0;
	if ((r = nf_cli_int(c, O_TIMEOUT, 1, 86400, &v)))
		return r;
	po->timeout_s = (long)v;
	if (nurls > 1 && !po->cluster)
		return nf_cli_usage_error("push", "several --clickhouse URLs are the shards of a --cluster NAME");
	po->url = st->urls[0];
	po->shards = st->urls;
	po->n_shards = nurls;
	/* every session's name first: one the server cannot store fails before
	 * any timeline is built or anything is sent */
	for (int i = 0; i < c->n_args; i++) {
		struct nf_error err;
		char id[NF_PUSH_ID_MAX + 1];

		nf_error_clear(&err);
		if (nf_push_session_id(c->args[i], id, sizeof(id), &err))
			return nf_cli_fail("push", &err);
	}
	c->n_sessions = (size_t)c->n_args;
	return 0;
}

static int push_run(struct nf_cli *c)
{
	struct push_state *st = c->state;
	struct nf_error err;

	nf_error_clear(&err);
	if (nf_push_prepare(&st->po, &err))
		return nf_cli_fail("push", &err);
	for (int i = 0; i < c->n_args; i++) {
		struct nf_push_stats ps;
		char id[NF_PUSH_ID_MAX + 1], shown[4200], sid[4 * NF_PUSH_ID_MAX + 1];

		if (nf_push_session(&st->po, c->args[i], &ps, &err))
			return nf_cli_fail("push", &err);
		nf_push_session_id(c->args[i], id, sizeof(id), NULL);
		if (!nf_cli_has(c, O_QUIET)) /* the directory and its name as text */
			printf("%s: session %s: %llu rows in %u tables, %llu batches, %llu bytes\n",
			       nf_esc_text_buf(shown, sizeof(shown), c->args[i], 0), nf_esc_text_buf(sid, sizeof(sid), id, 0),
			       (unsigned long long)ps.rows, ps.tables, (unsigned long long)ps.batches,
			       (unsigned long long)ps.bytes);
	}
	return NF_EXIT_OK;
}

const struct nf_cli_cmd cmd_push = {
	.options = options,
	.args = "session DIR",
	.min_args = 1,
	.max_args = -1,
	.args_complete = NF_COMPLETE_SESSION,
	.synopsis =
		"nftrace push DIR... --clickhouse URL [--database DB] [--batch-bytes N] [--streams K]\n"
		"             [--timeout S] [--quiet]\n"
		"nftrace push DIR... --cluster NAME --clickhouse URL1 --clickhouse URL2... [options]\n",
	.description =
		"Loads each session's timeline (built when missing) into ClickHouse over its HTTP interface\n"
		"(URL: http://host:8123, may carry ?user=..&password=..), in Native-format INSERTs of about\n"
		"N bytes each (default 256 MiB), each streamed as it is encoded, over K connections at once\n"
		"(default 2; each reads the timeline on a thread of its own; memory: about 6 MiB each).\n"
		"Creates database DB (default nftrace) and the tables when missing:\n"
		"every table of nftrace-timeline(5) with a leading session column (MergeTree, one\n"
		"partition per session, ordered by session and time) and `sessions` (one row per complete\n"
		"session: host, source, tool_version, seed, rows, every meta pair). The session id is the\n"
		"directory's name. Pushing a session again replaces it; a push that fails half-way leaves\n"
		"the previous version, or no listing: a session's rows count only when it is in `sessions`.\n"
		"Query with 'nftrace query --clickhouse URL \"SQL\"' or clickhouse-client.\n"
		"--cluster NAME: the servers define cluster NAME (remote_servers); one --clickhouse URL per\n"
		"shard, in shard order. Each shard gets <table>_local tables, each a Distributed <table>\n"
		"over them (sharding key cityHash64(session)); a session goes whole to its shard.\n",
	.state_size = sizeof(struct push_state),
	.prepare = push_prepare,
	.run = push_run,
};
