/*
 * Writing a diff: text for a terminal or a CI log, one JSON object, or CSV.
 * Every string that comes from a session (queue, thread and ring names, the
 * source, finding keys) is untrusted and written by core/escape.c's helpers:
 * what is not printable UTF-8 becomes '?' on a terminal and in CSV (whose
 * names are also guarded against spreadsheet formulas), JSON escapes it
 * (invalid UTF-8 as U+FFFD).
 */
#include "diff_int.h"
#include "contract/escape.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const stat_names[NF_DIFF_STATS] = { "p50", "p90", "p99", "max" };

static const char *verdict_name(enum nf_diff_verdict v)
{
	switch (v) {
	case NF_DIFF_NO_CHANGE: return "no change";
	case NF_DIFF_NOT_SIGNIFICANT: return "no significant change";
	case NF_DIFF_REGRESSION: return "regression";
	case NF_DIFF_IMPROVEMENT: return "improvement";
	case NF_DIFF_CHANGED: return "changed";
	case NF_DIFF_NOT_COMPARABLE: return "not comparable";
	}
	return "?";
}

/* ---- escaping (core/escape.c's helpers) ------------------------------------------ */

/* Text for a terminal: what is not printable UTF-8 (C0, DEL, C1, noncharacters,
 * bytes that are not UTF-8) as '?'. */
static void put_text(FILE *f, const char *s)
{
	nf_esc_text_file(f, s, 0);
}

static void put_json_str(FILE *f, const char *s)
{
	nf_esc_json_file(f, s, 0);
}

/* What nf_esc_text writes into a CSV field: its quotes doubled. */
static int csv_write(void *ctx, const char *p, size_t n)
{
	FILE *f = ctx;

	for (const char *q; (q = memchr(p, '"', n)); n -= (size_t)(q + 1 - p), p = q + 1)
		if (fwrite(p, 1, (size_t)(q + 1 - p), f) != (size_t)(q + 1 - p) || fputc('"', f) == EOF)
			return -1;
	return fwrite(p, 1, n, f) == n ? 0 : -1;
}

/* A CSV field: controls and bytes that are not UTF-8 as '?', quoted when it holds
 * , " CR LF or an edge space;
 * guard: a leading = + - @ gets a ' first (no formula in a spreadsheet). */
static void put_csv(FILE *f, const char *s, bool guard)
{
	const char *p = s ? s : "";
	size_t len = strlen(p);
	bool quote = strpbrk(p, ",\"\r\n") || (len && (p[0] == ' ' || p[len - 1] == ' '));

	if (quote)
		fputc('"', f);
	if (guard && strchr("=+-@", p[0]) && p[0])
		fputc('\'', f);
	nf_esc_text(p, len, 0, csv_write, f);
	if (quote)
		fputc('"', f);
}

/* ---- numbers ------------------------------------------------------------------- */

static void fmt_val(char *buf, size_t len, const struct nf_diff_row *r, int64_t v)
{
	if (!strcmp(r->unit, "ns"))
		dd_fmt_ns(buf, len, v);
	else
		snprintf(buf, len, "%" PRId64, v);
}

/* "+20.0%" (or the difference when a is 0), '*' when significant. */
static void fmt_change(char *buf, size_t len, const struct nf_diff_row *r, int64_t a, int64_t b, bool sig)
{
	char d[32];

	if (a == b) {
		snprintf(buf, len, "=");
		return;
	}
	double rel = a ? ((double)b - (double)a) / fabs((double)a) * 100 : INFINITY;

	if (isfinite(rel) && fabs(rel) < 10000) {
		snprintf(buf, len, "%+.1f%%%s", rel, sig ? "*" : "");
		return;
	}
	fmt_val(d, sizeof(d), r, b - a);
	snprintf(buf, len, "%s%s%s", b > a ? "+" : "", d, sig ? "*" : "");
}

static void fmt_p(char *buf, size_t len, double p)
{
	if (p < 1e-300)
		snprintf(buf, len, "<1e-300");
	else
		snprintf(buf, len, "%.2g", p);
}

/* ---- text ------------------------------------------------------------------------ */

