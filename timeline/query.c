/*
 * Read-only SQL over timeline databases, printed as an aligned table, CSV or
 * JSON. Databases are opened with mode=ro URIs and an authorizer admits only
 * reading (SELECT, column reads, functions, recursive CTEs), so a query can
 * neither write, attach, change pragmas nor VACUUM INTO another file. The
 * table format measures column widths in a first pass over a statement's rows
 * and prints in a second, so no result set is ever held in memory.
 */
#include "contract/timeline.h"
#include "contract/timeline_writer.h"
#include "nftrace/events.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include "contract/errors.h"
#include "contract/escape.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static const char refused_msg[] =
	"query refused: statements that write or attach are not allowed";

struct auth_state {
	bool armed;
	bool refused;
	char function[64];      /* a function refused by name, for the message */
};

/*
 * Functions a read-only query may not call, whatever else it does: every
 * other built-in one is pure or only reads (date('now'), random(),
 * sqlite_version(), changes() are harmless). fts3_tokenizer() hands out the
 * address of a tokenizer module (a libsqlite3 pointer) and, with two
 * arguments, installs one taken from a blob: a function pointer the query
 * chooses. fts5() hands out the FTS5 API pointer; load_extension() loads code.
 */
static const char *const denied_functions[] = { "fts3_tokenizer", "fts5", "load_extension" };

/* Pragmas with no side effect, readable as table-valued functions
 * (pragma_table_info('fence_ops')) or statements; any other is refused. */
static const char *const readonly_pragmas[] = {
	"table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
	"foreign_key_list", "function_list", "module_list", "pragma_list", "collation_list",
	"database_list", "compile_options",
};

static bool in_list(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; name && i < n; i++)
		if (sqlite3_stricmp(name, list[i]) == 0)
			return true;
	return false;
}

static int authorize(void *ctx, int action, const char *a, const char *b, const char *c,
		     const char *d)
{
	struct auth_state *st = ctx;

	(void)c;
	(void)d;
	if (!st->armed)
		return SQLITE_OK;
	switch (action) {
	case SQLITE_SELECT:
	case SQLITE_READ:
	case SQLITE_RECURSIVE:
		return SQLITE_OK;
	case SQLITE_FUNCTION:
		/* a is NULL, b the function's name. */
		if (in_list(b, denied_functions, sizeof(denied_functions) / sizeof(denied_functions[0]))) {
			snprintf(st->function, sizeof(st->function), "%s", b);
			st->refused = true;
			return SQLITE_DENY;
		}
		return SQLITE_OK;
	case SQLITE_UPDATE:
		/* A table-valued function (json_each, pragma_table_info) makes
		 * SQLite check its schema table as if updated; the database is
		 * opened read-only and every statement must be read-only anyway. */
		if (a && (strcmp(a, "sqlite_master") == 0 || strcmp(a, "sqlite_temp_master") == 0))
			return SQLITE_OK;
		break;
	case SQLITE_PRAGMA:
		/* a the pragma; with a value (b) only the argument forms above. */
		if (in_list(a, readonly_pragmas, sizeof(readonly_pragmas) / sizeof(readonly_pragmas[0])))
			return SQLITE_OK;
		break;
	default:
		break;
	}
	st->refused = true;
	return SQLITE_DENY;
}

/* A file: URI for path with mode=ro (percent-encodes what URIs reserve). */
static char *ro_uri(const char *path)
{
	size_t n = strlen(path);
	char *u = malloc(n * 3 + 32), *p;

	if (!u)
		return NULL;
	p = u + sprintf(u, "file:");
	for (const unsigned char *s = (const unsigned char *)path; *s; s++) {
		if (*s == '%' || *s == '?' || *s == '#' || *s < 0x21 || *s >= 0x7f)
			p += sprintf(p, "%%%02X", *s);
		else
			*p++ = (char)*s;
	}
	strcpy(p, "?mode=ro");
	return u;
}

