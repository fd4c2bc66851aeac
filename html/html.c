/*
 * nf_html_report: the interactive HTML report. Reads the timeline database in
 * one read transaction and writes the page streaming:
 *   1. rows: one per hardware queue (grouped by adapter and node in the page),
 *      one per CPU thread (grouped by the process that owns the handles it used),
 *      one per lane drawn as a row (rows.c);
 *   2. pass 1 over fence_ops counts every operation of the window into its
 *      row's summary bins and into a fine histogram of start times, from which
 *      the detail cut (at most max_ops operations) and the next window are found;
 *   3. pass 2 writes the details of the operations before the cut, each wait
 *      with the signal that released it (deps, merged by wait id) and its stall;
 *      then CPU waits, CPU signals and anomalies before the cut (ops.c);
 *   4. the items of the window, their links, the threads' runs (items.c);
 *   5. the rows, the summaries and the page's script (html/report.html).
 * Memory is bounded by the rows, the bins and the handle map, not the session.
 * This file is the entry: the session's facts, the selection checked and its
 * window resolved, the page around its data.
 */
#include "html_int.h"
#include "contract/errors.h"
#include "contract/sattime.h"
#include "contract/timeline.h"
#include "contract/outfile.h"

#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report_html.h"

int sql_fail(struct html *h, const char *what)
{
	return nf_sql_error(h->db, h->err, "%s", what);
}

/* Prepares sql (an sqlite3_mprintf result, freed here; NULL: out of memory)
 * on the page's connection: 0, or an error about reading `what`. */
int prepare_owned(struct html *h, char *sql, sqlite3_stmt **st, const char *what)
{
	int rc;

	if (!sql)
		return nf_error_set(h->err, NF_ENOMEM, "out of memory");
	rc = sqlite3_prepare_v2(h->db, sql, -1, st, NULL);
	sqlite3_free(sql);
	return rc == SQLITE_OK ? 0 : sql_fail(h, what);
}

void copy_col(char *dst, size_t len, sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);

	snprintf(dst, len, "%s", t ? (const char *)t : "");
}

static int read_meta(struct html *h)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(h->db, "SELECT key, value FROM meta WHERE key IN "
				      "('source','mode','seed','scenario')",
			       -1, &st, NULL) != SQLITE_OK)
		return sql_fail(h, "reading meta");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(st, 0);

		if (!key || sqlite3_column_type(st, 1) == SQLITE_NULL)
			continue;
		if (!strcmp(key, "source")) {
			copy_col(h->source, sizeof(h->source), st, 1);
		} else if (!strcmp(key, "mode")) {
			copy_col(h->mode, sizeof(h->mode), st, 1);
		} else if (!strcmp(key, "seed")) {
			copy_col(h->seed, sizeof(h->seed), st, 1);
		} else if (!strcmp(key, "scenario")) {
			copy_col(h->scenario, sizeof(h->scenario), st, 1);
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sql_fail(h, "reading meta");
	return 0;
}

/* The selection checked against the timeline, and its window resolved. */
static int resolve_window(struct html *h)
{
	struct nf_window w;
	int ret;

	if ((ret = nf_selection_check(h->db, &h->o->sel, h->err)) < 0 ||
	    (ret = nf_selection_window(h->db, &h->o->sel, &w, h->err)) < 0)
		return ret;
	h->t0 = w.t0;
	h->t1 = w.t1;
	h->session_end = w.session_end;
	h->has_duration = w.has_duration;
	return 0;
}

static void write_meta(struct html *h, int64_t max_ops)
{
	put(h, "\"title\":");
	put_str(h, h->o->title ? h->o->title : "nftrace session");
	put(h, ",\"session\":");
	put_str(h, h->o->session ? h->o->session : "DIR");
	/* the note's command: the directory as one shell word, to paste as it is */
	put(h, ",\"sessionShell\":");
	put_shell_word(h, h->o->session ? h->o->session : "DIR");
	put(h, ",\"source\":");
	put_str(h, h->source);
	put(h, ",\"mode\":");
	put_str(h, h->mode);
	put(h, ",\"seed\":");
	put_str(h, h->seed);
	put(h, ",\"scenario\":");
	put_str(h, h->scenario);
	put(h, ",\"t0\":");
	put_i64(h, h->t0);
	put(h, ",\"span\":");
	put_i64(h, nf_time_sub(h->t1, h->t0));
	put(h, ",\"sessionEnd\":");
	put_i64(h, h->session_end);
	put(h, ",\"bins\":");
	put_i64(h, NF_HTML_BINS);
	put(h, ",\"nOps\":");
	put_i64(h, h->n_ops);
	put(h, ",\"nDetail\":");
	put_i64(h, h->n_detail);
	put(h, ",\"maxOps\":");
	put_i64(h, max_ops);
	put(h, ",\"detailFull\":");
	put_i64(h, h->detail_full);
	put(h, ",\"cut\":");
	put_i64(h, nf_time_sub(h->detail_full ? h->t1 : h->cut, h->t0));
	put(h, ",\"nextTo\":");
	put_i64(h, h->detail_full ? 0 : h->next_to);
	put(h, ",\"nAnomalies\":");
	put_i64(h, h->n_anomalies);
	put(h, ",\"threadsLeftOut\":");
	put_i64(h, h->threads_left_out);
	put(h, ",\"extraCut\":");
	put_str(h, h->cut_kinds);
	put(h, ",\"extraCutAt\":");
	put_i64(h, NF_HTML_MAX_EXTRA);
	put(h, ",\"filters\":{\"queues\":[");
	for (int i = 0; i < h->o->sel.n_queues; i++) {
		put(h, i ? "," : "");
		put_big(h, h->o->sel.queues[i]);
	}
	put(h, "],\"fences\":[");
	for (int i = 0; i < h->o->sel.n_fences; i++) {
		put(h, i ? "," : "");
		put_big(h, h->o->sel.fences[i]);
	}
	put(h, "]}\n");
}