static void text_scope(FILE *f, const struct nf_diff_row *r)
{
	if (!strcmp(r->scope, "all")) {
		fputs("\nwhole session\n", f);
		return;
	}
	fprintf(f, "\n%s ", r->scope);
	put_text(f, r->name);
	int ma = r->a.present ? r->a.members : 0, mb = r->b.present ? r->b.members : 0;

	if (!strcmp(r->scope, "queue") && (ma > 1 || mb > 1))
		fprintf(f, " (%d queue%s in A, %d in B)", ma, ma == 1 ? "" : "s", mb);
	else if (!strcmp(r->scope, "thread") && (ma > 1 || mb > 1))
		fprintf(f, " (%d thread%s in A, %d in B)", ma, ma == 1 ? "" : "s", mb);
	fputc('\n', f);
}

static void text_dist(FILE *f, const struct nf_diff_row *r, bool *header)
{
	char v[NF_DIFF_STATS][32], w[NF_DIFF_STATS][32], c[NF_DIFF_STATS][40], p[24];

	if (r->verdict == NF_DIFF_NO_CHANGE) {
		for (int k = 0; k < NF_DIFF_STATS; k++)
			fmt_val(v[k], sizeof(v[k]), r, r->a.stat[k]);
		fprintf(f, "  %-14s %8" PRId64 " samples  p50 %s  p90 %s  p99 %s  max %s   no change\n", r->metric, r->a.n,
			v[0], v[1], v[2], v[3]);
		return;
	}
	if (!*header) /* the columns, once per scope */
		fprintf(f, "  %-14s   %8s %11s %11s %11s %11s\n", "", "n", "p50", "p90", "p99", "max");
	*header = true;
	for (int k = 0; k < NF_DIFF_STATS; k++) {
		fmt_val(v[k], sizeof(v[k]), r, r->a.stat[k]);
		fmt_val(w[k], sizeof(w[k]), r, r->b.stat[k]);
		fmt_change(c[k], sizeof(c[k]), r, r->a.stat[k], r->b.stat[k], r->sig[k]);
	}
	fprintf(f, "  %-14s A %8" PRId64 " %11s %11s %11s %11s\n", r->metric, r->a.n, v[0], v[1], v[2], v[3]);
	fprintf(f, "  %-14s B %8" PRId64 " %11s %11s %11s %11s\n", "", r->b.n, w[0], w[1], w[2], w[3]);
	fmt_p(p, sizeof(p), r->mw_p);
	fprintf(f, "  %-14s   %8s %11s %11s %11s %11s   %s (U test p %s, z %.2f, P(B>A) %.2f)\n", "", "", c[0], c[1],
		c[2], c[3], verdict_name(r->verdict), p, r->mw_z, r->p_b_greater);
}

static void text_row(FILE *f, const struct nf_diff_row *r, bool *header)
{
	char a[40], b[40], c[40];

	if (r->verdict == NF_DIFF_NOT_COMPARABLE) {
		/* the side that has it */
		bool in_a = r->distribution ? r->a.present && r->a.n > 0 : r->a.present;
		const struct nf_diff_side *s = in_a ? &r->a : &r->b;

		fprintf(f, "  %-14s not comparable: ", r->metric);
		put_text(f, r->why);
		if (s->present && r->distribution)
			fprintf(f, " (%s: %" PRId64 " samples)", in_a ? "A" : "B", s->n);
		else if (s->present)
			fmt_val(a, sizeof(a), r, s->value), fprintf(f, " (%s: %s)", in_a ? "A" : "B", a);
		fputc('\n', f);
		return;
	}
	if (r->distribution) {
		text_dist(f, r, header);
		return;
	}
	fmt_val(a, sizeof(a), r, r->a.value);
	fmt_val(b, sizeof(b), r, r->b.value);
	fmt_change(c, sizeof(c), r, r->a.value, r->b.value, false);
	if (r->verdict == NF_DIFF_NO_CHANGE)
		fprintf(f, "  %-14s %s", r->metric, a);
	else
		fprintf(f, "  %-14s A %s  B %s  %s", r->metric, a, b, c);
	if (!strcmp(r->metric, "busy") && r->a.aux > 0 && r->b.aux > 0)
		fprintf(f, " (%.1f%% of the span in A, %.1f%% in B)", 100.0 * (double)r->a.value / (double)r->a.aux,
			100.0 * (double)r->b.value / (double)r->b.aux);
	fprintf(f, "   %s%s\n", verdict_name(r->verdict),
		r->verdict == NF_DIFF_CHANGED ? " (one value per session: no test)" : "");
}

