/*
 * The fence operations: fence_ops read once in id order by a reader thread
 * (sqlite hands each row to an SQL function of ours inside its scan) while the
 * caller's thread places and encodes them, each with its flows: the waits a
 * signal released and the signal that released a wait.
 */
#include "walk.h"
#include "contract/errors.h"

#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One fence_ops row as the reader thread hands it over, with its flows. */
struct oprec {
	int64_t id, queue, fence, value, start, obs, end, thread;
	uint8_t has_queue, is_wait, has_fence, has_value, has_obs, has_end, has_thread;
	uint8_t flow_in;        /* a wait that ends a flow (id + 1) */
	uint32_t out_off, n_out; /* a signal's flows: in its block's flow ids */
	char status[32];  /* the schema's statuses are short words; longer is cut */
};

/* What the main thread works on, for one pass over fence_ops. */
struct op_ctx {
	struct exporter *x;
	int64_t last_id;
};

/* One fence operation: its track (lane), name, args and flows, written. */
static int op_row(struct op_ctx *oc, const struct oprec *r, const uint64_t *flows)
{
	struct exporter *x = oc->x;
	int64_t start = r->start, end = start;
	struct nf_xevent e;
	char name[64];
	size_t n;
	int ret = 0;

	if (r->id <= oc->last_id)
		return nf_error_set(x->err, NF_EFORMAT, "fence_ops: not read in id order");
	oc->last_id = r->id;
	e.track = NULL;
	e.name_key = 0;
	e.stall_ts = -1;
	e.instant = !r->has_end;
	e.n_args = 0;
	e.flows_out = NULL;
	e.n_flows_out = 0;
	e.flow_in = 0;
	e.flows_in = NULL;
	e.n_flows_in = 0;
	if (!e.instant) {
		end = r->end;
		if (end < start) {  /* completed before queued: a causality anomaly, kept as is */
			int64_t t = end;

			end = start;
			start = t;
		}
		if (r->is_wait && r->has_obs) {
			int64_t obs = r->obs;

			if (obs < start)
				obs = start;
			if (obs < end)
				e.stall_ts = obs;
		}
	}
	if (r->has_queue) {
		struct xqueue *q = find_queue(x, r->queue);

		if (!q && !(q = add_queue(x, r->queue)))
			return oom(x);
		ret = queue_track(x, q, start, end, &e.track);
	} else if (r->has_thread) {
		ret = thread_track(x, r->thread, start, end, &e.track);
	} else {
		ret = session_track(x, start, end, &e.track);
	}
	if (ret < 0)
		return ret;
	/* "wait 0xFENCE": few distinct names, so they intern. */
	n = r->is_wait ? 5 : 7;
	memcpy(name, r->is_wait ? "wait " : "signal ", n);
	if (!r->has_fence)
		name[n++] = '?';
	else
		n += put_hex(name + n, (uint64_t)r->fence);
	name[n] = '\0';
	e.ts = start;
	e.end = end;
	e.name = name;
	e.name_key = r->has_fence && (uint64_t)r->fence < ((uint64_t)1 << 62)
			     ? ((uint64_t)r->fence << 1 | r->is_wait) + 1
			     : 0;
	e.cat = r->is_wait ? "wait" : "signal";
	arg_int(&e, "id", r->id);
	if (r->has_fence)
		arg_hex(&e, "fence", r->fence);
	if (r->has_value)
		arg_int(&e, "value", r->value);
	arg_str(&e, "status", r->status);
	if (r->has_thread)
		arg_int(&e, "thread", r->thread);
	if (r->flow_in)
		e.flow_in = (uint64_t)r->id + 1;
	e.flows_out = r->n_out ? flows + r->out_off : NULL;
	e.n_flows_out = r->n_out;
	return emit(x, &e);
}

/*
 * Where the flows of fence_ops rows come from, read by the reader thread on
 * a connection of its own (db3): the waits that end one (a bitmap, else deps
 * sorted by wait) and, per signal, the waits it released (deps merged from
 * its sorted runs, else sorted by sqlite).
 */
