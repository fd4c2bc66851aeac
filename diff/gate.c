/*
 * The budget language of `nftrace diff --fail-on` (include/contract/diff.h
 * states it; README has examples): a small recursive-descent parser that
 * names the column of what it cannot read, and the check of each clause
 * against the compared series.
 */
#include "diff_int.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/capbuf.h"

enum { ST_P50, ST_P90, ST_P99, ST_MAX, ST_COUNT };
static const char *const stat_names[] = { "p50", "p90", "p99", "max", "count" };
enum { CMP_GT, CMP_GE, CMP_LT, CMP_LE };
enum { C_STAT, C_VALUE, C_REGRESSION };

struct clause {
	int type, stat, metric;  /* metric -1 for regression */
	int scope;               /* -1: every series */
	char *name;              /* scope name (scope other than all) */
	int cmp;
	double threshold;        /* ns, a count, or percent */
	bool relative;
	struct dd_gate_outcome out;
};

struct nf_diff_gate {
	struct clause *c;
	size_t n, cap;
	struct dd_gate_outcome *outs;
};

/* The scopes each metric has (bit per enum dd_scope). */
static unsigned metric_scopes(int metric)
{
	switch (metric) {
	case DM_STALL: case DM_LATENCY: case DM_Q2E: case DM_BUSY: case DM_LOST:
		return 1u << DS_ALL | 1u << DS_QUEUE;
	case DM_CPU_WAIT:
		return 1u << DS_ALL | 1u << DS_THREAD;
	case DM_JOB:
		return 1u << DS_ALL | 1u << DS_RING;
	case DM_FRAME:
		return 1u << DS_ALL | 1u << DS_PROCESS;
	case DM_ANOMALIES: case DM_FINDINGS:
		return 1u << DS_ALL | 1u << DS_KIND;
	default:
		return ~0u;
	}
}

struct parser {
	const char *text, *p;
	struct nf_error *err;
};

static int perr(struct parser *ps, const char *at, const char *fmt, const char *arg)
{
	char what[200];

	snprintf(what, sizeof(what), fmt, arg);
	return nf_error_set(ps->err, NF_EINVAL, "column %d: %s", (int)(at - ps->text) + 1, what);
}

static void skip(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t')
		ps->p++;
}

/* An identifier at p: its length (0: none). */
static size_t ident(const char *p)
{
	size_t n = 0;

	if (!isalpha((unsigned char)*p) && *p != '_')
		return 0;
	while (isalnum((unsigned char)p[n]) || p[n] == '_')
		n++;
	return n;
}