static void text_session(FILE *f, const char *which, const struct nf_diff_session *s)
{
	char dur[32] = "?";

	if (s->duration_ns >= 0)
		dd_fmt_ns(dur, sizeof(dur), s->duration_ns);
	fprintf(f, "  %s  ", which);
	put_text(f, s->dir);
	fputs(": ", f);
	if (s->source[0]) {
		put_text(f, s->source);
		fputs(", ", f);
	}
	if (s->mode[0]) {
		fputs("mode ", f);
		put_text(f, s->mode);
		fputs(", ", f);
	}
	if (s->seed[0] && (!strcmp(s->mode, "deterministic") || !strcmp(s->mode, "threaded"))) {
		fputs("seed ", f);
		put_text(f, s->seed);
		fputs(", ", f);
	}
	fprintf(f, "%" PRId64 " operations, %s\n", s->ops, dur);
}

static void text_paths(FILE *f, const struct nf_diff *d)
{
	const struct dd_session *a = &d->s[0], *b = &d->s[1];
	char x[32], y[32], c[40];

	fputs("\ncritical path of the last operation\n", f);
	for (int k = 0; k < 2; k++) {
		const struct dd_session *s = k ? b : a;

		fprintf(f, "  %s  ", k ? "B" : "A");
		if (!s->cp_ok) {
			fputs("none: ", f);
			put_text(f, s->cp_why);
			fputc('\n', f);
			continue;
		}
		dd_fmt_ns(x, sizeof(x), s->cp_latency);
		put_text(f, s->cp_what);
		fprintf(f, ": latency %s\n", x);
	}
	if (!d->n_cp)
		return;
	fprintf(f, "  %-36s %-11s %11s %11s  %s\n", "on", "doing", "A", "B", "change");
	for (size_t i = 0; i < d->n_cp; i++) {
		const struct dd_cp_row *r = &d->cp[i];
		static const struct nf_diff_row ns_row = { .unit = "ns" };
		char actor[37];

		snprintf(actor, sizeof(actor), "%s", r->actor);
		if (r->a == DD_NONE)
			snprintf(x, sizeof(x), "-");
		else
			dd_fmt_ns(x, sizeof(x), r->a);
		if (r->b == DD_NONE)
			snprintf(y, sizeof(y), "-");
		else
			dd_fmt_ns(y, sizeof(y), r->b);
		if (r->a == DD_NONE || r->b == DD_NONE)
			snprintf(c, sizeof(c), "%s", r->a == DD_NONE ? "only in B" : "only in A");
		else
			fmt_change(c, sizeof(c), &ns_row, r->a, r->b, false);
		fputs("  ", f);
		put_text(f, actor);
		fprintf(f, "%*s %-11s %11s %11s  %s\n", (int)(36 - strlen(actor)), "", r->kind, x, y, c);
	}
}

