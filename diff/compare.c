/*
 * Comparing the two sessions' series: matched by (scope, name, metric), each
 * pair gets its statistics, the tests and a verdict (include/contract/diff.h
 * states the rules); a series one side lacks gets the reason. Then the hang
 * findings that appeared or disappeared, and the two critical paths side by
 * side.
 */
#include "diff_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/capbuf.h"

static const double levels[3] = { 0.5, 0.9, 0.99 };

static int series_order(const struct dd_series *x, const struct dd_series *y)
{
	int c;

	if (x->scope != y->scope)
		return x->scope < y->scope ? -1 : 1;
	if ((c = strcmp(x->name, y->name)))
		return c;
	return x->metric < y->metric ? -1 : x->metric > y->metric;
}

static int series_cmp(const void *a, const void *b)
{
	return series_order(*(const struct dd_series *const *)a, *(const struct dd_series *const *)b);
}

static const char *own(struct nf_diff *d, const char *text)
{
	char *c;

	if (nf_array_reserve((void **)&d->owned, &d->cap_owned, d->n_owned + 1, sizeof(*d->owned), 16, 0) ||
	    !(c = strdup(text)))
		return NULL;
	d->owned[d->n_owned++] = c;
	return c;
}

static void side_fill(struct nf_diff_side *x, const struct dd_series *s, double z)
{
	x->present = s->metric < DM_N_DIST || s->has_value;
	x->members = s->members;
	x->value = s->value;
	x->aux = s->aux;
	x->n = (int64_t)s->n;
	for (int k = 0; k < 3; k++) {
		x->lo[k] = INT64_MIN;
		x->hi[k] = INT64_MAX;
	}
	if (!s->n)
		return;
	for (int k = 0; k < 3; k++) {
		x->stat[k] = s->v[dd_quantile_index(s->n, levels[k])];
		dd_quantile_interval(s->v, s->n, levels[k], z, &x->lo[k], &x->hi[k]);
	}
	x->stat[NF_DIFF_MAX] = s->v[s->n - 1];
}

/* What one sample of a distribution is, for "A has no ...". */
static const char *sample_name(int metric)
{
	switch (metric) {
	case DM_STALL: return "GPU wait with a known stall";
	case DM_LATENCY: return "GPU wait released by a signal of known time";
	case DM_Q2E: return "operation with both its queued and end times";
	case DM_CPU_WAIT: return "satisfied CPU wait with a known end";
	case DM_JOB: return "job started and finished as the file shows it";
	case DM_FRAME: return "frame with an interval";
	default: return "sample";
	}
}

/* What session s lacks for metric x, when the whole kind of data is missing
 * ("A has no jobs"): true and the reason in buf; false when it has that kind. */
static bool lacks_kind(const struct dd_session *s, const struct dd_series *x, const char *who, char *buf, size_t len)
{
	if (x->metric == DM_JOB && !s->has_jobs)
		snprintf(buf, len, "%s has no jobs", who);
	else if (x->metric == DM_FRAME && !s->has_frames)
		snprintf(buf, len, "%s has no frames", who);
	else if (x->metric == DM_FRAME && !s->frames_usable)
		snprintf(buf, len, "%s's frames table has no interval_ns column", who);
	else if (x->metric == DM_CPU_WAIT && !s->has_cpu_waits)
		snprintf(buf, len, "%s has no CPU waits", who);
	else
		return false;
	return true;
}

/* Why side `who` of a session lacks series x (the other side has it). */
static void lacks(const struct dd_session *s, const struct dd_series *x, const char *who, char *buf, size_t len)
{
	if (!lacks_kind(s, x, who, buf, len))
		snprintf(buf, len, "%s has no %s of that name", who, dd_scope_names[x->scope]);
}

/* Why side `who` has series x without samples. */
static void lacks_samples(const struct dd_session *s, const struct dd_series *x, const char *who, char *buf,
			  size_t len)
{
	if (!lacks_kind(s, x, who, buf, len))
		snprintf(buf, len, "%s has no %s", who, sample_name(x->metric));
}

/* Why side `who` has series x without a value. */
static void lacks_value(const struct dd_session *s, const struct dd_series *x, const char *who, char *buf, size_t len)
{
	if (x->metric == DM_FINDINGS)
		snprintf(buf, len, "%s: %s", who, s->hangs_why);
	else if (x->metric == DM_BUSY)
		snprintf(buf, len, "%s has no operation with both its queued and end times", who);
	else if (x->metric == DM_LOST)
		snprintf(buf, len, "%s's queue has no log entries", who);
	else
		snprintf(buf, len, "%s has no value", who);
}

