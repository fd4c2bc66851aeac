/* nftrace query: SQL over one or more sessions' timelines, read-only. */
#include "cli.h"
#include "contract/errors.h"

#include "contract/analysis.h"
#include "contract/push.h"
#include "contract/session.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define QUERY_MAX_SQL (1u << 20)

static char *read_sql_file(const char *path, struct nf_error *err)
{
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n;

	if (!f) {
		nf_error_set(err, NF_ENOENT, "%s: %s", path, strerror(errno));
		return NULL;
	}
	buf = malloc(QUERY_MAX_SQL + 1);
	if (!buf) {
		fclose(f);
		nf_error_set(err, NF_ENOMEM, "out of memory");
		return NULL;
	}
	n = fread(buf, 1, QUERY_MAX_SQL + 1, f);
	if (ferror(f) || n > QUERY_MAX_SQL || n == 0) {
		nf_error_set(err, NF_EFORMAT, "%s: %s", path,
			     ferror(f) ? "read error (is it a directory?)" : n ? "larger than 1 MiB" : "empty file");
		free(buf);
		fclose(f);
		return NULL;
	}
	buf[n] = '\0';
	fclose(f);
	/* SQLite would stop at a NUL and run only what comes before it. */
	if (memchr(buf, '\0', n)) {
		nf_error_set(err, NF_EFORMAT, "%s: binary data (NUL byte) in an SQL file", path);
		free(buf);
		return NULL;
	}
	return buf;
}

/* Whether the SQL mentions the stall_blame table (any case). */
static int names_stall_blame(const char *sql)
{
	static const char word[] = "stall_blame";

	for (const char *p = sql; *p; p++) {
		size_t k = 0;

		while (word[k] && p[k] && tolower((unsigned char)p[k]) == word[k])
			k++;
		if (!word[k])
			return 1;
	}
	return 0;
}

/* Whether the SQL ends with a FORMAT clause of its own ("... FORMAT Native;"). */
static int names_format(const char *sql)
{
	const char *e = sql + strlen(sql);
	const char *w;

	while (e > sql && (isspace((unsigned char)e[-1]) || e[-1] == ';'))
		e--;
	while (e > sql && (isalnum((unsigned char)e[-1]) || e[-1] == '_'))
		e--;
	w = e;
	while (w > sql && isspace((unsigned char)w[-1]))
		w--;
	return w - sql >= 6 && !strncasecmp(w - 6, "format", 6) && (w - 6 == sql || !isalnum((unsigned char)w[-7]));
}

/* What `nftrace query --help` prints; the options it names are parsed below. */
const char cmd_query_usage[] =
	"usage: nftrace query DIR [DIR...] [--csv|--json|--table] (\"SQL\" | -f FILE.sql)\n"
	"       nftrace query --clickhouse URL [--database DB] [--timeout S] [--csv|--json|--table]\n"
	"                     (\"SQL\" | -f FILE.sql)\n"
	"       nftrace query DIR [--csv|--json|--table] --report stalls|queues|lost\n"
	"\n"
	"Builds the session's SQLite timeline (DIR/.timeline.db) on first use and runs SQL on it,\n"
	"read-only. With several sessions they are attached as s1, s2, ... Tables: schemas/timeline.sql.\n"
	"Reports: stalls (the 20 longest GPU wait stalls and the signal that ended each), queues\n"
	"(per queue: operations, lost, time stalled in waits), lost (spans of lost log entries).\n"
	"stall_blame (who made each queue wait: schemas/analysis.sql) is computed and kept in the\n"
	"timeline the first time a query names it.\n"
	"--clickhouse URL runs the SQL on a ClickHouse fleet store filled by 'nftrace push'\n"
	"(database DB, default nftrace): --table is ClickHouse's PrettyCompactNoEscapes, --csv\n"
	"CSVWithNames, --json JSONEachRow (one object per line, 64-bit integers as numbers); a\n"
	"FORMAT clause in the SQL wins. The answer is text: what is not printable UTF-8 in it (an\n"
	"escape sequence in a pushed name) is shown as '?', as for a session; with a FORMAT of\n"
	"the SQL's own it is written as the server sent it, unless standard output is a terminal.\n"
	"--timeout S: seconds the request may take (default 600).\n";

