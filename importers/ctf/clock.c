/*
 * GPU-to-CPU clock model. Calibration pairs (a GPU reading and the CPU reading
 * taken with it) are jittery and the GPU clock drifts, so the model does not
 * trust any single pair: each pair is replaced by the value of a local
 * least-squares line fitted over a window of neighbouring pairs (the window
 * size is chosen per adapter by leave-one-out cross-validation, which weighs
 * jitter against drift curvature), and GPU times are then converted by linear
 * interpolation between successive smoothed pairs, extrapolating with the
 * nearest segment outside. Pairs are streamed through a ring buffer the size
 * of the window and the smoothed pairs live in a TEMP table, so memory does
 * not grow with the session.
 */
#include "builder.h"
#include "contract/errors.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NF_CLOCK_MAX_WINDOW 256u

struct cal_pair {
	int64_t gpu;
	long double y;     /* CPU ns since session start */
	int64_t freq;
	int from_cmp;
};

struct fit_pass {
	sqlite3 *db;
	uint32_t adapter;
	uint32_t k;        /* window size */
	bool emit;         /* false: cross-validation only */
	struct cal_pair ring[NF_CLOCK_MAX_WINDOW];
	/* cross-validation */
	double cv_sse;
	uint64_t cv_n;
	/* emission */
	sqlite3_stmt *ins_fit, *ins_cal;
	uint64_t pairs;
	double sumsq, maxabs;
	int64_t g_first, g_last;
	long double s_first, s_last;
	int64_t last_freq;
};

static int sql_fail(sqlite3 *db, struct nf_error *err, const char *what)
{
	return nf_error_set(err, NF_ESQL, "clock fit: %s: %s", what, sqlite3_errmsg(db));
}

/*
 * Least-squares line over the K pairs from window start lo (ring positions),
 * optionally leaving one pair out, evaluated at pair `at`.
 */
static long double window_predict(const struct fit_pass *p, uint64_t lo, uint64_t at,
				  bool leave_out)
{
	const struct cal_pair *base = &p->ring[lo % p->k];
	const struct cal_pair *target = &p->ring[at % p->k];
	double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0;

	for (uint64_t i = lo; i < lo + p->k; i++) {
		const struct cal_pair *c = &p->ring[i % p->k];

		if (leave_out && i == at)
			continue;
		double x = (double)(c->gpu - base->gpu);
		double y = (double)(c->y - base->y);

		sx += x;
		sy += y;
		n += 1;
	}
	if (n == 0)
		return target->y;
	double mx = sx / n, my = sy / n;

	for (uint64_t i = lo; i < lo + p->k; i++) {
		const struct cal_pair *c = &p->ring[i % p->k];

		if (leave_out && i == at)
			continue;
		double dx = (double)(c->gpu - base->gpu) - mx;
		double dy = (double)(c->y - base->y) - my;

		sxx += dx * dx;
		sxy += dx * dy;
	}
	double slope = sxx > 0 ? sxy / sxx
			       : (target->freq > 0 ? 1e9 / (double)target->freq : 0);
	double xt = (double)(target->gpu - base->gpu);

	return base->y + (long double)(my + slope * (xt - mx));
}

static int emit_pair(struct fit_pass *p, uint64_t lo, uint64_t i, struct nf_error *err)
{
	const struct cal_pair *c = &p->ring[i % p->k];

	if (!p->emit) {
		if (p->k < 3)
			return 0;
		double e = (double)(c->y - window_predict(p, lo, i, true));

		p->cv_sse += e * e;
		p->cv_n++;
		return 0;
	}
	long double s = window_predict(p, lo, i, false);
	double resid = (double)(c->y - s);

	sqlite3_bind_int64(p->ins_fit, 1, p->adapter);
	sqlite3_bind_int64(p->ins_fit, 2, c->gpu);
	sqlite3_bind_double(p->ins_fit, 3, (double)s);
	sqlite3_bind_int64(p->ins_fit, 4, c->freq);
	if (sqlite3_step(p->ins_fit) != SQLITE_DONE)
		return sql_fail(p->db, err, "insert t_fit");
	sqlite3_reset(p->ins_fit);

	sqlite3_bind_int64(p->ins_cal, 1, p->adapter);
	sqlite3_bind_int64(p->ins_cal, 2, (sqlite3_int64)llroundl(c->y));
	sqlite3_bind_int64(p->ins_cal, 3, c->gpu);
	sqlite3_bind_int64(p->ins_cal, 4, c->freq);
	sqlite3_bind_int(p->ins_cal, 5, c->from_cmp);
	sqlite3_bind_double(p->ins_cal, 6, resid);
	if (sqlite3_step(p->ins_cal) != SQLITE_DONE)
		return sql_fail(p->db, err, "insert calibrations");
	sqlite3_reset(p->ins_cal);

	if (p->pairs == 0) {
		p->g_first = c->gpu;
		p->s_first = s;
	}
	p->g_last = c->gpu;
	p->s_last = s;
	p->last_freq = c->freq;
	p->pairs++;
	p->sumsq += resid * resid;
	if (fabs(resid) > p->maxabs)
		p->maxabs = fabs(resid);
	return 0;
}