static void text_ops(FILE *f, const struct nf_diff *d, size_t limit)
{
	char sa[32], sb[32], la[32], lb[32], ds[40];
	static const struct nf_diff_row ns_row = { .unit = "ns" };

	fprintf(f, "\naligned waits: %" PRId64 " matched by (queue name, fence, value, occurrence), %" PRId64
		   " only in A, %" PRId64 " only in B; %zu changed (stall or latency moved by more than %" PRId64
		   " ns)\n",
		d->matched, d->only_a, d->only_b, d->n_ops, d->opts.ops_min_ns);
	if (!d->n_ops)
		return;
	fprintf(f, "  %-20s %-12s %10s %4s %23s %10s %23s %15s\n", "queue", "fence", "value", "#", "stall A -> B", "change",
		"latency A -> B", "op A / op B");
	for (size_t i = 0; i < d->n_ops && (!limit || i < limit); i++) {
		const struct nf_diff_op *o = &d->ops[i];
		char q[21], stall[72], lat[72], ids[48];

		snprintf(sa, sizeof(sa), "?");
		snprintf(sb, sizeof(sb), "?");
		snprintf(la, sizeof(la), "?");
		snprintf(lb, sizeof(lb), "?");
		if (o->stall_a != DD_NONE)
			dd_fmt_ns(sa, sizeof(sa), o->stall_a);
		if (o->stall_b != DD_NONE)
			dd_fmt_ns(sb, sizeof(sb), o->stall_b);
		if (o->latency_a != DD_NONE)
			dd_fmt_ns(la, sizeof(la), o->latency_a);
		if (o->latency_b != DD_NONE)
			dd_fmt_ns(lb, sizeof(lb), o->latency_b);
		if (o->stall_a != DD_NONE && o->stall_b != DD_NONE)
			fmt_change(ds, sizeof(ds), &ns_row, o->stall_a, o->stall_b, false);
		else
			snprintf(ds, sizeof(ds), "?");
		snprintf(stall, sizeof(stall), "%s -> %s", sa, sb);
		snprintf(lat, sizeof(lat), "%s -> %s", la, lb);
		snprintf(ids, sizeof(ids), "%" PRId64 " / %" PRId64, o->id_a, o->id_b);
		snprintf(q, sizeof(q), "%s", o->queue);
		fputs("  ", f);
		put_text(f, q);
		fprintf(f, "%*s 0x%-10" PRIx64 " %10" PRId64 " %4" PRId64 " %23s %10s %23s %15s\n", (int)(20 - strlen(q)), "",
			(uint64_t)o->fence, o->value, o->occurrence, stall, ds, lat, ids);
	}
	if (limit && d->n_ops > limit)
		fprintf(f, "  ... %zu more (--ops-limit 0 lists them all)\n", d->n_ops - limit);
}

static void write_text(const struct nf_diff *d, const struct nf_diff_gate *gate, size_t ops_limit, FILE *f)
{
	size_t count[NF_DIFF_NOT_COMPARABLE + 1] = { 0 };
	const struct dd_gate_outcome *outs;
	size_t n_outs = dd_gate_outcomes(gate, &outs);
	char me[32], mn[32];

	for (size_t i = 0; i < d->n_rows; i++)
		count[d->rows[i].verdict]++;
	fputs("nftrace diff\n", f);
	text_session(f, "A", &d->info[0]);
	text_session(f, "B", &d->info[1]);
	dd_fmt_ns(mn, sizeof(mn), d->opts.min_effect_ns);
	snprintf(me, sizeof(me), "%g%%", d->opts.min_effect * 100);
	fprintf(f,
		"test: Mann-Whitney U (two-sided, normal approximation, tie- and continuity-corrected) and each\n"
		"  percentile's %g%% distribution-free interval (order statistics; '*': A's and B's do not overlap);\n"
		"  regression or improvement: significant at alpha %g and beyond %s and %s; n: samples\n",
		100 * (1 - d->opts.alpha), d->opts.alpha, me, mn);
	fprintf(f,
		"verdict: %zu regression%s, %zu improvement%s, %zu no significant change, %zu no change, %zu changed "
		"(values, no test), %zu not comparable\n",
		count[NF_DIFF_REGRESSION], count[NF_DIFF_REGRESSION] == 1 ? "" : "s", count[NF_DIFF_IMPROVEMENT],
		count[NF_DIFF_IMPROVEMENT] == 1 ? "" : "s", count[NF_DIFF_NOT_SIGNIFICANT], count[NF_DIFF_NO_CHANGE],
		count[NF_DIFF_CHANGED], count[NF_DIFF_NOT_COMPARABLE]);
	for (size_t i = 0, j; i < d->n_rows; i = j) {
		const struct nf_diff_row *r = &d->rows[i];
		bool only = true, in_a = r->a.present, shown = false, header = false;

		/* the rows of one scope: [i, j) */
		for (j = i; j < d->n_rows && !strcmp(d->rows[j].scope, r->scope) && !strcmp(d->rows[j].name, r->name); j++)
			only &= d->rows[j].verdict == NF_DIFF_NOT_COMPARABLE && d->rows[j].a.present != d->rows[j].b.present &&
				d->rows[j].a.present == in_a;
		if (only && strcmp(r->scope, "all")) { /* a scope one session lacks: one line */
			text_scope(f, r);
			fprintf(f, "  only in %s:", in_a ? "A" : "B");
			for (size_t k = i; k < j; k++) {
				const struct nf_diff_row *x = &d->rows[k];
				const struct nf_diff_side *sd = in_a ? &x->a : &x->b;
				char v[32];

				if (x->distribution)
					snprintf(v, sizeof(v), "%" PRId64 " samples", sd->n);
				else
					fmt_val(v, sizeof(v), x, sd->value);
				fprintf(f, "%s %s %s", k > i ? "," : "", x->metric, v);
			}
			fputc('\n', f);
			continue;
		}
		for (size_t k = i; k < j; k++) {
			const struct nf_diff_row *x = &d->rows[k];

			/* kinds of anomaly or finding neither session has: nothing to say */
			if (!strcmp(x->scope, "kind") && !x->distribution && x->a.present && x->b.present && !x->a.value &&
			    !x->b.value)
				continue;
			if (!shown)
				text_scope(f, x);
			shown = true;
			text_row(f, x, &header);
		}
	}
	if (d->s[0].hangs_ok && d->s[1].hangs_ok) {
		fprintf(f, "\nhang findings: %zu appeared in B, %zu disappeared\n", d->n_appeared, d->n_disappeared);
		for (size_t i = 0; i < d->n_appeared; i++)
			fputs("  appeared: ", f), put_text(f, d->appeared[i]), fputc('\n', f);
		for (size_t i = 0; i < d->n_disappeared; i++)
			fputs("  disappeared: ", f), put_text(f, d->disappeared[i]), fputc('\n', f);
	}
	text_paths(f, d);
	if (d->opts.ops)
		text_ops(f, d, ops_limit);
	if (n_outs) {
		fputs("\ngate (--fail-on)\n", f);
		for (size_t i = 0; i < n_outs; i++) {
			fprintf(f, "  %s  ", outs[i].failed ? "FAIL" : "ok  ");
			put_text(f, outs[i].text);
			fputs(": ", f);
			put_text(f, outs[i].detail);
			fputc('\n', f);
		}
	}
}