/* The page template is split at its data marker. */
static const char data_marker[] = "/*@NF_DATA@*/";

static int write_page(struct html *h, int64_t max_ops)
{
	const char *mark = strstr(nf_report_html, data_marker);
	int ret;

	if (!mark)
		return nf_error_set(h->err, NF_EFORMAT, "page template without its data marker");
	fwrite(nf_report_html, 1, (size_t)(mark - nf_report_html), h->f);
	put(h, "{");
	if ((ret = pass_details(h, max_ops)) < 0 || (ret = write_cpu(h)) < 0 ||
	    (ret = write_anomalies(h)) < 0 || (ret = write_gaps(h)) < 0 || (ret = write_items(h)) < 0 ||
	    (ret = write_frames(h)) < 0)
		return ret;
	write_rows(h);
	write_meta(h, max_ops);
	put(h, "}");
	put(h, mark + sizeof(data_marker) - 1);
	return 0;
}

static void html_release(struct html *h)
{
	for (size_t i = 0; i < h->n_rows; i++) {
		free(h->rows[i].bins);
		free(h->rows[i].lane);
	}
	free(h->rows);
	free(h->handles);
	free(h->hist);
	free(h->hist_id);
	sqlite3_free(h->in_q);
	sqlite3_free(h->in_f);
	sqlite3_close(h->db);  /* ends the read transaction */
}

int nf_html_report(const char *db_path, const struct nf_html_options *opts, struct nf_error *err)
{
	struct html h;
	struct nf_outfile of;
	int64_t max_ops;
	int ret;

	if (!db_path || !opts || !opts->output || !*opts->output)
		return nf_error_set(err, NF_EINVAL, "html report: no database or no output file");
	max_ops = opts->max_ops ? opts->max_ops : NF_HTML_DEFAULT_MAX_OPS;
	if (max_ops < 1 || max_ops > NF_HTML_MAX_MAX_OPS)
		return nf_error_set(err, NF_EINVAL, "--max-ops must be between 1 and %d",
				    NF_HTML_MAX_MAX_OPS);
	memset(&h, 0, sizeof(h));
	h.o = opts;
	h.err = err;
	h.in_q = nf_selection_in(&opts->sel, NF_SELECTION_QUEUES, "queue");
	h.in_f = nf_selection_in(&opts->sel, NF_SELECTION_FENCES, "fence");
	h.hist = calloc(HIST_BINS, sizeof(uint32_t));
	h.hist_id = malloc(2 * HIST_BINS * sizeof(int64_t));
	if (!h.in_q || !h.in_f || !h.hist || !h.hist_id) {
		ret = nf_error_set(err, NF_ENOMEM, "out of memory");
		goto out_release;
	}
	for (int k = 0; k < HIST_BINS; k++) {
		h.hist_id[2 * k] = INT64_MAX;
		h.hist_id[2 * k + 1] = INT64_MIN;
	}
	if ((ret = nf_timeline_open_read(db_path, &h.db, h.err)) < 0)
		goto out_release;
	ret = read_meta(&h);
	if (ret < 0 || (ret = resolve_window(&h)) < 0 || (ret = load_kinds(&h)) < 0 || (ret = build_rows(&h)) < 0 ||
	    (ret = load_handles(&h)) < 0 || (ret = pass_counts(&h)) < 0) {
		if (ret != NF_EINVAL && ret != NF_ENOENT)
			nf_error_prefix(err, "%s", db_path);
		goto out_release;
	}
	find_cut(&h, max_ops);
	/* Written beside the name and renamed over it when whole: a failure
	 * leaves the previous page, and no partial one. */
	if ((ret = nf_outfile_open(&of, opts->output, err)) < 0)
		goto out_release;
	h.f = of.f;
	setvbuf(h.f, NULL, _IOFBF, 1 << 20);
	ret = write_page(&h, max_ops);
	if (ret == 0 && ferror(h.f))
		ret = nf_error_set(err, NF_EIO, "%s: write failed: %s", opts->output, strerror(errno));
	{
		int crc = nf_outfile_close(&of, ret == 0, err);

		if (ret == 0)
			ret = crc;
	}
	h.f = NULL;
out_release:
	html_release(&h);
	return ret;
}