/* One pass over an adapter's n pairs in GPU order with window k. */
static int run_pass(struct fit_pass *p, uint64_t n, struct nf_error *err)
{
	static const char sel_sql[] =
		"SELECT gpu, cpu_ns, freq, from_cmp FROM temp.t_cal WHERE adapter = ?1 "
		"ORDER BY gpu, rowid";
	sqlite3_stmt *sel = NULL;
	uint32_t h = p->k / 2, c = p->k - 1 - h;
	uint64_t j = 0;
	int rc = 0, src;

	if (sqlite3_prepare_v2(p->db, sel_sql, -1, &sel, NULL) != SQLITE_OK)
		return sql_fail(p->db, err, "select t_cal");
	sqlite3_bind_int64(sel, 1, p->adapter);
	while ((src = sqlite3_step(sel)) == SQLITE_ROW && j < n) {
		struct cal_pair *cp = &p->ring[j % p->k];

		cp->gpu = sqlite3_column_int64(sel, 0);
		cp->y = (long double)sqlite3_column_double(sel, 1);
		cp->freq = sqlite3_column_int64(sel, 2);
		cp->from_cmp = sqlite3_column_int(sel, 3);
		if (j + 1 == p->k) {
			for (uint64_t i = 0; i <= h && rc == 0; i++)
				rc = emit_pair(p, 0, i, err);
		} else if (j + 1 > p->k) {
			rc = emit_pair(p, j + 1 - p->k, j - c, err);
		}
		if (rc)
			goto out;
		j++;
	}
	if (src != SQLITE_ROW && src != SQLITE_DONE) {
		rc = sql_fail(p->db, err, "read t_cal");
		goto out;
	}
	for (uint64_t i = n - c; i < n && rc == 0; i++)
		rc = emit_pair(p, n - p->k, i, err);
out:
	sqlite3_finalize(sel);
	return rc;
}

/*
 * The standard error of the drift: an ordinary least-squares line of CPU ns
 * against GPU ticks through every pair of the adapter (centred sums, three
 * passes, so that ns-sized residuals are not lost next to 1e18-sized sums);
 * its slope's standard error sqrt(SSE / (n - 2) / Sxx), in ppm of the nominal
 * tick. Sets *has = 0 when it cannot be told (fewer than 3 pairs, one GPU reading).
 */
static int drift_stderr(sqlite3 *db, uint32_t adapter, uint64_t freq, double *se, int *has,
			struct nf_error *err)
{
	static const char sql[] =
		"WITH m AS (SELECT count(*) AS n, avg(gpu) AS mx, avg(cpu_ns) AS my FROM temp.t_cal "
		"WHERE adapter = ?1), "
		"s AS (SELECT sum((gpu - mx) * (gpu - mx)) AS sxx, sum((gpu - mx) * (cpu_ns - my)) AS sxy "
		"FROM temp.t_cal, m WHERE adapter = ?1) "
		"SELECT m.n, s.sxx, s.sxy / s.sxx, (SELECT sum(((cpu_ns - my) - (s.sxy / s.sxx) * (gpu - mx)) * "
		"((cpu_ns - my) - (s.sxy / s.sxx) * (gpu - mx))) FROM temp.t_cal, m WHERE adapter = ?1) "
		"FROM m, s";
	sqlite3_stmt *st;
	int rc = 0;