struct flowsrc {
	struct released rel;
	struct edge_cursor by_wait, by_signal;
	struct sig_runs runs;
	int use_runs;
};

/*
 * The reader thread: sqlite scans fence_ops and hands each row to
 * nf_export_op (an SQL function of ours, called inside the scan, cheaper than
 * stepping out per row), which copies it into blocks of a small circular queue with
 * its flows; the main thread takes whole blocks, places and encodes them.
 * The two overlap, so an export costs about the larger of the scan and the
 * encoding, not their sum. Each thread uses its own connections.
 */
#define PIPE_BLOCK 2048
#define PIPE_DEPTH 8

struct pipe {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct oprec *rec;        /* PIPE_DEPTH blocks of PIPE_BLOCK */
	size_t fill[PIPE_DEPTH];  /* records in each published block */
	uint64_t *fl[PIPE_DEPTH]; /* each block's flow ids (oprec.out_off) */
	size_t fl_n[PIPE_DEPTH], fl_cap[PIPE_DEPTH];
	uint64_t produced, consumed;
	size_t cur;               /* records in the block being filled (reader only) */
	int done, stop, rc;
	char errmsg[256];
	sqlite3 *db;
	sqlite3_stmt *st;
	struct flowsrc *fs;       /* (reader only) */
	uint64_t skipped;         /* rows without any time, left out (reader only) */
	struct flowbuf fb;        /* one signal's flows (reader only) */
	struct nf_error ferr;     /* the reader's errors reading flows */
};

/* Publishes the block being filled; waits for a free one. -1: stop. */
static int pipe_publish(struct pipe *pp, int last)
{
	int stop;

	pthread_mutex_lock(&pp->mu);
	pp->fill[pp->produced % PIPE_DEPTH] = pp->cur;
	pp->produced++;
	pp->cur = 0;
	pthread_cond_broadcast(&pp->cv);
	while (!last && !pp->stop && pp->produced - pp->consumed >= PIPE_DEPTH)
		pthread_cond_wait(&pp->cv, &pp->mu);
	stop = pp->stop;
	pthread_mutex_unlock(&pp->mu);
	return stop ? -1 : 0;
}

/* r's flows: whether it ends one (a wait), the ones it starts (a signal). */
static int op_flows(struct pipe *pp, size_t blk, struct oprec *r)
{
	struct flowsrc *fs = pp->fs;
	int ret = 0;

	r->flow_in = 0;
	r->out_off = 0;
	r->n_out = 0;
	if (r->is_wait) {
		r->flow_in = (uint8_t)(fs->rel.bits ? released_has(&fs->rel, r->id)
						    : cursor_seek(&pp->ferr, &fs->by_wait, r->id, &ret));
		return ret;
	}
	if ((ret = fs->use_runs ? sig_runs_collect(&pp->fb, &fs->runs, r->id)
				: cursor_collect(&pp->fb, &fs->by_signal, r->id)) < 0 ||
	    pp->fb.n == 0)
		return ret;
	if (pp->fl_cap[blk] - pp->fl_n[blk] < pp->fb.n) {
		size_t ncap = pp->fl_cap[blk] ? pp->fl_cap[blk] : 4096;
		uint64_t *nv;

		while (ncap - pp->fl_n[blk] < pp->fb.n)
			ncap *= 2;
		if (ncap > UINT32_MAX || !(nv = realloc(pp->fl[blk], ncap * sizeof(*nv))))
			return nf_error_set(&pp->ferr, NF_ENOMEM, "out of memory while exporting");
		pp->fl[blk] = nv;
		pp->fl_cap[blk] = ncap;
	}
	memcpy(pp->fl[blk] + pp->fl_n[blk], pp->fb.v, pp->fb.n * sizeof(*pp->fb.v));
	r->out_off = (uint32_t)pp->fl_n[blk];
	r->n_out = (uint32_t)pp->fb.n;
	pp->fl_n[blk] += pp->fb.n;
	return 0;
}