static int open_dbs(const char *const *paths, size_t n, sqlite3 **out, struct nf_error *err)
{
	sqlite3 *db = NULL;
	int rc = 0;

	*out = NULL;
	if (n == 0)
		return nf_error_set(err, NF_EINVAL, "query: no session given");
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		if (stat(paths[i], &st) != 0)
			return nf_error_set(err, NF_ENOENT, "query: %s: no timeline database",
					    paths[i]);
	}
	if (n == 1) {
		char *uri = ro_uri(paths[0]);

		if (!uri)
			return nf_error_set(err, NF_ENOMEM, "query: out of memory");
		if (sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) !=
		    SQLITE_OK)
			rc = nf_error_set(err, NF_ESQL, "query: %s: %s", paths[0],
					  db ? sqlite3_errmsg(db) : "cannot open");
		free(uri);
	} else if (sqlite3_open_v2(":memory:", &db,
				   SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "query: %s",
				  db ? sqlite3_errmsg(db) : "cannot open memory database");
	}
	if (rc)
		goto out_close;
	/* blame and frames are added to a timeline in place (under its lock): a
	 * query meeting that commit waits for it rather than failing */
	sqlite3_busy_timeout(db, 10000);
	sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	for (size_t i = 0; i < n; i++) {
		char *uri = ro_uri(paths[i]);
		char *sql;

		if (!uri) {
			rc = nf_error_set(err, NF_ENOMEM, "query: out of memory");
			goto out_close;
		}
		sql = sqlite3_mprintf("ATTACH %Q AS s%d", uri, (int)(i + 1));
		free(uri);
		if (!sql) {
			rc = nf_error_set(err, NF_ENOMEM, "query: out of memory");
			goto out_close;
		}
		if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
			rc = nf_error_set(err, NF_ESQL, "query: %s: %s", paths[i],
					  sqlite3_errmsg(db));
		sqlite3_free(sql);
		if (rc)
			goto out_close;
	}
	if (sqlite3_exec(db, "PRAGMA query_only = 1", NULL, NULL, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "query: %s", sqlite3_errmsg(db));
		goto out_close;
	}
	*out = db;
	return 0;
out_close:
	sqlite3_close(db);
	return rc;
}

static int width_write(void *ctx, const char *p, size_t n)
{
	size_t *w = ctx;

	for (size_t i = 0; i < n; i++)
		if (((unsigned char)p[i] & 0xc0) != 0x80)
			(*w)++;
	return 0;
}

/* Display width of a cell as put_padded writes it: code points, not bytes. */
static size_t text_width(const unsigned char *s, int bytes)
{
	size_t w = 0;

	nf_esc_text((const char *)s, (size_t)bytes, NF_ESC_KEEP_NL, width_write, &w);
	return w;
}

/* Text of a cell for table and CSV: NULL is empty. */
static const unsigned char *cell_text(sqlite3_stmt *s, int col, int *bytes)
{
	const unsigned char *t;

	if (sqlite3_column_type(s, col) == SQLITE_NULL) {
		*bytes = 0;
		return (const unsigned char *)"";
	}
	t = sqlite3_column_text(s, col);
	*bytes = sqlite3_column_bytes(s, col);
	return t ? t : (const unsigned char *)"";
}

/* The table is for a terminal: what is not printable UTF-8 (an escape
 * sequence in a name, a C1 control, a NUL in a blob, a Latin-1 byte) is shown
 * as '?', never sent raw (newlines and tabs stay: a multi-line value is
 * shown on several lines). */
static void put_padded(FILE *out, const unsigned char *t, int bytes, size_t width, size_t pad)
{
	nf_esc_text((const char *)t, (size_t)bytes, NF_ESC_KEEP_NL, nf_esc_file_write, out);
	for (size_t w = width; w < pad; w++)
		fputc(' ', out);
}

/*
 * Whether a column holds handles (queue, fence or local handle), by its name:
 * "queue", "fence", "handle", or ending in "_queue", "_fence", "_handle". The
 * table view (for people) writes them in hexadecimal, as pictures and `check`
 * do; CSV and JSON (for programs) keep the integers.
 */
static bool is_handle_column(const char *name)
{
	static const char *const names[] = { "queue", "fence", "handle" };
	size_t n = name ? strlen(name) : 0;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t k = strlen(names[i]);

		if (n == k && strcasecmp(name, names[i]) == 0)
			return true;
		if (n > k && name[n - k - 1] == '_' && strcasecmp(name + n - k, names[i]) == 0)
			return true;
	}
	return false;
}

/* A cell of the table view: a handle column's non-negative integer in hex, else cell_text. */
static const unsigned char *table_cell(sqlite3_stmt *s, int col, const bool *hex, char *buf,
				       size_t len, int *bytes)
{
	if (hex[col] && sqlite3_column_type(s, col) == SQLITE_INTEGER &&
	    sqlite3_column_int64(s, col) >= 0) {
		*bytes = snprintf(buf, len, "0x%" PRIx64, (uint64_t)sqlite3_column_int64(s, col));
		return (const unsigned char *)buf;
	}
	return cell_text(s, col, bytes);
}