/* ---- JSON ---------------------------------------------------------------------------- */

/* , "key": "string" (NULL: null) */
static void json_kv(FILE *f, const char *key, const char *v)
{
	fprintf(f, ", \"%s\": ", key);
	if (v)
		put_json_str(f, v);
	else
		fputs("null", f);
}

static void json_i64(FILE *f, const char *key, int64_t v, bool known)
{
	fprintf(f, ", \"%s\": ", key);
	if (known)
		fprintf(f, "%" PRId64, v);
	else
		fputs("null", f);
}

static void json_num(FILE *f, const char *key, double v)
{
	fprintf(f, ", \"%s\": ", key);
	if (isfinite(v))
		fprintf(f, "%.6g", v);
	else
		fputs("null", f);
}

static void json_side(FILE *f, const char *key, const struct nf_diff_row *r, const struct nf_diff_side *s)
{
	fprintf(f, ", \"%s\": ", key);
	if (!s->present) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{\"members\": %d", s->members);
	if (r->distribution) {
		json_i64(f, "n", s->n, true);
		for (int k = 0; k < NF_DIFF_STATS; k++)
			json_i64(f, stat_names[k], s->stat[k], s->n > 0);
		for (int k = 0; k < 3; k++) {
			char lo[16], hi[16];

			snprintf(lo, sizeof(lo), "%s_lo", stat_names[k]);
			snprintf(hi, sizeof(hi), "%s_hi", stat_names[k]);
			json_i64(f, lo, s->lo[k], s->lo[k] != INT64_MIN);
			json_i64(f, hi, s->hi[k], s->hi[k] != INT64_MAX);
		}
	} else {
		json_i64(f, "value", s->value, true);
		if (!strcmp(r->metric, "busy"))
			json_i64(f, "span_ns", s->aux, true);
	}
	fputc('}', f);
}