	*has = 0;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return sql_fail(db, err, "clock fit: drift error");
	sqlite3_bind_int64(st, 1, adapter);
	if (sqlite3_step(st) == SQLITE_ROW) {
		double n = sqlite3_column_double(st, 0), sxx = sqlite3_column_double(st, 1);
		double slope = sqlite3_column_double(st, 2), sse = sqlite3_column_double(st, 3);

		if (n >= 3 && sxx > 0 && slope > 0 && freq > 0 &&
		    sqlite3_column_type(st, 2) != SQLITE_NULL) {
			double se_slope = sqrt((sse > 0 ? sse : 0) / (n - 2) / sxx);
			double nominal = 1e9 / (double)freq;

			/* ppm = (nominal / slope - 1) * 1e6: d ppm = nominal / slope^2 * 1e6 d slope */
			*se = nominal / (slope * slope) * se_slope * 1e6;
			*has = 1;
		}
	} else {
		rc = sql_fail(db, err, "clock fit: drift error");
	}
	sqlite3_finalize(st);
	return rc;
}

static int fit_adapter(sqlite3 *db, uint32_t adapter, uint64_t n, uint32_t window,
		       sqlite3_stmt *ins_fit, sqlite3_stmt *ins_cal, sqlite3_stmt *ins_sum,
		       struct nf_error *err)
{
	static const uint32_t candidates[] = { 4, 8, 16, 32, 64, 128, 256 };
	struct fit_pass *p = calloc(1, sizeof(*p));
	uint32_t k;
	int rc;

	if (!p)
		return nf_error_set(err, NF_ENOMEM, "clock fit: out of memory");
	p->db = db;
	p->adapter = adapter;
	if (window > 0) {
		k = window;
	} else if (n < 4) {
		k = (uint32_t)n;
	} else {
		double best = INFINITY;

		k = 4;
		for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
			if (candidates[i] > n)
				break;
			p->k = candidates[i];
			p->cv_sse = 0;
			p->cv_n = 0;
			rc = run_pass(p, n, err);
			if (rc)
				goto out;
			double mse = p->cv_n ? p->cv_sse / (double)p->cv_n : INFINITY;

			if (mse < best) {
				best = mse;
				k = candidates[i];
			}
		}
	}
	if (k > NF_CLOCK_MAX_WINDOW)
		k = NF_CLOCK_MAX_WINDOW;
	if (k > n)
		k = (uint32_t)n;
	p->k = k;
	p->emit = true;
	p->ins_fit = ins_fit;
	p->ins_cal = ins_cal;
	rc = run_pass(p, n, err);
	if (rc)
		goto out;

	double ppm = 0;

	if (p->g_last != p->g_first && p->last_freq > 0) {
		double slope = (double)(p->s_last - p->s_first) / (double)(p->g_last - p->g_first);
		double nominal = 1e9 / (double)p->last_freq;

		if (slope > 0)
			ppm = (nominal / slope - 1.0) * 1e6;
	}
	double se;
	int has_se = 0;

	if (p->pairs >= 3 && (rc = drift_stderr(db, adapter, p->last_freq, &se, &has_se, err)))
		goto out;
	sqlite3_bind_int64(ins_sum, 1, adapter);
	sqlite3_bind_int64(ins_sum, 2, (sqlite3_int64)p->pairs);
	/* Two pairs fit any line exactly: no drift is claimed from them. */
	if (p->pairs >= 3)
		sqlite3_bind_double(ins_sum, 3, ppm);
	else
		sqlite3_bind_null(ins_sum, 3);
	sqlite3_bind_double(ins_sum, 4, p->pairs ? sqrt(p->sumsq / (double)p->pairs) : 0);
	sqlite3_bind_double(ins_sum, 5, p->maxabs);
	if (has_se)
		sqlite3_bind_double(ins_sum, 6, se);
	else
		sqlite3_bind_null(ins_sum, 6);
	if (sqlite3_step(ins_sum) != SQLITE_DONE)
		rc = sql_fail(db, err, "insert clock_fit");
	sqlite3_reset(ins_sum);
out:
	free(p);
	return rc;
}