static int print_table(sqlite3_stmt *s, FILE *out, bool *first_set, struct nf_error *err)
{
	int ncol = sqlite3_column_count(s), src;
	size_t *w = calloc((size_t)ncol, sizeof(*w));
	bool *hex = calloc((size_t)ncol, sizeof(*hex));
	char hbuf[24];

	if (!w || !hex) {
		free(w);
		free(hex);
		return nf_error_set(err, NF_ENOMEM, "query: out of memory");
	}
	for (int c = 0; c < ncol; c++) {
		const char *name = sqlite3_column_name(s, c);

		w[c] = text_width((const unsigned char *)name, (int)strlen(name));
		hex[c] = is_handle_column(name);
	}
	while ((src = sqlite3_step(s)) == SQLITE_ROW) {
		for (int c = 0; c < ncol; c++) {
			int bytes;
			const unsigned char *t = table_cell(s, c, hex, hbuf, sizeof(hbuf), &bytes);
			size_t tw = text_width(t, bytes);

			if (tw > w[c])
				w[c] = tw;
		}
	}
	if (src != SQLITE_DONE)
		goto out_sql;
	sqlite3_reset(s);
	if (!*first_set)
		fputc('\n', out);
	*first_set = false;
	for (int c = 0; c < ncol; c++) {
		const char *name = sqlite3_column_name(s, c);
		size_t nw = text_width((const unsigned char *)name, (int)strlen(name));

		if (c)
			fputs("  ", out);
		put_padded(out, (const unsigned char *)name, (int)strlen(name), nw,
			   c + 1 < ncol ? w[c] : nw);
	}
	fputc('\n', out);
	for (int c = 0; c < ncol; c++) {
		if (c)
			fputs("  ", out);
		for (size_t i = 0; i < (w[c] ? w[c] : 1); i++)
			fputc('-', out);
	}
	fputc('\n', out);
	while ((src = sqlite3_step(s)) == SQLITE_ROW) {
		size_t last = 0;
		int lastc = ncol - 1;

		/* Trailing empty cells leave no trailing spaces. */
		while (lastc >= 0) {
			int bytes;

			table_cell(s, lastc, hex, hbuf, sizeof(hbuf), &bytes);
			if (bytes)
				break;
			lastc--;
		}
		for (int c = 0; c <= lastc; c++) {
			int bytes;
			const unsigned char *t = table_cell(s, c, hex, hbuf, sizeof(hbuf), &bytes);

			last = text_width(t, bytes);
			if (c)
				fputs("  ", out);
			put_padded(out, t, bytes, last, c < lastc ? w[c] : last);
		}
		fputc('\n', out);
	}
	if (src != SQLITE_DONE)
		goto out_sql;
	free(w);
	free(hex);
	return 0;
out_sql:
	free(w);
	free(hex);
	return nf_error_set(err, NF_ESQL, "%s", sqlite3_errmsg(sqlite3_db_handle(s)));
}

/* CSV text, its quotes doubled. */
static int csv_write(void *ctx, const char *p, size_t n)
{
	for (const char *q; (q = memchr(p, '"', n)); n -= (size_t)(q + 1 - p), p = q + 1)
		if (fwrite(p, 1, (size_t)(q + 1 - p), ctx) != (size_t)(q + 1 - p) || fputc('"', ctx) == EOF)
			return -1;
	return fwrite(p, 1, n, ctx) == n ? 0 : -1;
}

/* A CSV field, text as in the table (nf_esc_text: a NUL, which cuts most CSV
 * readers short, or an escape sequence is '?'; newlines stay, quoted). */
static void put_csv_field(FILE *out, const unsigned char *t, int bytes)
{
	bool quote = false;

	for (int i = 0; i < bytes && !quote; i++)
		quote = t[i] == ',' || t[i] == '"' || t[i] == '\r' || t[i] == '\n';
	if (quote)
		fputc('"', out);
	nf_esc_text((const char *)t, (size_t)bytes, NF_ESC_KEEP_NL, csv_write, out);
	if (quote)
		fputc('"', out);
}