int cmd_query(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "csv", no_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "table", no_argument, NULL, 't' },
		{ "file", required_argument, NULL, 'f' },
		{ "report", required_argument, NULL, 'r' },
		{ "clickhouse", required_argument, NULL, 'u' },
		{ "database", required_argument, NULL, 'd' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct nf_query_options qo = { 0 };
	struct nf_error err;
	const char *sql_file = NULL, *sql = NULL, *report = NULL;
	char *owned = NULL;
	const char *ch_url = NULL, *ch_db = NULL;
	long ch_timeout = 0;
	int opt, rc;

	nf_error_clear(&err);
	qo.format = NF_QUERY_TABLE;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":f:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c': qo.format = NF_QUERY_CSV; break;
		case 'j': qo.format = NF_QUERY_JSON; break;
		case 't': qo.format = NF_QUERY_TABLE; break;
		case 'f': sql_file = optarg; break;
		case 'r': report = optarg; break;
		case 'u': ch_url = optarg; break;
		case 'd': ch_db = optarg; break;
		case 'T':
			if (nf_cli_timeout_option("query", optarg, &ch_timeout))
				return NF_EXIT_USAGE;
			break;
		case 'h': return nf_cli_common_option("query", "--help");
		case 'V': return nf_cli_common_option("query", "--version");
		case ':': return nf_cli_usage_error("query", "option '%s' needs a value", argv[optind - 1]);
		default: return nf_cli_usage_error("query", "unknown option '%s'", argv[optind - 1]);
		}
	}
	int npos = argc - optind;
	if ((ch_db || ch_timeout) && !ch_url)
		return nf_cli_usage_error("query", "--database and --timeout go with --clickhouse URL");
	if (ch_url) {
		/* SQL over a ClickHouse fleet store (nftrace push): no session DIRs */
		struct nf_push_options po = { .url = ch_url, .database = ch_db, .timeout_s = ch_timeout };
		static const char *const fmts[] = { [NF_QUERY_TABLE] = "PrettyCompactNoEscapes",
						    [NF_QUERY_CSV] = "CSVWithNames",
						    [NF_QUERY_JSON] = "JSONEachRow" };

		if (report)
			return nf_cli_usage_error("query", "--report reads a session DIR, not --clickhouse");
		if (npos != (sql_file ? 0 : 1))
			return nf_cli_usage_error("query", "--clickhouse URL takes one SQL argument (or -f FILE) and no session DIR");
		if (sql_file && !(sql = owned = read_sql_file(sql_file, &err)))
			return nf_cli_fail("query", &err);
		if (!sql_file)
			sql = argv[optind];
		/* names pushed from a capture reach the terminal cleaned, as with a session */
		po.answer_text = !names_format(sql) || isatty(STDOUT_FILENO);
		rc = nf_push_query(&po, sql, fmts[qo.format], stdout, &err);
		free(owned);
		return rc ? nf_cli_fail("query", &err) : NF_EXIT_OK;
	}
	if (report) {
		if (sql_file)
			return nf_cli_usage_error("query", "--report and -f cannot be combined");
		sql = nf_query_report_sql(report);
		if (!sql)
			return nf_cli_usage_error("query", "unknown report '%s' (one of %s)", report,
						  NF_QUERY_REPORTS);
		if (npos != 1)
			return nf_cli_usage_error("query", "--report takes one session DIR");
		qo.n_sessions = 1;
	} else if (sql_file) {
		if (npos < 1)
			return nf_cli_usage_error("query", "missing session DIR");
		qo.n_sessions = (size_t)npos;
	} else {
		if (npos < 2)
			return nf_cli_usage_error("query", "usage: nftrace query DIR \"SQL\"");
		qo.n_sessions = (size_t)(npos - 1);
		sql = argv[argc - 1];
	}
	qo.sessions = (const char *const *)(argv + optind);
	/* `query DIR SQL1 SQL2`: one SQL argument only (several sessions come
	 * before it). A "session" that is no path but reads as SQL is a usage
	 * error, not a missing directory. */
	for (size_t i = 0; i < qo.n_sessions; i++) {
		struct stat st;
		const char *a = qo.sessions[i];

		if (stat(a, &st) != 0 && errno == ENOENT &&
		    (strchr(a, ' ') || strchr(a, ';') || !strncasecmp(a, "select", 6) ||
		     !strncasecmp(a, "with", 4) || !strncasecmp(a, "pragma", 6)))
			return nf_cli_usage_error("query", "'%.60s' is SQL, not a session DIR: give one SQL argument, after the sessions (or -f FILE)", a);
	}
	if (sql_file && !(sql = owned = read_sql_file(sql_file, &err)))
		return nf_cli_fail("query", &err);
	/* Timelines first, so that an SQL error below names the SQL file. */
	for (size_t i = 0; i < qo.n_sessions; i++) {
		char db[4200];

		/* stall_blame is computed on demand, the first time a query names it */
		if (names_stall_blame(sql) ? nf_analysis_ensure_blame(qo.sessions[i], db, sizeof(db), &err)
						   : nf_timeline_ensure(qo.sessions[i], db, sizeof(db), &err)) {
			free(owned);
			return nf_cli_fail("query", &err);
		}
	}
	rc = nf_query_run(&qo, sql, stdout, &err);
	free(owned);
	if (rc && sql_file && err.code == NF_ESQL)
		nf_error_prefix(&err, "%s", sql_file);
	if (rc)
		return nf_cli_fail("query", &err);
	return NF_EXIT_OK;
}