/* Counts one side lacks are zero, not unknown: anomalies of a kind, findings of a
 * kind (when the hang check ran). */
static bool absent_is_zero(const struct dd_session *s, const struct dd_series *x)
{
	return (x->metric == DM_ANOMALIES && x->scope == DS_KIND) ||
	       (x->metric == DM_FINDINGS && x->scope == DS_KIND && s->hangs_ok);
}

static void verdict_dist(const struct nf_diff_options *o, const struct dd_series *sa, const struct dd_series *sb,
			 struct nf_diff_row *r)
{
	bool worse = false, better = false;

	r->tested = true;
	if (sa->n == sb->n && !memcmp(sa->v, sb->v, sa->n * sizeof(*sa->v))) {
		r->mw_z = 0;
		r->mw_p = 1;
		r->p_b_greater = 0.5;
		r->verdict = NF_DIFF_NO_CHANGE;
		return;
	}
	dd_mann_whitney(sa->v, sa->n, sb->v, sb->n, &r->mw_z, &r->mw_p, &r->p_b_greater);
	for (int k = 0; k < 3; k++) {
		if (r->b.lo[k] != INT64_MIN && r->a.hi[k] != INT64_MAX && r->b.lo[k] > r->a.hi[k])
			r->sig[k] = true;
		if (r->b.hi[k] != INT64_MAX && r->a.lo[k] != INT64_MIN && r->b.hi[k] < r->a.lo[k])
			r->sig[k] = true;
		if (!r->sig[k] || !dd_beyond(o, r->a.stat[k], r->b.stat[k]))
			continue;
		if (r->b.stat[k] > r->a.stat[k])
			worse = true;
		else
			better = true;
	}
	/* the U test: a shift of the whole distribution, the median moved by more than the
	 * minimum effects in the same direction */
	if (r->mw_p < o->alpha && dd_beyond(o, r->a.stat[NF_DIFF_P50], r->b.stat[NF_DIFF_P50])) {
		if (r->mw_z > 0 && r->b.stat[NF_DIFF_P50] > r->a.stat[NF_DIFF_P50])
			worse = true;
		else if (r->mw_z < 0 && r->b.stat[NF_DIFF_P50] < r->a.stat[NF_DIFF_P50])
			better = true;
	}
	r->verdict = worse ? NF_DIFF_REGRESSION : better ? NF_DIFF_IMPROVEMENT : NF_DIFF_NOT_SIGNIFICANT;
}

/* Row for the pair (sa, sb), either NULL; 1 when the row is kept, 0 when dropped
 * (no samples on either side), NF_ENOMEM. */
static int make_row(struct nf_diff *d, const struct dd_series *sa, const struct dd_series *sb, double z,
		    struct nf_diff_row *r)
{
	const struct dd_series *x = sa ? sa : sb;
	char why[400];
	static const struct dd_series zero = { .name = "", .has_value = true };

	memset(r, 0, sizeof(*r));
	r->metric = dd_metric_names[x->metric];
	r->scope = dd_scope_names[x->scope];
	r->name = x->name;
	r->distribution = x->metric < DM_N_DIST;
	r->unit = r->distribution || x->metric == DM_BUSY ? "ns" : "count";
	if (!sa && absent_is_zero(&d->s[0], sb))
		sa = &zero;
	if (!sb && absent_is_zero(&d->s[1], sa))
		sb = &zero;
	if (sa)
		side_fill(&r->a, sa, z);
	if (sb)
		side_fill(&r->b, sb, z);
	if (!sa || !sb) {
		/* the other side has nothing either: no row */
		if (x->metric < DM_N_DIST ? !x->n : !x->has_value)
			return 0;
		lacks(&d->s[sa ? 1 : 0], x, sa ? "B" : "A", why, sizeof(why));
		r->verdict = NF_DIFF_NOT_COMPARABLE;
		return (r->why = own(d, why)) ? 1 : NF_ENOMEM;
	}
	if (!r->distribution) {
		if (!sa->has_value && !sb->has_value)
			return 0;
		if (!sa->has_value || !sb->has_value) {
			lacks_value(&d->s[sa->has_value ? 1 : 0], x, sa->has_value ? "B" : "A", why, sizeof(why));
			r->verdict = NF_DIFF_NOT_COMPARABLE;
			return (r->why = own(d, why)) ? 1 : NF_ENOMEM;
		}
		r->verdict = sa->value == sb->value ? NF_DIFF_NO_CHANGE : NF_DIFF_CHANGED;
		return 1;
	}
	if (!sa->n && !sb->n)
		return 0;
	if (!sa->n || !sb->n) {
		lacks_samples(&d->s[sa->n ? 1 : 0], x, sa->n ? "B" : "A", why, sizeof(why));
		r->verdict = NF_DIFF_NOT_COMPARABLE;
		return (r->why = own(d, why)) ? 1 : NF_ENOMEM;
	}
	verdict_dist(&d->opts, sa, sb, r);
	return 1;
}

