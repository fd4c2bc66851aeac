/* nftrace query: SQL over one or more sessions' timelines, read-only. */
#include "cli.h"
#include "contract/errors.h"

#include "contract/analysis.h"
#include "contract/frames.h"
#include "contract/push.h"
#include "contract/session.h"

#include <errno.h>
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

/* Whether the SQL mentions word (lower case; the SQL in any case). */
static int names(const char *sql, const char *word)
{
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

/* Whether the SQL mentions the stall_blame table. */
static int names_stall_blame(const char *sql)
{
	return names(sql, "stall_blame");
}

/* Whether it mentions a table the frames analysis fills (frames, frame_gpu, frame_path...). */
static int names_frames(const char *sql)
{
	return names(sql, "frame");
}

enum { O_CSV, O_JSON, O_TABLE, O_FILE, O_REPORT, O_CLICKHOUSE, O_DATABASE, O_TIMEOUT };

static const struct nf_cli_option options[] = {
	[O_CSV] = { .name = "csv", .help = "CSV with a header line" },
	[O_JSON] = { .name = "json", .help = "one JSON array of objects" },
	[O_TABLE] = { .name = "table", .help = "an aligned table (the default)" },
	[O_FILE] = { .name = "file", .short_name = 'f', .arg = "FILE.sql", .complete = NF_COMPLETE_FILE,
		     .exts = "sql", .help = "run the SQL in this file (up to 1 MiB)" },
	[O_REPORT] = { .name = "report", .arg = "REPORT", .values = NF_QUERY_REPORTS,
		       .help = "a ready-made report instead of SQL" },
	[O_CLICKHOUSE] = { .name = "clickhouse", .arg = "URL",
			   .help = "run the SQL on a ClickHouse fleet store (nftrace push), not on sessions" },
	[O_DATABASE] = { .name = "database", .arg = "DB", .help = "--clickhouse: the database (default nftrace)" },
	[O_TIMEOUT] = { .name = "timeout", .arg = "S",
			.help = "--clickhouse: seconds the request may take, 1 to 86400 (default 600)" },
	{ 0 },
};

struct query_state {
	struct nf_query_options qo;
	const char *sql, *sql_file;
	char *owned;
	long timeout_s;                 /* --clickhouse: per request; 0: the default */
};

/* The format the last of --csv, --json, --table asks for. */
static enum nf_query_format query_format(const struct nf_cli *c)
{
	enum nf_query_format f = NF_QUERY_TABLE;

	for (int i = 0; i < c->n_given; i++)
		if (c->given[i].opt == O_CSV)
			f = NF_QUERY_CSV;
		else if (c->given[i].opt == O_JSON)
			f = NF_QUERY_JSON;
		else if (c->given[i].opt == O_TABLE)
			f = NF_QUERY_TABLE;
	return f;
}

/* Which arguments are sessions and which the SQL; the SQL file read (before any timeline is built). */
static int query_prepare(struct nf_cli *c)
{
	struct query_state *st = c->state;
	struct nf_query_options *qo = &st->qo;
	long long timeout = 0;
	int r;
	const char *report = nf_cli_get(c, O_REPORT), *ch_url = nf_cli_get(c, O_CLICKHOUSE);
	struct nf_error err;
	int npos = c->n_args;

	nf_error_clear(&err);
	qo->format = query_format(c);
	st->sql_file = nf_cli_get(c, O_FILE);
	c->n_sessions = 0;
	if ((nf_cli_has(c, O_DATABASE) || nf_cli_has(c, O_TIMEOUT)) && !ch_url)
		return nf_cli_usage_error("query", "--database and --timeout go with --clickhouse URL");
	if ((r = nf_cli_int(c, O_TIMEOUT, 1, 86400, &timeout)))
		return r;
	st->timeout_s = (long)timeout;
	if (ch_url) {
		/* SQL over a ClickHouse fleet store (nftrace push): no session DIRs */
		if (report)
			return nf_cli_usage_error("query", "--report reads a session DIR, not --clickhouse");
		if (npos != (st->sql_file ? 0 : 1))
			return nf_cli_usage_error("query", "--clickhouse URL takes one SQL argument (or -f FILE) and no session DIR");
		st->sql = st->sql_file ? NULL : c->args[0];
	} else if (report) {
		if (st->sql_file)
			return nf_cli_usage_error("query", "--report and -f cannot be combined");
		st->sql = nf_query_report_sql(report);
		if (npos != 1)
			return nf_cli_usage_error("query", "--report takes one session DIR");
		c->n_sessions = 1;
	} else if (st->sql_file) {
		if (npos < 1)
			return nf_cli_usage_error("query", "missing session DIR");
		c->n_sessions = (size_t)npos;
	} else {
		if (npos < 2)
			return nf_cli_usage_error("query", "usage: nftrace query DIR \"SQL\"");
		c->n_sessions = (size_t)(npos - 1);
		st->sql = c->args[npos - 1];
	}
	c->sessions = c->args;
	/* `query DIR SQL1 SQL2`: one SQL argument only (several sessions come
	 * before it). A "session" that is no path but reads as SQL is a usage
	 * error, not a missing directory. */
	for (size_t i = 0; i < c->n_sessions; i++) {
		struct stat sb;
		const char *a = c->sessions[i];

		if (stat(a, &sb) != 0 && errno == ENOENT &&
		    (strchr(a, ' ') || strchr(a, ';') || !strncasecmp(a, "select", 6) ||
		     !strncasecmp(a, "with", 4) || !strncasecmp(a, "pragma", 6)))
			return nf_cli_usage_error("query", "'%.60s' is SQL, not a session DIR: give one SQL argument, after the sessions (or -f FILE)", a);
	}
	if (st->sql_file && !(st->sql = st->owned = read_sql_file(st->sql_file, &err)))
		return nf_cli_fail("query", &err);
	/* stall_blame is computed on demand, the first time a query names it */
	c->blame = names_stall_blame(st->sql);
	return 0;
}

static int query_run(struct nf_cli *c)
{
	struct query_state *st = c->state;
	const char *ch_url = nf_cli_get(c, O_CLICKHOUSE);
	struct nf_error err;
	int rc;

	nf_error_clear(&err);
	if (ch_url) {
		struct nf_push_options po = { .url = ch_url, .database = nf_cli_get(c, O_DATABASE),
					      .timeout_s = st->timeout_s };
		static const char *const fmts[] = { [NF_QUERY_TABLE] = "PrettyCompactNoEscapes",
						    [NF_QUERY_CSV] = "CSVWithNames",
						    [NF_QUERY_JSON] = "JSONEachRow" };

		/* names pushed from a capture reach the terminal cleaned, as with a session */
		po.answer_text = !names_format(st->sql) || isatty(STDOUT_FILENO);
		rc = nf_push_query(&po, st->sql, fmts[st->qo.format], stdout, &err);
		return rc ? nf_cli_fail("query", &err) : NF_EXIT_OK;
	}
	/* the frames (nftrace frames), computed the first time a query names them, with the
	 * marker they were last computed with, if any */
	for (size_t i = 0; names_frames(st->sql) && i < c->n_sessions; i++) {
		char db[NF_CLI_PATH_MAX];

		if (nf_frames_ensure(c->sessions[i], NULL, db, sizeof(db), &err))
			return nf_cli_fail("query", &err);
	}
	st->qo.sessions = (const char *const *)c->sessions;
	st->qo.n_sessions = c->n_sessions;
	rc = nf_query_run(&st->qo, st->sql, stdout, &err);
	if (rc && st->sql_file && err.code == NF_ESQL)
		nf_error_prefix(&err, "%s", st->sql_file);
	if (rc)
		return nf_cli_fail("query", &err);
	return NF_EXIT_OK;
}

static void query_finish(struct nf_cli *c)
{
	struct query_state *st = c->state;

	free(st->owned);
}

const struct nf_cli_cmd cmd_query = {
	.options = options,
	.args = "session DIR",
	.min_args = 0,
	.max_args = -1,
	.args_complete = NF_COMPLETE_SESSION,
	.synopsis =
		"nftrace query DIR [DIR...] [--csv|--json|--table] (\"SQL\" | -f FILE.sql)\n"
		"nftrace query --clickhouse URL [--database DB] [--timeout S] [--csv|--json|--table]\n"
		"              (\"SQL\" | -f FILE.sql)\n"
		"nftrace query DIR [--csv|--json|--table] --report stalls|queues|lost\n",
	.description =
		"Builds the session's SQLite timeline (DIR/.timeline.db) on first use and runs SQL on it,\n"
		"read-only. With several sessions they are attached as s1, s2, ... Tables: nftrace-timeline(5)\n"
		"(schemas/timeline.sql).\n"
		"Reports: stalls (the 20 longest GPU wait stalls and the signal that ended each), queues\n"
		"(per queue: operations, lost, time stalled in waits), lost (spans of lost log entries).\n"
		"stall_blame (who made each queue wait: schemas/analysis.sql) and frames, frame_gpu,\n"
		"frame_path (nftrace frames) are computed and kept in the timeline the first time a query\n"
		"names them.\n"
		"--clickhouse URL runs the SQL on a ClickHouse fleet store filled by 'nftrace push'\n"
		"(database DB, default nftrace): --table is ClickHouse's PrettyCompactNoEscapes, --csv\n"
		"CSVWithNames, --json JSONEachRow (one object per line, 64-bit integers as numbers); a\n"
		"FORMAT clause in the SQL wins. The answer is text: what is not printable UTF-8 in it (an\n"
		"escape sequence in a pushed name) is shown as '?', as for a session; with a FORMAT of\n"
		"the SQL's own it is written as the server sent it, unless standard output is a terminal.\n",
	.state_size = sizeof(struct query_state),
	.prepare = query_prepare,
	.run = query_run,
	.finish = query_finish,
};