static int print_csv(sqlite3_stmt *s, FILE *out, bool *first_set, struct nf_error *err)
{
	int ncol = sqlite3_column_count(s), src;

	if (!*first_set)
		fputc('\n', out);
	*first_set = false;
	for (int c = 0; c < ncol; c++) {
		const char *name = sqlite3_column_name(s, c);

		if (c)
			fputc(',', out);
		put_csv_field(out, (const unsigned char *)name, (int)strlen(name));
	}
	fputc('\n', out);
	while ((src = sqlite3_step(s)) == SQLITE_ROW) {
		for (int c = 0; c < ncol; c++) {
			int bytes, type = sqlite3_column_type(s, c);

			if (c)
				fputc(',', out);
			/* As in JSON: a blob is hexadecimal, a real that is not
			 * finite (Inf, NaN) is empty like NULL, and a NUL in text
			 * (it cuts most CSV readers short) is '?'. */
			if (type == SQLITE_BLOB) {
				const unsigned char *p = sqlite3_column_blob(s, c);

				bytes = sqlite3_column_bytes(s, c);
				for (int i = 0; i < bytes; i++)
					fprintf(out, "%02x", p[i]);
				continue;
			}
			if (type == SQLITE_FLOAT && !isfinite(sqlite3_column_double(s, c)))
				continue;
			const unsigned char *t = cell_text(s, c, &bytes);
			put_csv_field(out, t, bytes);
		}
		fputc('\n', out);
	}
	if (src != SQLITE_DONE)
		return nf_error_set(err, NF_ESQL, "%s", sqlite3_errmsg(sqlite3_db_handle(s)));
	return 0;
}

/* A JSON string (nf_esc_json): every string whole, its controls escaped;
 * bytes that are not UTF-8 (a foreign session's names) become U+FFFD, so
 * the output is always valid JSON. */
static void put_json_string(FILE *out, const unsigned char *t, int bytes)
{
	nf_esc_json((const char *)t, (size_t)bytes, 0, nf_esc_file_write, out);
}

/* The JSON keys of a statement's columns: a name seen before gets ":2",
 * ":3", ... (select 1 as a, 2 as a), so no object repeats a key. NULL when
 * out of memory; free with sqlite3_free. */
static char **json_keys(sqlite3_stmt *s, int ncol)
{
	char **k = sqlite3_malloc64(sizeof(*k) * (size_t)(ncol ? ncol : 1));

	if (!k)
		return NULL;
	for (int c = 0; c < ncol; c++) {
		const char *name = sqlite3_column_name(s, c);
		int dup = 1;

		name = name ? name : "";
		k[c] = NULL;
		for (int seen = 0;; seen = 0) {
			char *cand = dup == 1 ? sqlite3_mprintf("%s", name) : sqlite3_mprintf("%s:%d", name, dup);

			if (!cand) {
				for (int i = 0; i < c; i++)
					sqlite3_free(k[i]);
				sqlite3_free(k);
				return NULL;
			}
			for (int i = 0; i < c && !seen; i++)
				seen = strcmp(k[i], cand) == 0;
			if (!seen) {
				k[c] = cand;
				break;
			}
			sqlite3_free(cand);
			dup++;
		}
	}
	return k;
}

static void json_keys_free(char **k, int ncol)
{
	for (int c = 0; k && c < ncol; c++)
		sqlite3_free(k[c]);
	sqlite3_free(k);
}

static int print_json(sqlite3_stmt *s, FILE *out, bool *first_row, struct nf_error *err)
{
	int ncol = sqlite3_column_count(s), src;
	char **keys = json_keys(s, ncol);

	if (!keys)
		return nf_error_set(err, NF_ENOMEM, "query: out of memory");
	while ((src = sqlite3_step(s)) == SQLITE_ROW) {
		fputs(*first_row ? "\n  {" : ",\n  {", out);
		*first_row = false;
		for (int c = 0; c < ncol; c++) {
			const char *name = keys[c];

			if (c)
				fputs(", ", out);
			put_json_string(out, (const unsigned char *)name, (int)strlen(name));
			fputs(": ", out);
			switch (sqlite3_column_type(s, c)) {
			case SQLITE_NULL:
				fputs("null", out);
				break;
			case SQLITE_INTEGER:
				fprintf(out, "%" PRId64, (int64_t)sqlite3_column_int64(s, c));
				break;
			case SQLITE_FLOAT: {
				double v = sqlite3_column_double(s, c);

				if (isfinite(v))
					fprintf(out, "%.17g", v);
				else
					fputs("null", out);
				break;
			}
			case SQLITE_BLOB: {
				const unsigned char *p = sqlite3_column_blob(s, c);
				int n = sqlite3_column_bytes(s, c);

				fputc('"', out);
				for (int i = 0; i < n; i++)
					fprintf(out, "%02x", p[i]);
				fputc('"', out);
				break;
			}
			default: {
				int bytes;
				const unsigned char *t = cell_text(s, c, &bytes);

				put_json_string(out, t, bytes);
			}
			}
		}
		fputc('}', out);
	}
	json_keys_free(keys, ncol);
	if (src != SQLITE_DONE)
		return nf_error_set(err, NF_ESQL, "%s", sqlite3_errmsg(sqlite3_db_handle(s)));
	return 0;
}