int nf_clock_fit(sqlite3 *db, uint32_t window, struct nf_error *err)
{
	sqlite3_stmt *adapters = NULL, *ins_fit = NULL, *ins_cal = NULL, *ins_sum = NULL;
	int rc = 0, src;

	if (sqlite3_prepare_v2(db,
			       "SELECT adapter, count(*) FROM temp.t_cal GROUP BY adapter "
			       "ORDER BY adapter", -1, &adapters, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db,
			       "INSERT INTO temp.t_fit(adapter, gpu, ns, freq) VALUES (?1, ?2, ?3, ?4)",
			       -1, &ins_fit, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db,
			       "INSERT INTO calibrations(adapter, ts_ns, gpu_clock, gpu_frequency, "
			       "from_cmp, residual_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
			       -1, &ins_cal, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db,
			       "INSERT OR REPLACE INTO clock_fit(adapter, pairs, ppm, residual_rms_ns, "
			       "residual_max_ns, ppm_stderr) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
			       -1, &ins_sum, NULL) != SQLITE_OK) {
		rc = sql_fail(db, err, "prepare");
		goto out;
	}
	/*
	 * The GROUP BY result is materialised before the first row is returned,
	 * so inserting into other tables while stepping it is safe.
	 */
	while ((src = sqlite3_step(adapters)) == SQLITE_ROW) {
		uint32_t adapter = (uint32_t)sqlite3_column_int64(adapters, 0);
		uint64_t n = (uint64_t)sqlite3_column_int64(adapters, 1);

		rc = fit_adapter(db, adapter, n, window, ins_fit, ins_cal, ins_sum, err);
		if (rc)
			goto out;
	}
	if (src != SQLITE_DONE) {
		rc = sql_fail(db, err, "list adapters");
		goto out;
	}
	if (sqlite3_exec(db, "CREATE INDEX temp.t_fit_key ON t_fit(adapter, gpu)", NULL, NULL,
			 NULL) != SQLITE_OK)
		rc = sql_fail(db, err, "index t_fit");
out:
	sqlite3_finalize(adapters);
	sqlite3_finalize(ins_fit);
	sqlite3_finalize(ins_cal);
	sqlite3_finalize(ins_sum);
	return rc;
}

/* The cached segment of one adapter. */
struct seg_cache {
	uint32_t adapter;
	bool none;          /* the adapter has no calibration at all */
	bool valid;
	bool lo_open, hi_open;
	int64_t g0, g1;
	double s0, s1;
	double ns_per_tick; /* used when g0 == g1 */
};

/* A fit point held in memory, in (adapter, gpu, rowid) order. */
struct mem_point {
	int64_t gpu;
	double ns;
	int64_t freq;
	uint32_t adapter;
	uint32_t pad;
};

/*
 * Fit points held in memory, at most: one per calibration pair (~100 a second
 * of session), so ~1.5 hours of session; longer sessions look them up in SQL.
 */
#define CLOCK_MEM_POINTS (1u << 19)

struct nf_clock_fitted {
	sqlite3 *db;
	sqlite3_stmt *le, *gt, *lt;
	struct mem_point *pts; /* every fit point when they fit in memory, else NULL */
	size_t n_pts;
	bool detached;         /* pts holds them all: conversions do not use db */
	struct seg_cache *segs;
	size_t n_segs, cap_segs;
	bool shared;           /* nf_clock_fitted_share's: pts and the statements are another's */
};

/* Reads every fit point into memory when there are few enough. */
static int load_points(struct nf_clock_fitted *m, size_t max_points, struct nf_error *err)
{
	sqlite3_stmt *st = NULL;
	int64_t n = 0;
	int src, rc = 0;

	if (sqlite3_prepare_v2(m->db, "SELECT count(*) FROM temp.t_fit", -1, &st, NULL) != SQLITE_OK)
		return sql_fail(m->db, err, "count t_fit");
	if (sqlite3_step(st) != SQLITE_ROW) {
		sqlite3_finalize(st);
		return sql_fail(m->db, err, "count t_fit");
	}
	n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (n <= 0 || (uint64_t)n > max_points) {
		m->detached = n == 0;
		return 0;
	}
	m->pts = malloc((size_t)n * sizeof(*m->pts));
	if (!m->pts)
		return nf_error_set(err, NF_ENOMEM, "clock model: out of memory");
	if (sqlite3_prepare_v2(m->db, "SELECT adapter, gpu, ns, freq FROM temp.t_fit "
				      "ORDER BY adapter, gpu, rowid", -1, &st, NULL) != SQLITE_OK)
		return sql_fail(m->db, err, "read t_fit");
	while ((src = sqlite3_step(st)) == SQLITE_ROW && m->n_pts < (size_t)n) {
		struct mem_point *p = &m->pts[m->n_pts++];

		p->adapter = (uint32_t)sqlite3_column_int64(st, 0);
		p->gpu = sqlite3_column_int64(st, 1);
		p->ns = sqlite3_column_double(st, 2);
		p->freq = sqlite3_column_int64(st, 3);
		p->pad = 0;
	}
	if (src != SQLITE_ROW && src != SQLITE_DONE)
		rc = sql_fail(m->db, err, "read t_fit");
	sqlite3_finalize(st);
	m->detached = rc == 0;
	return rc;
}