/*
 * Values: 0 id, 1 queue, 2 op, 3 fence, 4 value, 5 queued, 6 observed, 7 end,
 * 8 status, 9 thread: the columns as stored, the rest done here (cheaper than
 * in sqlite's program). A row without any time is not written.
 */
static void op_sink(sqlite3_context *ctx, int argc, sqlite3_value **v)
{
	struct pipe *pp = sqlite3_user_data(ctx);
	struct oprec *r;
	const unsigned char *status;
	size_t blk;

	(void)argc;
	if (val_null(v[5]) && val_null(v[6]) && val_null(v[7])) {
		pp->skipped++;
		sqlite3_result_null(ctx);
		return;
	}
	if (pp->cur == PIPE_BLOCK && pipe_publish(pp, 0) < 0) {
		sqlite3_result_error(ctx, "export stopped", -1);
		return;
	}
	blk = pp->produced % PIPE_DEPTH;
	if (pp->cur == 0)
		pp->fl_n[blk] = 0;
	r = &pp->rec[blk * PIPE_BLOCK + pp->cur++];
	r->id = sqlite3_value_int64(v[0]);
	r->has_queue = !val_null(v[1]);
	r->queue = sqlite3_value_int64(v[1]);
	{
		const unsigned char *op = sqlite3_value_text(v[2]);

		r->is_wait = (uint8_t)(op && !strcmp((const char *)op, "wait"));
	}
	r->has_fence = !val_null(v[3]);
	r->fence = sqlite3_value_int64(v[3]);
	r->has_value = !val_null(v[4]);
	r->value = sqlite3_value_int64(v[4]);
	r->has_obs = !val_null(v[6]);
	r->obs = sqlite3_value_int64(v[6]);
	r->has_end = !val_null(v[7]);
	r->end = sqlite3_value_int64(v[7]);
	r->start = !val_null(v[5]) ? sqlite3_value_int64(v[5]) : r->has_obs ? r->obs : r->end;
	status = sqlite3_value_text(v[8]);
	{
		size_t n = status ? strnlen((const char *)status, sizeof(r->status) - 1) : 0;

		memcpy(r->status, status ? (const char *)status : "", n);
		r->status[n] = '\0';
	}
	r->has_thread = !val_null(v[9]);
	r->thread = sqlite3_value_int64(v[9]);
	if (op_flows(pp, blk, r) < 0) {
		sqlite3_result_error(ctx, pp->ferr.msg, -1);
		return;
	}
	sqlite3_result_null(ctx);
}

static void *pipe_main(void *arg)
{
	struct pipe *pp = arg;
	int rc;

	while ((rc = sqlite3_step(pp->st)) == SQLITE_ROW)
		;
	pthread_mutex_lock(&pp->mu);
	pp->rc = rc;
	if (rc != SQLITE_DONE)
		snprintf(pp->errmsg, sizeof(pp->errmsg), "%s", sqlite3_errmsg(pp->db));
	pthread_mutex_unlock(&pp->mu);
	pipe_publish(pp, 1);
	pthread_mutex_lock(&pp->mu);
	pp->done = 1;
	pthread_cond_broadcast(&pp->cv);
	pthread_mutex_unlock(&pp->mu);
	return NULL;
}

/* The main thread's side: every published block through op_row. */
static int pipe_consume(struct pipe *pp, struct op_ctx *oc)
{
	int ret = 0;

	for (;;) {
		size_t idx, n;

		pthread_mutex_lock(&pp->mu);
		while (pp->consumed == pp->produced && !pp->done)
			pthread_cond_wait(&pp->cv, &pp->mu);
		if (pp->consumed == pp->produced) {
			pthread_mutex_unlock(&pp->mu);
			return 0;
		}
		idx = pp->consumed % PIPE_DEPTH;
		n = pp->fill[idx];
		pthread_mutex_unlock(&pp->mu);
		for (size_t i = 0; i < n && ret == 0; i++)
			ret = op_row(oc, &pp->rec[idx * PIPE_BLOCK + i], pp->fl[idx]);
		pthread_mutex_lock(&pp->mu);
		pp->consumed++;
		if (ret < 0)
			pp->stop = 1;
		pthread_cond_broadcast(&pp->cv);
		pthread_mutex_unlock(&pp->mu);
		if (ret < 0)
			return ret;
	}
}