/* "key": {"abs": B - A, "rel": (B - A) / |A|, "significant": ...}; sig < 0: untested */
static void json_change(FILE *f, bool first, const char *key, int64_t a, int64_t b, int sig)
{
	fprintf(f, "%s\"%s\": {\"abs\": %" PRId64, first ? "" : ", ", key, b - a);
	json_num(f, "rel", a ? ((double)b - (double)a) / fabs((double)a) : (b == a ? 0 : NAN));
	if (sig >= 0)
		fprintf(f, ", \"significant\": %s", sig ? "true" : "false");
	fputc('}', f);
}

static void json_row(FILE *f, const struct nf_diff_row *r)
{
	fputs("{\"metric\": ", f);
	put_json_str(f, r->metric);
	json_kv(f, "unit", r->unit);
	json_kv(f, "scope", r->scope);
	json_kv(f, "name", r->name);
	fprintf(f, ", \"distribution\": %s", r->distribution ? "true" : "false");
	json_side(f, "a", r, &r->a);
	json_side(f, "b", r, &r->b);
	json_kv(f, "verdict", verdict_name(r->verdict));
	json_kv(f, "why", r->why);
	if (r->verdict != NF_DIFF_NOT_COMPARABLE) {
		fputs(", \"change\": {", f);
		if (r->distribution) {
			for (int k = 0; k < NF_DIFF_STATS; k++)
				json_change(f, k == 0, stat_names[k], r->a.stat[k], r->b.stat[k], k < 3 ? r->sig[k] : -1);
			fprintf(f, ", \"n\": {\"abs\": %" PRId64 "}", r->b.n - r->a.n);
		} else {
			json_change(f, true, "value", r->a.value, r->b.value, -1);
		}
		fputc('}', f);
	}
	if (r->tested) {
		fputs(", \"test\": {\"name\": \"Mann-Whitney U\"", f);
		json_num(f, "z", r->mw_z);
		json_num(f, "p", r->mw_p);
		json_num(f, "p_b_greater", r->p_b_greater);
		fputc('}', f);
	}
	fputc('}', f);
}

static void json_session(FILE *f, const struct nf_diff_session *s, const struct dd_session *x)
{
	fputs("{\"dir\": ", f);
	put_json_str(f, s->dir);
	json_kv(f, "source", s->source);
	json_kv(f, "mode", s->mode);
	json_kv(f, "seed", s->seed);
	json_i64(f, "duration_ns", s->duration_ns, s->duration_ns >= 0);
	json_i64(f, "ops", s->ops, true);
	fputs(", \"critical_path\": ", f);
	if (!x->cp_ok) {
		fputs("{\"what\": null, \"why\": ", f);
		put_json_str(f, x->cp_why);
	} else {
		fputs("{\"what\": ", f);
		put_json_str(f, x->cp_what);
		json_i64(f, "latency_ns", x->cp_latency, true);
	}
	fputs("}}", f);
}