/* A copy of the word at p: a token of the shape shown, for messages. */
static const char *word(const char *p, char *buf, size_t len)
{
	size_t n = 0;

	if (!*p)
		return "the end";
	while (p[n] && !isspace((unsigned char)p[n]) && !strchr("(),", p[n]) && n < 40)
		n++;
	if (!n)
		n = 1;
	snprintf(buf, len, "'%.*s'", (int)n, p);
	/* no control character from the command line into the message */
	for (char *c = buf; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return buf;
}

static int expect(struct parser *ps, char ch)
{
	char w[64], what[16];

	skip(ps);
	if (*ps->p == ch) {
		ps->p++;
		return 0;
	}
	snprintf(what, sizeof(what), "'%c'", ch);
	{
		char msg[120];

		snprintf(msg, sizeof(msg), "expected %s, found %%s", what);
		return perr(ps, ps->p, msg, word(ps->p, w, sizeof(w)));
	}
}

/* SCOPE: 'all' | KEY '=' NAME */
static int parse_scope(struct parser *ps, struct clause *c)
{
	const char *at;
	size_t n;
	int k;
	char w[64];

	skip(ps);
	at = ps->p;
	n = ident(at);
	if (n == 3 && !memcmp(at, "all", 3)) {
		ps->p += 3;
		c->scope = DS_ALL;
		return 0;
	}
	if (!n || (k = dd_scope_find(at, n)) < 0 || k == DS_ALL)
		return perr(ps, at, "expected a scope (all, queue=NAME, thread=NAME, ring=NAME, process=NAME, kind=NAME), found %s",
			    word(at, w, sizeof(w)));
	if (c->metric >= 0 && !(metric_scopes(c->metric) & 1u << k)) {
		char msg[160];

		snprintf(msg, sizeof(msg), "%s has no %%s scope", dd_metric_names[c->metric]);
		return perr(ps, at, msg, dd_scope_names[k]);
	}
	ps->p += n;
	if (expect(ps, '='))
		return NF_EINVAL;
	skip(ps);
	at = ps->p;
	if (*at == '\'' || *at == '"') {
		const char *end = strchr(at + 1, *at);

		if (!end)
			return perr(ps, at, "%s", "a quoted name is not closed");
		n = (size_t)(end - at - 1);
		ps->p = end + 1;
		at++;
	} else {
		n = 0;
		while (at[n] && (isalnum((unsigned char)at[n]) || strchr("_.:#/-", at[n])))
			n++;
		if (!n)
			return perr(ps, at, "expected a name (a word, or quoted), found %s", word(at, w, sizeof(w)));
		ps->p = at + n;
	}
	if (!(c->name = strndup(at, n)))
		return nf_error_set(ps->err, NF_ENOMEM, "out of memory");
	c->scope = k;
	return 0;
}

/* CMP THRESHOLD */
static int parse_budget(struct parser *ps, struct clause *c)
{
	const char *at;
	char *end, w[64];
	bool count = c->metric != DM_BUSY && (c->type == C_VALUE || c->stat == ST_COUNT);
	double scale = 1;

	skip(ps);
	at = ps->p;
	if (*at == '>' || *at == '<') {
		c->cmp = *at == '>' ? (at[1] == '=' ? CMP_GE : CMP_GT) : (at[1] == '=' ? CMP_LE : CMP_LT);
		ps->p += at[1] == '=' ? 2 : 1;
	} else {
		return perr(ps, at, "expected a comparison (>, >=, <, <=), found %s", word(at, w, sizeof(w)));
	}
	skip(ps);
	at = ps->p;
	{ /* a plain decimal: [+|-]DIGITS[.DIGITS] */
		const char *q = at + (*at == '+' || *at == '-');
		size_t digits = 0;
		char num[64];

		while (isdigit((unsigned char)*q))
			q++, digits++;
		if (*q == '.' && isdigit((unsigned char)q[1]))
			for (q++; isdigit((unsigned char)*q); q++)
				digits++;
		if (!digits || (size_t)(q - at) >= sizeof(num))
			return perr(ps, at, "expected a threshold (a number, then %%, a time unit or nothing), found %s",
				    word(at, w, sizeof(w)));
		memcpy(num, at, (size_t)(q - at));
		num[q - at] = '\0';
		errno = 0;
		c->threshold = strtod(num, &end);
		if (errno || !isfinite(c->threshold))
			return perr(ps, at, "bad number %s", word(at, w, sizeof(w)));
		end = (char *)(uintptr_t)q;
	}
	ps->p = end;
	if (*ps->p == '%') {
		c->relative = true;
		ps->p++;
	} else if (isalpha((unsigned char)*ps->p)) {
		size_t n = ident(ps->p);

		if (n == 2 && !memcmp(ps->p, "ns", 2))
			scale = 1;
		else if (n == 2 && !memcmp(ps->p, "us", 2))
			scale = 1e3;
		else if (n == 2 && !memcmp(ps->p, "ms", 2))
			scale = 1e6;
		else if (n == 1 && *ps->p == 's')
			scale = 1e9;
		else
			return perr(ps, ps->p, "unknown unit %s (%%, ns, us, ms, s)", word(ps->p, w, sizeof(w)));
		if (count)
			return perr(ps, ps->p, "%s counts: a time unit makes no sense here", word(ps->p, w, sizeof(w)));
		ps->p += n;
	}
	c->threshold *= scale;
	return 0;
}

static int parse_clause(struct parser *ps, struct clause *c)
{
	const char *at;
	size_t n;
	int k;
	char w[64];

	skip(ps);
	at = ps->p;
	n = ident(at);
	c->scope = -1;
	c->metric = -1;
	if (n == 10 && !memcmp(at, "regression", 10)) {
		c->type = C_REGRESSION;
		ps->p += n;
		skip(ps);
		if (*ps->p == '(') {
			ps->p++;
			if (parse_scope(ps, c) || expect(ps, ')'))
				return NF_EINVAL;
		}
		return 0;
	}
	for (k = 0; k < 5; k++)
		if (n == strlen(stat_names[k]) && !memcmp(at, stat_names[k], n))
			break;
	if (k < 5) {
		c->type = C_STAT;
		c->stat = k;
		ps->p += n;
		if (expect(ps, '('))
			return NF_EINVAL;
		skip(ps);
		at = ps->p;
		n = ident(at);
		if (!n || (c->metric = dd_metric_find(at, n)) < 0 || c->metric >= DM_N_DIST)
			return perr(ps, at,
				    "expected a measured metric (stall, latency, queued_to_end, cpu_wait, job, frame), found %s",
				    word(at, w, sizeof(w)));
		ps->p += n;
		skip(ps);
		if (*ps->p == ',') {
			ps->p++;
			if (parse_scope(ps, c))
				return NF_EINVAL;
		}
		if (expect(ps, ')'))
			return NF_EINVAL;
		return parse_budget(ps, c);
	}
	if (n && (k = dd_metric_find(at, n)) >= 0) {
		if (k < DM_N_DIST) {
			char msg[200];

			snprintf(msg, sizeof(msg), "'%%s' is measured per item: write p50(%s), p90, p99, max or count",
				 dd_metric_names[k]);
			return perr(ps, at, msg, dd_metric_names[k]);
		}
		c->type = C_VALUE;
		c->metric = k;
		ps->p += n;
		skip(ps);
		if (*ps->p == '(') {
			ps->p++;
			if (parse_scope(ps, c) || expect(ps, ')'))
				return NF_EINVAL;
		}
		return parse_budget(ps, c);
	}
	return perr(ps, at,
		    "expected p50(...), p90, p99, max, count, busy, lost, anomalies, findings or regression, found %s",
		    word(at, w, sizeof(w)));
}

static void clause_free(struct clause *c)
{
	free(c->name);
	free((char *)c->out.text);
}

int nf_diff_gate_parse(const char *text, struct nf_diff_gate **gate, struct nf_error *err)
{
	struct parser ps = { .text = text, .p = text, .err = err };
	struct nf_diff_gate *g = *gate;
	bool made = false;

	if (!g) {
		if (!(g = calloc(1, sizeof(*g))))
			return nf_error_set(err, NF_ENOMEM, "out of memory");
		made = true;
	}
	size_t first = g->n;

	for (;;) {
		const char *start;
		struct clause *c;

		skip(&ps);
		start = ps.p;
		if (nf_array_reserve((void **)&g->c, &g->cap, g->n + 1, sizeof(*g->c), 4, 0))
			goto out_nomem;
		c = &g->c[g->n];
		memset(c, 0, sizeof(*c));
		if (parse_clause(&ps, c)) {
			clause_free(c);
			goto out_fail;
		}
		const char *stop = ps.p;

		while (stop > start && isspace((unsigned char)stop[-1]))
			stop--;
		if (!(c->out.text = strndup(start, (size_t)(stop - start)))) {
			clause_free(c);
			goto out_nomem;
		}
		g->n++;
		skip(&ps);
		if (*ps.p == ',') {
			ps.p++;
			continue;
		}
		if (!*ps.p)
			break;
		char w[64];

		perr(&ps, ps.p, "expected ',' or the end after a clause, found %s", word(ps.p, w, sizeof(w)));
		goto out_fail;
	}
	*gate = g;
	return 0;
out_nomem:
	nf_error_set(err, NF_ENOMEM, "out of memory");
out_fail:
	while (g->n > first)
		clause_free(&g->c[--g->n]);
	if (made)
		nf_diff_gate_destroy(g);
	return err->code ? err->code : NF_EINVAL;
}

void nf_diff_gate_destroy(struct nf_diff_gate *gate)
{
	if (!gate)
		return;
	for (size_t i = 0; i < gate->n; i++)
		clause_free(&gate->c[i]);
	free(gate->c);
	free(gate->outs);
	free(gate);
}

/* ---- checking ------------------------------------------------------------------------ */

static bool cmp_true(int cmp, double x, double t)
{
	return cmp == CMP_GT ? x > t : cmp == CMP_GE ? x >= t : cmp == CMP_LT ? x < t : x <= t;
}

static void row_label(const struct nf_diff_row *r, char *buf, size_t len)
{
	if (!strcmp(r->scope, "all"))
		snprintf(buf, len, "%s (all)", r->metric);
	else
		snprintf(buf, len, "%s %s %s", r->metric, r->scope, r->name);
}

/* Whether the change of a statistic in row r is significant: the percentile's
 * intervals (A's and B's) do not overlap, or the U test finds B shifted the way
 * the statistic moved (the test of the max); a count needs no test. */
static bool stat_significant(const struct nf_diff *d, const struct clause *c, const struct nf_diff_row *r,
			     double change)
{
	if (c->stat == ST_COUNT)
		return true;
	if (c->stat <= ST_P99 && r->sig[c->stat])
		return true;
	return r->tested && r->mw_p < d->opts.alpha && ((change > 0 && r->mw_z > 0) || (change < 0 && r->mw_z < 0));
}

/* The change of the clause's quantity in row r: *change (percent when relative),
 * the values, whether that change is significant (values: no test). */
static void row_change(const struct nf_diff *d, const struct clause *c, const struct nf_diff_row *r, double *change,
		       int64_t *va, int64_t *vb, bool *sig)
{
	if (c->type == C_STAT) {
		*va = c->stat == ST_COUNT ? r->a.n : r->a.stat[c->stat];
		*vb = c->stat == ST_COUNT ? r->b.n : r->b.stat[c->stat];
	} else {
		*va = r->a.value;
		*vb = r->b.value;
	}
	if (c->relative)
		*change = *va == 0 ? (*vb == 0 ? 0 : *vb > 0 ? INFINITY : -INFINITY)
				   : ((double)*vb - (double)*va) / fabs((double)*va) * 100.0;
	else
		*change = (double)*vb - (double)*va;
	*sig = c->type != C_STAT || stat_significant(d, c, r, *change);
}

static void fmt_change(const struct clause *c, double change, char *buf, size_t len)
{
	if (c->relative)
	{
		if (isinf(change))
			snprintf(buf, len, "%s", change > 0 ? "+inf%" : "-inf%");
		else
			snprintf(buf, len, "%+.1f%%", change);
	}
	else if (c->type == C_STAT ? c->stat != ST_COUNT : c->metric == DM_BUSY)
		snprintf(buf, len, "%+.0fns", change);
	else
		snprintf(buf, len, "%+.0f", change);
}

static void check_clause(struct clause *c, const struct nf_diff *d)
{
	const struct nf_diff_row *rows;
	size_t n = nf_diff_rows(d, &rows), seen = 0, fails = 0, cannot = 0, comparable = 0;
	char first_fail[400] = "", first_cannot[400] = "", worst[300] = "", label[200], ch[48];
	double worst_change = -INFINITY;

	c->out.failed = false;
	for (size_t i = 0; i < n; i++) {
		const struct nf_diff_row *r = &rows[i];
		int rs = dd_scope_find(r->scope, strlen(r->scope));

		if (c->metric >= 0 && strcmp(r->metric, dd_metric_names[c->metric]))
			continue;
		if (c->scope >= 0 && (rs != c->scope || (c->name && strcmp(r->name, c->name))))
			continue;
		seen++;
		row_label(r, label, sizeof(label));
		if (r->verdict == NF_DIFF_NOT_COMPARABLE) {
			if (!cannot++)
				snprintf(first_cannot, sizeof(first_cannot), "%s cannot be compared: %s", label, r->why);
			continue;
		}
		comparable++;
		if (c->type == C_REGRESSION) {
			if (r->verdict == NF_DIFF_REGRESSION && !fails++)
				snprintf(first_fail, sizeof(first_fail), "%s is a regression", label);
			continue;
		}
		double change;
		int64_t va, vb;
		bool sig;

		row_change(d, c, r, &change, &va, &vb, &sig);
		fmt_change(c, change, ch, sizeof(ch));
		if (cmp_true(c->cmp, change, c->threshold)) {
			if (sig) {
				char xa[32], xb[32];

				if (c->type == C_STAT ? c->stat != ST_COUNT : c->metric == DM_BUSY) {
					dd_fmt_ns(xa, sizeof(xa), va);
					dd_fmt_ns(xb, sizeof(xb), vb);
				} else {
					snprintf(xa, sizeof(xa), "%" PRId64, va);
					snprintf(xb, sizeof(xb), "%" PRId64, vb);
				}
				if (!fails++)
					snprintf(first_fail, sizeof(first_fail), "%s: %s (%s -> %s)%s", label, ch, xa, xb,
						 c->type != C_STAT || c->stat == ST_COUNT ? ""
						 : c->stat <= ST_P99 && r->sig[c->stat] ? ", significant (intervals apart)"
											: ", significant (U test)");
				continue;
			}
			snprintf(worst, sizeof(worst), "%s: %s but not significant", label, ch);
			worst_change = INFINITY;
			continue;
		}
		double score = c->cmp == CMP_GT || c->cmp == CMP_GE ? change : -change;

		if (score > worst_change) {
			worst_change = score;
			snprintf(worst, sizeof(worst), "closest: %s: %s", label, ch);
		}
	}
	if (fails) {
		c->out.failed = true;
		if (fails > 1)
			snprintf(c->out.detail, sizeof(c->out.detail), "%s; and %zu more", first_fail, fails - 1);
		else
			snprintf(c->out.detail, sizeof(c->out.detail), "%s", first_fail);
	} else if (!comparable || (cannot && c->scope > DS_ALL)) {
		/* a budget that cannot be checked is not met: a series it names that one side
		 * lacks, or a metric no series of which can be compared */
		c->out.failed = true;
		snprintf(c->out.detail, sizeof(c->out.detail), "cannot check: %s",
			 cannot ? first_cannot : seen ? "no series of this metric can be compared"
						      : "neither session has this metric");
	} else if (c->type == C_REGRESSION) {
		snprintf(c->out.detail, sizeof(c->out.detail), "no regression in %zu series", seen);
	} else {
		snprintf(c->out.detail, sizeof(c->out.detail), "within budget (%zu series; %s)", seen,
			 worst[0] ? worst : "no change");
	}
}

/* Whether some row (of any metric) has the clause's scope and name. */
static bool scope_named(const struct clause *c, const struct nf_diff *d)
{
	const struct nf_diff_row *rows;
	size_t n = nf_diff_rows(d, &rows);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(rows[i].scope, dd_scope_names[c->scope]) && !strcmp(rows[i].name, c->name))
			return true;
	return false;
}

int nf_diff_gate_check(struct nf_diff_gate *gate, const struct nf_diff *d, bool *failed, struct nf_error *err)
{
	*failed = false;
	free(gate->outs);
	if (!(gate->outs = calloc(gate->n + 1, sizeof(*gate->outs))))
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	for (size_t i = 0; i < gate->n; i++) {
		struct clause *c = &gate->c[i];

		if (c->scope > DS_ALL && !scope_named(c, d))
			return nf_error_set(err, NF_ENOENT, "--fail-on '%s': no %s named '%s' in either session", c->out.text,
					    dd_scope_names[c->scope], c->name);
		check_clause(c, d);
		gate->outs[i] = c->out;
		*failed |= c->out.failed;
	}
	return 0;
}

size_t dd_gate_outcomes(const struct nf_diff_gate *g, const struct dd_gate_outcome **out)
{
	*out = g ? g->outs : NULL;
	return g && g->outs ? g->n : 0;
}