int nf_query_run_dbs(const char *const *db_paths, size_t n, enum nf_query_format format,
		     const char *sql, FILE *out, struct nf_error *err)
{
	struct auth_state auth = { false, false, "" };
	sqlite3 *db = NULL;
	const char *tail = sql;
	bool first = true;
	int rc;

	rc = open_dbs(db_paths, n, &db, err);
	if (rc)
		return rc;
	sqlite3_set_authorizer(db, authorize, &auth);
	auth.armed = true;
	if (format == NF_QUERY_JSON)
		fputc('[', out);
	while (tail && *tail) {
		sqlite3_stmt *s = NULL;
		const char *next = NULL;

		auth.refused = false;
		auth.function[0] = '\0';
		if (sqlite3_prepare_v2(db, tail, -1, &s, &next) != SQLITE_OK) {
			if (auth.refused && auth.function[0])
				rc = nf_error_set(err, NF_ESQL,
						  "query refused: function %s() is not allowed (it hands out or takes process pointers, or loads code)",
						  auth.function);
			else if (auth.refused)
				rc = nf_error_set(err, NF_ESQL, "%s", refused_msg);
			else
				rc = nf_error_set(err, NF_ESQL, "%s", sqlite3_errmsg(db));
			break;
		}
		tail = next;
		if (!s)
			continue; /* whitespace or a comment */
		if (!sqlite3_stmt_readonly(s)) {
			sqlite3_finalize(s);
			rc = nf_error_set(err, NF_ESQL, "%s", refused_msg);
			break;
		}
		if (sqlite3_column_count(s) == 0) {
			int src = sqlite3_step(s);

			if (src != SQLITE_DONE && src != SQLITE_ROW)
				rc = nf_error_set(err, NF_ESQL, "%s", sqlite3_errmsg(db));
		} else if (format == NF_QUERY_TABLE) {
			rc = print_table(s, out, &first, err);
		} else if (format == NF_QUERY_CSV) {
			rc = print_csv(s, out, &first, err);
		} else {
			rc = print_json(s, out, &first, err);
		}
		sqlite3_finalize(s);
		/* Some refusals come when the statement runs (a pragma's
		 * table-valued function): the same message as at prepare time. */
		if (rc == NF_ESQL && auth.refused) {
			nf_error_clear(err);
			rc = nf_error_set(err, NF_ESQL, "%s", refused_msg);
		}
		if (rc)
			break;
	}
	if (format == NF_QUERY_JSON)
		fputs(first ? "]\n" : "\n]\n", out);
	sqlite3_close(db);
	if (fflush(out) != 0 || ferror(out))
		return nf_error_set(err, NF_EIO, "query: writing the result failed");
	return rc;
}

/* Ready-made reports over the views of schemas/timeline-views.sql. */
static const struct {
	const char *name, *sql;
} reports[] = {
	{ "stalls",
	  "SELECT s.wait_id, qw.name AS wait_queue, s.fence, s.value, s.stall_ns, s.observed_ns, "
	  "s.end_ns, s.signal_id, qs.name AS signal_queue, s.signal_end_ns "
	  "FROM longest_stalls s LEFT JOIN queues qw ON qw.queue = s.wait_queue "
	  "LEFT JOIN queues qs ON qs.queue = s.signal_queue "
	  "ORDER BY s.stall_ns DESC, s.wait_id LIMIT 20" },
	{ "queues",
	  /* The Linux import's pseudo-adapter (NF_WRITER_NO_ADAPTER: no adapter) is named,
	   * not numbered: its adapters row says what it is. */
	  "SELECT s.queue, s.name, CASE WHEN s.adapter = " NF_WRITER_NO_ADAPTER_SQL " THEN NULL ELSE s.adapter END "
	  "AS adapter, a.name AS adapter_name, s.ops, s.waits, s.signals, s.lost, s.stalled_ns, "
	  "s.span_ns FROM queue_summary s LEFT JOIN adapters a ON a.adapter = s.adapter "
	  "ORDER BY s.queue" },
	{ "lost",
	  "SELECT l.queue, q.name, l.log, l.first_ns, l.last_ns, l.lost_entries, l.detail "
	  "FROM lost_spans l LEFT JOIN queues q ON q.queue = l.queue "
	  "ORDER BY l.queue, l.log, l.first_ns" },
};

const char *nf_query_report_sql(const char *name)
{
	for (size_t i = 0; name && i < sizeof(reports) / sizeof(reports[0]); i++)
		if (strcmp(reports[i].name, name) == 0)
			return reports[i].sql;
	return NULL;
}