static void write_json(const struct nf_diff *d, const struct nf_diff_gate *gate, size_t ops_limit, FILE *f)
{
	const struct dd_gate_outcome *outs;
	size_t n_outs = dd_gate_outcomes(gate, &outs);

	fputs("{\"a\": ", f);
	json_session(f, &d->info[0], &d->s[0]);
	fputs(",\n \"b\": ", f);
	json_session(f, &d->info[1], &d->s[1]);
	fprintf(f, ",\n \"test\": {\"name\": \"Mann-Whitney U (two-sided, normal approximation, tie- and "
		   "continuity-corrected); percentile intervals from order statistics\"");
	json_num(f, "alpha", d->opts.alpha);
	json_num(f, "min_effect", d->opts.min_effect);
	json_i64(f, "min_effect_ns", d->opts.min_effect_ns, true);
	fputs("},\n \"rows\": [", f);
	for (size_t i = 0; i < d->n_rows; i++) {
		fputs(i ? ",\n  " : "\n  ", f);
		json_row(f, &d->rows[i]);
	}
	fputs("],\n \"findings\": ", f);
	if (d->s[0].hangs_ok && d->s[1].hangs_ok) {
		fputs("{\"appeared\": [", f);
		for (size_t i = 0; i < d->n_appeared; i++)
			fputs(i ? ", " : "", f), put_json_str(f, d->appeared[i]);
		fputs("], \"disappeared\": [", f);
		for (size_t i = 0; i < d->n_disappeared; i++)
			fputs(i ? ", " : "", f), put_json_str(f, d->disappeared[i]);
		fputs("]}", f);
	} else {
		fputs("null", f);
	}
	fputs(",\n \"critical_path\": [", f);
	for (size_t i = 0; i < d->n_cp; i++) {
		fputs(i ? ",\n  " : "\n  ", f);
		fputs("{\"on\": ", f);
		put_json_str(f, d->cp[i].actor);
		fputs(", \"doing\": ", f);
		put_json_str(f, d->cp[i].kind);
		json_i64(f, "a_ns", d->cp[i].a, d->cp[i].a != DD_NONE);
		json_i64(f, "b_ns", d->cp[i].b, d->cp[i].b != DD_NONE);
		fputc('}', f);
	}
	fputs("]", f);
	if (d->opts.ops) {
		fprintf(f, ",\n \"ops\": {\"matched\": %" PRId64 ", \"only_a\": %" PRId64 ", \"only_b\": %" PRId64
			   ", \"changed\": %zu, \"min_ns\": %" PRId64 ", \"listed\": [",
			d->matched, d->only_a, d->only_b, d->n_ops, d->opts.ops_min_ns);
		for (size_t i = 0; i < d->n_ops && (!ops_limit || i < ops_limit); i++) {
			const struct nf_diff_op *o = &d->ops[i];

			fputs(i ? ",\n  " : "\n  ", f);
			fputs("{\"queue\": ", f);
			put_json_str(f, o->queue);
			json_i64(f, "fence", o->fence, o->fence != DD_NONE);
			json_i64(f, "value", o->value, o->value != DD_NONE);
			json_i64(f, "occurrence", o->occurrence, true);
			json_i64(f, "op_a", o->id_a, true);
			json_i64(f, "op_b", o->id_b, true);
			json_i64(f, "stall_a", o->stall_a, o->stall_a != DD_NONE);
			json_i64(f, "stall_b", o->stall_b, o->stall_b != DD_NONE);
			json_i64(f, "latency_a", o->latency_a, o->latency_a != DD_NONE);
			json_i64(f, "latency_b", o->latency_b, o->latency_b != DD_NONE);
			fputc('}', f);
		}
		fputs("]}", f);
	}
	if (gate) {
		fputs(",\n \"gate\": [", f);
		for (size_t i = 0; i < n_outs; i++) {
			fputs(i ? ",\n  " : "\n  ", f);
			fputs("{\"clause\": ", f);
			put_json_str(f, outs[i].text);
			fprintf(f, ", \"failed\": %s, \"detail\": ", outs[i].failed ? "true" : "false");
			put_json_str(f, outs[i].detail);
			fputc('}', f);
		}
		fputs("]", f);
	}
	fputs("}\n", f);
}

/* ---- CSV ------------------------------------------------------------------------------- */

static void csv_line(FILE *f, const char *kind, const char *metric, const char *scope, const char *name,
		     const char *stat, const char *a, const char *b, const char *change, const char *pct,
		     const char *sig, const char *verdict, const char *note)
{
	const char *v[] = { kind, metric, scope, name, stat, a, b, change, pct, sig, verdict, note };

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		if (i)
			fputc(',', f);
		put_csv(f, v[i], i == 3 || i == 11);
	}
	fputc('\n', f);
}

static void csv_row(FILE *f, const struct nf_diff_row *r)
{
	char a[32], b[32], ch[32], pct[32], note[120] = "";
	const char *stats[] = { "n", "p50", "p90", "p99", "max" };

	if (r->tested)
		snprintf(note, sizeof(note), "Mann-Whitney U z=%.3g p=%.3g", r->mw_z, r->mw_p);
	for (int k = r->distribution ? 0 : 5; k < (r->distribution ? 5 : 6); k++) {
		int64_t va, vb;
		bool has_a, has_b;
		const char *sig = "";

		if (k == 5) {
			va = r->a.value, vb = r->b.value;
			has_a = r->a.present, has_b = r->b.present;
		} else if (k == 0) {
			va = r->a.n, vb = r->b.n;
			has_a = r->a.present, has_b = r->b.present;
		} else {
			va = r->a.stat[k - 1], vb = r->b.stat[k - 1];
			has_a = r->a.present && r->a.n > 0, has_b = r->b.present && r->b.n > 0;
			if (k <= 3 && r->tested)
				sig = r->sig[k - 1] ? "1" : "0";
		}
		snprintf(a, sizeof(a), has_a ? "%" PRId64 : "", va);
		snprintf(b, sizeof(b), has_b ? "%" PRId64 : "", vb);
		ch[0] = pct[0] = '\0';
		if (has_a && has_b && r->verdict != NF_DIFF_NOT_COMPARABLE) {
			snprintf(ch, sizeof(ch), "%" PRId64, vb - va);
			if (va)
				snprintf(pct, sizeof(pct), "%.4f", ((double)vb - (double)va) / fabs((double)va) * 100);
		}
		csv_line(f, "series", r->metric, r->scope, r->name, k == 5 ? "value" : stats[k], a, b, ch, pct, sig,
			 verdict_name(r->verdict), r->why ? r->why : note);
	}
}