struct nf_clock_fitted *nf_clock_fitted_create(sqlite3 *db, struct nf_error *err)
{
	return nf_clock_fitted_create_limit(db, CLOCK_MEM_POINTS, err);
}

struct nf_clock_fitted *nf_clock_fitted_create_limit(sqlite3 *db, size_t max_points,
						    struct nf_error *err)
{
	static const char *const sql[3] = {
		"SELECT gpu, ns, freq FROM temp.t_fit WHERE adapter = ?1 AND gpu <= ?2 "
		"ORDER BY gpu DESC LIMIT 1",
		"SELECT gpu, ns, freq FROM temp.t_fit WHERE adapter = ?1 AND gpu > ?2 "
		"ORDER BY gpu ASC LIMIT 1",
		"SELECT gpu, ns, freq FROM temp.t_fit WHERE adapter = ?1 AND gpu < ?2 "
		"ORDER BY gpu DESC LIMIT 1",
	};
	struct nf_clock_fitted *m = calloc(1, sizeof(*m));

	if (!m) {
		nf_error_set(err, NF_ENOMEM, "clock model: out of memory");
		return NULL;
	}
	m->db = db;
	if (sqlite3_prepare_v2(db, sql[0], -1, &m->le, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, sql[1], -1, &m->gt, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, sql[2], -1, &m->lt, NULL) != SQLITE_OK) {
		sql_fail(db, err, "prepare model");
		nf_clock_fitted_destroy(m);
		return NULL;
	}
	if (load_points(m, max_points, err) != 0) {
		nf_clock_fitted_destroy(m);
		return NULL;
	}
	return m;
}

bool nf_clock_fitted_detached(const struct nf_clock_fitted *m)
{
	return m->detached;
}

struct nf_clock_fitted *nf_clock_fitted_share(const struct nf_clock_fitted *m)
{
	struct nf_clock_fitted *c;

	if (!m->detached || !(c = calloc(1, sizeof(*c))))
		return NULL;
	/* The statements only name the lookup here (mem_lookup): never run. */
	*c = (struct nf_clock_fitted){ .le = m->le, .gt = m->gt, .lt = m->lt, .pts = m->pts,
				       .n_pts = m->n_pts, .detached = true, .shared = true };
	return c;
}

void nf_clock_fitted_destroy(struct nf_clock_fitted *m)
{
	if (!m)
		return;
	if (m->shared) {
		free(m->segs);
		free(m);
		return;
	}
	sqlite3_finalize(m->le);
	sqlite3_finalize(m->gt);
	sqlite3_finalize(m->lt);
	free(m->pts);
	free(m->segs);
	free(m);
}

struct fit_point {
	int64_t gpu;
	double ns;
	int64_t freq;
};