static int compare_findings(struct nf_diff *d)
{
	const struct dd_names *fa = &d->s[0].findings, *fb = &d->s[1].findings;

	if (!d->s[0].hangs_ok || !d->s[1].hangs_ok)
		return 0;
	if ((fb->n && !(d->appeared = calloc(fb->n, sizeof(*d->appeared)))) ||
	    (fa->n && !(d->disappeared = calloc(fa->n, sizeof(*d->disappeared)))))
		return NF_ENOMEM;
	for (size_t i = 0; i < fb->n; i++)
		if (dd_names_find(fa, fb->keys[i]) < 0)
			d->appeared[d->n_appeared++] = fb->keys[i];
	for (size_t i = 0; i < fa->n; i++)
		if (dd_names_find(fb, fa->keys[i]) < 0)
			d->disappeared[d->n_disappeared++] = fa->keys[i];
	return 0;
}

static int cp_cmp(const void *x, const void *y)
{
	const struct dd_cp_row *a = x, *b = y;
	int64_t ma = a->a > a->b ? a->a : a->b, mb = b->a > b->b ? b->a : b->b;
	int c;

	if (ma != mb)
		return ma > mb ? -1 : 1;
	if ((c = strcmp(a->actor, b->actor)))
		return c;
	return strcmp(a->kind, b->kind);
}

static int compare_paths(struct nf_diff *d)
{
	const struct dd_session *sa = &d->s[0], *sb = &d->s[1];
	size_t cap = sa->n_cp + sb->n_cp;

	if (!cap)
		return 0;
	if (!(d->cp = calloc(cap, sizeof(*d->cp))))
		return NF_ENOMEM;
	for (size_t i = 0; i < sa->n_cp; i++) {
		struct dd_cp_row *r = &d->cp[d->n_cp++];

		r->actor = sa->cp[i].actor;
		r->kind = sa->cp[i].kind;
		r->a = sa->cp[i].ns;
		r->b = DD_NONE;
	}
	for (size_t j = 0; j < sb->n_cp; j++) {
		size_t i = 0;

		while (i < sa->n_cp && (d->cp[i].kind != sb->cp[j].kind || strcmp(d->cp[i].actor, sb->cp[j].actor)))
			i++;
		if (i < sa->n_cp) {
			d->cp[i].b = sb->cp[j].ns;
			continue;
		}
		struct dd_cp_row *r = &d->cp[d->n_cp++];

		r->actor = sb->cp[j].actor;
		r->kind = sb->cp[j].kind;
		r->a = DD_NONE;
		r->b = sb->cp[j].ns;
	}
	qsort(d->cp, d->n_cp, sizeof(*d->cp), cp_cmp);
	return 0;
}

int dd_compare(struct nf_diff *d, struct nf_error *err)
{
	const struct dd_series **pa = NULL, **pb = NULL;
	size_t na = d->s[0].n_series, nb = d->s[1].n_series, i = 0, j = 0;
	double z = dd_z_two_sided(d->opts.alpha);
	int rc = NF_ENOMEM;

	if (!(pa = calloc(na + 1, sizeof(*pa))) || !(pb = calloc(nb + 1, sizeof(*pb))) ||
	    !(d->rows = calloc(na + nb + 1, sizeof(*d->rows))))
		goto out;
	for (size_t k = 0; k < na; k++)
		pa[k] = &d->s[0].series[k];
	for (size_t k = 0; k < nb; k++)
		pb[k] = &d->s[1].series[k];
	qsort(pa, na, sizeof(*pa), series_cmp);
	qsort(pb, nb, sizeof(*pb), series_cmp);
	while (i < na || j < nb) {
		int c = i >= na ? 1 : j >= nb ? -1 : series_order(pa[i], pb[j]);
		const struct dd_series *x = c <= 0 ? pa[i] : NULL, *y = c >= 0 ? pb[j] : NULL;
		int kept = make_row(d, x, y, z, &d->rows[d->n_rows]);

		if (kept < 0)
			goto out;
		d->n_rows += (size_t)kept;
		i += c <= 0;
		j += c >= 0;
	}
	if (compare_findings(d) || compare_paths(d))
		goto out;
	rc = 0;
out:
	free(pa);
	free(pb);
	return rc ? nf_error_set(err, rc, "out of memory comparing the sessions") : 0;
}