static void write_csv(const struct nf_diff *d, const struct nf_diff_gate *gate, size_t ops_limit, FILE *f)
{
	const struct dd_gate_outcome *outs;
	size_t n_outs = dd_gate_outcomes(gate, &outs);
	char a[32], b[32], ch[32], st[96];

	fputs("kind,metric,scope,name,stat,a,b,change,change_pct,significant,verdict,note\n", f);
	for (size_t i = 0; i < d->n_rows; i++)
		csv_row(f, &d->rows[i]);
	for (size_t i = 0; i < d->n_appeared; i++)
		csv_line(f, "finding", "findings", "", d->appeared[i], "", "", "", "", "", "", "appeared", "");
	for (size_t i = 0; i < d->n_disappeared; i++)
		csv_line(f, "finding", "findings", "", d->disappeared[i], "", "", "", "", "", "", "disappeared", "");
	for (size_t i = 0; i < d->n_cp; i++) {
		const struct dd_cp_row *r = &d->cp[i];

		snprintf(a, sizeof(a), r->a != DD_NONE ? "%" PRId64 : "", r->a);
		snprintf(b, sizeof(b), r->b != DD_NONE ? "%" PRId64 : "", r->b);
		ch[0] = '\0';
		if (r->a != DD_NONE && r->b != DD_NONE)
			snprintf(ch, sizeof(ch), "%" PRId64, r->b - r->a);
		csv_line(f, "critical_path", "", "", r->actor, r->kind, a, b, ch, "", "", "", "");
	}
	for (size_t i = 0; d->opts.ops && i < d->n_ops && (!ops_limit || i < ops_limit); i++) {
		const struct nf_diff_op *o = &d->ops[i];

		snprintf(st, sizeof(st), "0x%" PRIx64 ">=%" PRId64 "#%" PRId64, (uint64_t)o->fence, o->value, o->occurrence);
		for (int k = 0; k < 2; k++) {
			int64_t x = k ? o->latency_a : o->stall_a, y = k ? o->latency_b : o->stall_b;

			snprintf(a, sizeof(a), x != DD_NONE ? "%" PRId64 : "", x);
			snprintf(b, sizeof(b), y != DD_NONE ? "%" PRId64 : "", y);
			ch[0] = '\0';
			if (x != DD_NONE && y != DD_NONE)
				snprintf(ch, sizeof(ch), "%" PRId64, y - x);
			csv_line(f, "op", k ? "latency" : "stall", "queue", o->queue, st, a, b, ch, "", "", "", "");
		}
	}
	for (size_t i = 0; i < n_outs; i++)
		csv_line(f, "gate", "", "", outs[i].text, "", "", "", "", "", "", outs[i].failed ? "fail" : "ok",
			 outs[i].detail);
}

int nf_diff_write(const struct nf_diff *d, const struct nf_diff_gate *gate, enum nf_diff_format format,
		  size_t ops_limit, FILE *out, struct nf_error *err)
{
	if (format == NF_DIFF_JSON)
		write_json(d, gate, ops_limit, out);
	else if (format == NF_DIFF_CSV)
		write_csv(d, gate, ops_limit, out);
	else
		write_text(d, gate, ops_limit, out);
	if (fflush(out) != 0 || ferror(out))
		return nf_error_set(err, NF_EIO, "cannot write the diff");
	return 0;
}
