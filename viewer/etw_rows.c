/*
 * ETW rows (see etw_rows.h): DMA packets stream in by node and start time into
 * one level-of-detail lane per node row (sub-pixel packets become density
 * bands, as the other boxes do); VSyncs become one line per pixel column at
 * most, or a short tick at the top of the rows when they are denser than one
 * per 6 pixels.
 */
#include "etw_rows.h"
#include "contract/errors.h"
#include "contract/timeline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int er_fail(sqlite3 *db, struct nf_error *err, const char *what)
{
	return nf_sql_error(db, err, "report: %s", what);
}

static int er_oom(struct nf_error *err)
{
	return nf_error_set(err, NF_ENOMEM, "out of memory while drawing");
}

int nf_render_etw_node_names(sqlite3 *db, struct nf_render_layout *lay, struct nf_error *err)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(db, "SELECT name FROM etw_nodes WHERE adapter = ?1 AND node = ?2", -1, &st,
			       NULL) != SQLITE_OK)
		return er_fail(db, err, "reading etw_nodes");
	for (size_t i = 0; i < lay->n_rows; i++) {
		struct nf_render_row *r = &lay->rows[i];

		if (r->kind != NF_ROW_ENGINE)
			continue;
		if (r->node < 0) {
			snprintf(r->name, sizeof(r->name), "node ? (no SelectContext or rundown named it)");
			continue;
		}
		sqlite3_bind_int64(st, 1, r->adapter);
		sqlite3_bind_int64(st, 2, r->node);
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
			snprintf(r->name, sizeof(r->name), "%s", (const char *)sqlite3_column_text(st, 0));
		else
			snprintf(r->name, sizeof(r->name), "Node %lld", (long long)r->node);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	return 0;
}

static const struct nf_render_row *node_row(const struct nf_render_layout *lay, int64_t adapter,
					    int64_t node)
{
	for (size_t i = 0; i < lay->n_rows; i++) {
		const struct nf_render_row *r = &lay->rows[i];

		if (r->kind == NF_ROW_ENGINE && r->adapter == adapter && r->node == node)
			return r;
	}
	return NULL;
}

static int collect_dma(sqlite3 *db, const struct nf_render_options *opts, const struct nf_render_layout *lay,
		       struct nf_render_scene *s, struct nf_error *err)
{
	struct nf_render_lane lane;
	const struct nf_render_row *row = NULL;
	sqlite3_stmt *st = NULL;
	char *qf = nf_render_in_list("queue", opts->queues, opts->queues ? opts->n_queues : 0);
	char *sql = qf ? sqlite3_mprintf("SELECT coalesce(adapter, -1), coalesce(node, -1), start_ns, end_ns "
					 "FROM dma_packets WHERE start_ns <= ?2 AND "
					 "(end_ns IS NULL OR end_ns >= ?1)%s "
					 "ORDER BY adapter, node, start_ns", qf) : NULL;
	int64_t cur_a = 0, cur_n = 0;
	int rc, ret = 0, have = 0;

	if (nf_render_lane_init(&lane, lay) < 0 || !sql) {
		ret = er_oom(err);
		goto out;
	}
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		ret = er_fail(db, err, "reading dma_packets");
		goto out;
	}
	sqlite3_bind_int64(st, 1, lay->t0);
	sqlite3_bind_int64(st, 2, lay->t1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t a = sqlite3_column_int64(st, 0), n = sqlite3_column_int64(st, 1);
		int64_t start = sqlite3_column_int64(st, 2);

		if (!have || a != cur_a || n != cur_n) {
			if (row && nf_render_lane_flush(&lane, s) < 0)
				goto oom;
			have = 1;
			cur_a = a;
			cur_n = n;
			row = node_row(lay, a, n);
			if (row)
				nf_render_lane_reset(&lane, row->y + 5, row->y + row->h - 3, NF_RB_DMA,
						     NF_RB_DMA_D, NF_RB_DMA_EDGE, NF_RB_DMA_D);
		}
		if (!row)
			continue;
		s->n_dma++;
		if (sqlite3_column_type(st, 3) == SQLITE_NULL) {
			if (nf_render_lane_open(&lane, s, nf_render_layout_x(lay, start), NF_MK_UNMATCHED) < 0)
				goto oom;
			continue;
		}
		if (nf_render_lane_box(&lane, s, nf_render_layout_x(lay, start),
				       nf_render_layout_x(lay, sqlite3_column_int64(st, 3)), 1) < 0)
			goto oom;
	}
	if (rc != SQLITE_DONE) {
		ret = er_fail(db, err, "reading dma_packets");
		goto out;
	}
	if (row && nf_render_lane_flush(&lane, s) < 0)
		goto oom;
	goto out;
oom:
	ret = er_oom(err);
out:
	sqlite3_finalize(st);
	sqlite3_free(sql);
	free(qf);
	nf_render_lane_release(&lane);
	return ret;
}

static int collect_vsyncs(sqlite3 *db, const struct nf_render_layout *lay, struct nf_render_scene *s,
			  struct nf_error *err)
{
	sqlite3_stmt *st = NULL;
	double last = -1.0;
	int rc;

	if (sqlite3_prepare_v2(db, "SELECT ts_ns FROM vsyncs WHERE ts_ns BETWEEN ?1 AND ?2 ORDER BY ts_ns",
			       -1, &st, NULL) != SQLITE_OK)
		return er_fail(db, err, "reading vsyncs");
	sqlite3_bind_int64(st, 1, lay->t0);
	sqlite3_bind_int64(st, 2, lay->t1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		double x = floor(nf_render_layout_x(lay, sqlite3_column_int64(st, 0))) + 0.5;

		s->n_vsyncs++;
		if (x == last)
			continue;
		last = x;
		if (nf_render_quads_add(&s->vsyncs, x, lay->rows_y0, x, lay->rows_y1) < 0) {
			sqlite3_finalize(st);
			return er_oom(err);
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return er_fail(db, err, "reading vsyncs");
	/* Closer than 6 pixels apart on average, lines would hide the rows: a
	 * short tick at the top of the rows instead. */
	if (s->vsyncs.n > 1 && (lay->plot_x1 - lay->plot_x0) / (double)s->vsyncs.n < 6.0)
		for (size_t i = 0; i < s->vsyncs.n; i++)
			s->vsyncs.v[i * 4 + 3] = lay->rows_y0 + 8.0;
	return 0;
}

int nf_render_collect_etw(sqlite3 *db, const struct nf_render_options *opts,
			  const struct nf_render_layout *lay, struct nf_render_scene *s,
			  struct nf_error *err)
{
	int ret;

	if (!lay->etw)
		return 0;
	if ((ret = collect_vsyncs(db, lay, s, err)) < 0)
		return ret;
	return collect_dma(db, opts, lay, s, err);
}