static void flowsrc_close(struct flowsrc *fs)
{
	sqlite3_finalize(fs->by_wait.st);
	sqlite3_finalize(fs->by_signal.st);
	sig_runs_close(&fs->runs);
	free(fs->rel.bits);
	memset(fs, 0, sizeof(*fs));
}

/*
 * The flows' sources on db. check_ends: some flow's other end may not be
 * written (a filter, or operations without a time), so each is checked by a
 * join; else every deps row with a written end is a flow, and one read of
 * deps finds both the waits that end one and its sorted runs.
 */
static int flowsrc_open(struct exporter *x, struct flowsrc *fs, sqlite3 *db, int check_ends)
{
	char *sql, *sorted;
	int ret;

	memset(fs, 0, sizeof(*fs));
	if ((ret = released_alloc(x, db, &fs->rel)) < 0)
		return ret;
	if (!check_ends) {
		sqlite3_stmt *cpu_ok = NULL;

		sql = sqlite3_mprintf("SELECT 1 FROM cpu_signals c WHERE c.id = ?1%s", x->cpu_pred_c);
		if (!sql)
			return oom(x);
		ret = sqlite3_prepare_v2(db, sql, -1, &cpu_ok, NULL);
		sqlite3_free(sql);
		if (ret != SQLITE_OK)
			return nf_error_set(x->err, NF_ESQL, "reading cpu_signals: %s", sqlite3_errmsg(db));
		ret = sig_runs_open(x, &fs->runs, db, &fs->rel, cpu_ok);
		sqlite3_finalize(cpu_ok);
		if (ret < 0)
			return ret;
		fs->use_runs = ret == 1;
	}
	/* Waits whose releaser is written: joined only when some may not be. */
	if (check_ends)
		sql = sqlite3_mprintf(
			"SELECT d.wait_id, 0 FROM deps d LEFT JOIN fence_ops s ON s.id = d.signal_id "
			"WHERE (d.signal_id IS NOT NULL AND s.id IS NOT NULL%s) OR (d.signal_id IS NULL "
			"AND d.cpu_signal IS NOT NULL AND EXISTS (SELECT 1 FROM cpu_signals c "
			"WHERE c.id = d.cpu_signal%s))",
			x->op_pred_s, x->cpu_pred_c);
	else
		sql = sqlite3_mprintf(
			"SELECT d.wait_id, 0 FROM deps d WHERE d.signal_id IS NOT NULL OR "
			"(d.cpu_signal IS NOT NULL AND EXISTS (SELECT 1 FROM cpu_signals c "
			"WHERE c.id = d.cpu_signal%s))",
			x->cpu_pred_c);
	if (!sql)
		return oom(x);
	if (!fs->rel.bits) {
		/* Ids too sparse for a bitmap: the same rows sorted by wait, merged. */
		sorted = sqlite3_mprintf("SELECT * FROM (%s) ORDER BY 1", sql);
		sqlite3_free(sql);
		if ((ret = cursor_open(x->err, &fs->by_wait, db, sorted)) < 0)
			return ret;
	} else {
		ret = fs->use_runs ? 0 : released_fill(x, db, &fs->rel, sql);
		sqlite3_free(sql);
		if (ret < 0)
			return ret;
	}
	if (fs->use_runs)
		return 0;
	if (check_ends)
		sql = sqlite3_mprintf("SELECT d.signal_id, d.wait_id FROM deps d JOIN fence_ops w "
				      "ON w.id = d.wait_id WHERE d.signal_id IS NOT NULL%s "
				      "ORDER BY d.signal_id, d.wait_id",
				      x->op_pred_w);
	else
		sql = sqlite3_mprintf("SELECT signal_id, wait_id FROM deps WHERE signal_id IS NOT NULL "
				      "ORDER BY signal_id, wait_id");
	return cursor_open(x->err, &fs->by_signal, db, sql);
}