/* Index of the first point not below (adapter, gpu) in order; with upper, not at or below. */
static size_t mem_bound(const struct nf_clock_fitted *m, uint32_t adapter, int64_t gpu, bool upper)
{
	size_t lo = 0, hi = m->n_pts;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct mem_point *p = &m->pts[mid];

		if (p->adapter < adapter ||
		    (p->adapter == adapter && (p->gpu < gpu || (upper && p->gpu == gpu))))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The in-memory lookups, choosing among equal readings as the SQL ones do
 * through the (adapter, gpu) index: le and lt the last, gt the first.
 */
static int mem_lookup(const struct nf_clock_fitted *m, sqlite3_stmt *st, uint32_t adapter,
		      int64_t gpu, struct fit_point *out)
{
	size_t i;
	bool below = st != m->gt;

	if (st == m->gt)
		i = mem_bound(m, adapter, gpu, true);
	else
		i = mem_bound(m, adapter, gpu, st == m->le);
	if (below) {
		if (i == 0 || m->pts[i - 1].adapter != adapter)
			return 0;
		i--;
	} else if (i == m->n_pts || m->pts[i].adapter != adapter) {
		return 0;
	}
	out->gpu = m->pts[i].gpu;
	out->ns = m->pts[i].ns;
	out->freq = m->pts[i].freq;
	return 1;
}

/* Runs one of the lookups; returns 1 found, 0 not found, NF_ESQL. */
static int lookup(struct nf_clock_fitted *m, sqlite3_stmt *st, uint32_t adapter, int64_t gpu,
		  struct fit_point *out, struct nf_error *err)
{
	int src, rc = 0;

	if (m->detached)
		return mem_lookup(m, st, adapter, gpu, out);
	sqlite3_bind_int64(st, 1, adapter);
	sqlite3_bind_int64(st, 2, gpu);
	src = sqlite3_step(st);
	if (src == SQLITE_ROW) {
		out->gpu = sqlite3_column_int64(st, 0);
		out->ns = sqlite3_column_double(st, 1);
		out->freq = sqlite3_column_int64(st, 2);
		rc = 1;
	} else if (src != SQLITE_DONE) {
		rc = sql_fail(m->db, err, "clock lookup");
	}
	sqlite3_reset(st);
	return rc;
}

static struct seg_cache *seg_for(struct nf_clock_fitted *m, uint32_t adapter)
{
	for (size_t i = 0; i < m->n_segs; i++)
		if (m->segs[i].adapter == adapter)
			return &m->segs[i];
	if (m->n_segs == m->cap_segs) {
		size_t cap = m->cap_segs ? m->cap_segs * 2 : 4;
		struct seg_cache *s = realloc(m->segs, cap * sizeof(*s));

		if (!s)
			return NULL;
		m->segs = s;
		m->cap_segs = cap;
	}
	struct seg_cache *s = &m->segs[m->n_segs++];

	memset(s, 0, sizeof(*s));
	s->adapter = adapter;
	return s;
}

static void seg_set(struct seg_cache *s, const struct fit_point *a, const struct fit_point *b,
		    bool lo_open, bool hi_open)
{
	s->valid = true;
	s->g0 = a->gpu;
	s->s0 = a->ns;
	s->g1 = b->gpu;
	s->s1 = b->ns;
	s->lo_open = lo_open;
	s->hi_open = hi_open;
	s->ns_per_tick = a->freq > 0 ? 1e9 / (double)a->freq : 0;
}

/* Finds the segment for gpu; returns 0 (s->none set when there is none) or NF_ESQL. */
static int seg_seek(struct nf_clock_fitted *m, struct seg_cache *s, int64_t gpu,
		    struct nf_error *err)
{
	struct fit_point a, b, o;
	int ha, hb, ho;

	ha = lookup(m, m->le, s->adapter, gpu, &a, err);
	if (ha < 0)
		return ha;
	hb = lookup(m, m->gt, s->adapter, gpu, &b, err);
	if (hb < 0)
		return hb;
	if (ha && hb) {
		seg_set(s, &a, &b, false, false);
	} else if (ha) {
		ho = lookup(m, m->lt, s->adapter, a.gpu, &o, err);
		if (ho < 0)
			return ho;
		if (ho)
			seg_set(s, &o, &a, false, true);
		else
			seg_set(s, &a, &a, true, true);
	} else if (hb) {
		ho = lookup(m, m->gt, s->adapter, b.gpu, &o, err);
		if (ho < 0)
			return ho;
		if (ho)
			seg_set(s, &b, &o, true, false);
		else
			seg_set(s, &b, &b, true, true);
	} else {
		s->none = true;
		s->valid = false;
	}
	return 0;
}

int nf_clock_fitted_convert(struct nf_clock_fitted *m, uint32_t adapter, uint64_t gpu_u,
			    double *ns, bool *known, struct nf_error *err)
{
	struct seg_cache *s = seg_for(m, adapter);
	int64_t gpu = (int64_t)gpu_u;

	*known = false;
	if (!s)
		return nf_error_set(err, NF_ENOMEM, "clock model: out of memory");
	if (s->none)
		return 0;
	if (!s->valid || (gpu < s->g0 && !s->lo_open) || (gpu >= s->g1 && !s->hi_open)) {
		int rc = seg_seek(m, s, gpu, err);

		if (rc)
			return rc;
		if (s->none)
			return 0;
	}
	/* Differences in floating point: a value far from the segment (beyond
	 * NF_GPU_TS_MAX) must not overflow; the caller refuses what is out of range. */
	double dg = (double)((long double)gpu - (long double)s->g0);

	if (s->g1 == s->g0)
		*ns = s->s0 + dg * s->ns_per_tick;
	else
		*ns = s->s0 + dg * (s->s1 - s->s0) / (double)((long double)s->g1 - (long double)s->g0);
	*known = isfinite(*ns) != 0;
	return 0;
}
