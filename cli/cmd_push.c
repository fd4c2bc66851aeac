/* nftrace push: sessions into a ClickHouse fleet store (push/, include/contract/push.h). */
#include "cli.h"

#include "contract/escape.h"
#include "contract/push.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What `nftrace push --help` prints; the options it names are parsed below. */
const char cmd_push_usage[] =
	"usage: nftrace push DIR... --clickhouse URL [--database DB] [--batch-bytes N] [--streams K]\n"
	"                   [--timeout S] [--quiet]\n"
	"       nftrace push DIR... --cluster NAME --clickhouse URL1 --clickhouse URL2... [options]\n"
	"\n"
	"Loads each session's timeline (built when missing) into ClickHouse over its HTTP interface\n"
	"(URL: http://host:8123, may carry ?user=..&password=..), in Native-format INSERTs of about\n"
	"N bytes each (default 256 MiB), each streamed as it is encoded, over K connections at once\n"
	"(default 2; each reads the timeline on a thread of its own; memory: about 6 MiB each).\n"
	"Creates database DB (default nftrace) and the tables when missing:\n"
	"every table of schemas/timeline.sql with a leading session column (MergeTree, one\n"
	"partition per session, ordered by session and time) and `sessions` (one row per complete\n"
	"session: host, source, tool_version, seed, rows, every meta pair). The session id is the\n"
	"directory's name. Pushing a session again replaces it; a push that fails half-way leaves\n"
	"the previous version, or no listing: a session's rows count only when it is in `sessions`.\n"
	"Query with 'nftrace query --clickhouse URL \"SQL\"' or clickhouse-client.\n"
	"--timeout S: seconds one HTTP request may take (default 600; 1 to 86400).\n"
	"--cluster NAME: the servers define cluster NAME (remote_servers); one --clickhouse URL per\n"
	"shard, in shard order. Each shard gets <table>_local tables, each a Distributed <table>\n"
	"over them (sharding key cityHash64(session)); a session goes whole to its shard.\n";

int cmd_push(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "clickhouse", required_argument, NULL, 'u' },
		{ "database", required_argument, NULL, 'd' },
		{ "batch-bytes", required_argument, NULL, 'b' },
		{ "cluster", required_argument, NULL, 'C' },
		{ "streams", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 't' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct nf_push_options po = { 0 };
	const char *urls[64];
	size_t nurls = 0;
	struct nf_error err;
	int opt, quiet = 0;

	nf_error_clear(&err);
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":hq", longopts, NULL)) != -1) {
		switch (opt) {
		case 'u':
			if (nurls == sizeof(urls) / sizeof(urls[0]))
				return nf_cli_usage_error("push", "more than 64 --clickhouse URLs");
			urls[nurls++] = optarg;
			break;
		case 'd': po.database = optarg; break;
		case 'b': {
			char *end;
			unsigned long long v = strtoull(optarg, &end, 10);
			if (*end || !*optarg || v < 4096 || v > (1ull << 30))
				return nf_cli_usage_error("push", "--batch-bytes '%s': a number of bytes from 4096 to 1 GiB", optarg);
			po.batch_bytes = (size_t)v;
			break;
		}
		case 'C': po.cluster = optarg; break;
		case 's': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || !*optarg || v < 1 || v > 64)
				return nf_cli_usage_error("push", "--streams '%s': a number from 1 to 64", optarg);
			po.streams = (unsigned)v;
			break;
		}
		case 't':
			if (nf_cli_timeout_option("push", optarg, &po.timeout_s))
				return NF_EXIT_USAGE;
			break;
		case 'q': quiet = 1; break;
		case 'h': return nf_cli_common_option("push", "--help");
		case 'V': return nf_cli_common_option("push", "--version");
		case ':': return nf_cli_usage_error("push", "option '%s' needs a value", argv[optind - 1]);
		default: return nf_cli_usage_error("push", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (!nurls)
		return nf_cli_usage_error("push", "missing --clickhouse URL");
	if (nurls > 1 && !po.cluster)
		return nf_cli_usage_error("push", "several --clickhouse URLs are the shards of a --cluster NAME");
	po.url = urls[0];
	po.shards = urls;
	po.n_shards = nurls;
	if (optind >= argc)
		return nf_cli_usage_error("push", "missing session DIR");
	/* every session's name first: one the server cannot store fails before anything is sent */
	for (int i = optind; i < argc; i++) {
		char id[NF_PUSH_ID_MAX + 1];

		if (nf_push_session_id(argv[i], id, sizeof(id), &err))
			return nf_cli_fail("push", &err);
	}
	if (nf_push_prepare(&po, &err))
		return nf_cli_fail("push", &err);
	for (int i = optind; i < argc; i++) {
		struct nf_push_stats st;
		char id[NF_PUSH_ID_MAX + 1], shown[4200], sid[4 * NF_PUSH_ID_MAX + 1];

		if (nf_push_session(&po, argv[i], &st, &err))
			return nf_cli_fail("push", &err);
		nf_push_session_id(argv[i], id, sizeof(id), NULL);
		if (!quiet) /* the directory and its name as text */
			printf("%s: session %s: %llu rows in %u tables, %llu batches, %llu bytes\n",
			       nf_esc_text_buf(shown, sizeof(shown), argv[i], 0), nf_esc_text_buf(sid, sizeof(sid), id, 0),
			       (unsigned long long)st.rows, st.tables, (unsigned long long)st.batches,
			       (unsigned long long)st.bytes);
	}
	return NF_EXIT_OK;
}