/*
 * fence_ops, in id order. Each operation goes to its queue's lanes (fence
 * waits without a queue: their thread's), with its flows: the waits it
 * released (deps by signal_id) and the signal that released it (deps by
 * wait_id), each only when the other end is written too. Unfiltered, the
 * pass assumes every operation has a time (then every deps row is a flow
 * whose two ends are written, and no join is needed); the scan counts the
 * rows without one, and when there are any the pass returns EXPORT_RETRY:
 * the export is made again with x->force_check (flows checked by joins).
 */
int pass_ops(struct exporter *x)
{
	struct flowsrc fs;
	struct op_ctx oc = { x, INT64_MIN };
	struct pipe pp;
	pthread_t th;
	char *sql;
	int rc, ret;

	memset(&fs, 0, sizeof(fs));
	memset(&pp, 0, sizeof(pp));
	x->check_ends = x->filtered || x->force_check;
	if ((ret = flowsrc_open(x, &fs, x->db3, x->check_ends)) < 0)
		goto out;
	pp.db = x->db;
	pp.fs = &fs;
	pp.fb.err = &pp.ferr;
	nf_error_clear(&pp.ferr);
	if (!(pp.rec = malloc(sizeof(*pp.rec) * PIPE_BLOCK * PIPE_DEPTH))) {
		ret = oom(x);
		goto out;
	}
	if (sqlite3_create_function(x->db, "nf_export_op", 10, SQLITE_UTF8 | SQLITE_DIRECTONLY, &pp,
				    op_sink, NULL, NULL) != SQLITE_OK) {
		ret = sql_fail(x, "reading fence_ops");
		goto out;
	}
	/* In rowid (= id) order: a plain scan of the table (unfiltered, with no
	 * condition at all: rows without a time are left out by nf_export_op). */
	sql = sqlite3_mprintf("SELECT count(nf_export_op(f.id, f.queue, f.op, f.fence, f.value, "
			      "f.queued_ns, f.observed_ns, f.end_ns, f.status, f.thread)) FROM fence_ops f%s%s",
			      x->filtered ? " WHERE 1" : "", x->filtered ? x->op_pred_f : "");
	if (!sql) {
		ret = oom(x);
		goto out;
	}
	rc = sqlite3_prepare_v2(x->db, sql, -1, &pp.st, NULL);
	sqlite3_free(sql);
	if (rc != SQLITE_OK) {
		ret = sql_fail(x, "reading fence_ops");
		goto out;
	}
	pthread_mutex_init(&pp.mu, NULL);
	pthread_cond_init(&pp.cv, NULL);
	if (pthread_create(&th, NULL, pipe_main, &pp) != 0) {
		ret = nf_error_set(x->err, NF_ENOMEM, "cannot start the reader thread");
	} else {
		ret = pipe_consume(&pp, &oc);
		pthread_join(th, NULL);
		if (ret == 0 && pp.ferr.code)
			ret = nf_error_set(x->err, pp.ferr.code, "%s", pp.ferr.msg);
		else if (ret == 0 && pp.rc != SQLITE_DONE)
			ret = nf_error_set(x->err, NF_ESQL, "reading fence_ops: %s", pp.errmsg);
		x->st.skipped = x->filtered ? 0 : pp.skipped;
		if (ret == 0 && pp.skipped && !x->check_ends)
			ret = EXPORT_RETRY;  /* some signal may not be written: again, with joins */
	}
	pthread_cond_destroy(&pp.cv);
	pthread_mutex_destroy(&pp.mu);
out:
	sqlite3_finalize(pp.st);
	free(pp.rec);
	for (int i = 0; i < PIPE_DEPTH; i++)
		free(pp.fl[i]);
	free(pp.fb.v);
	/* The function points at this frame: gone with it. */
	sqlite3_create_function(x->db, "nf_export_op", 10, SQLITE_UTF8, NULL, NULL, NULL, NULL);
	flowsrc_close(&fs);
	return ret;
}
