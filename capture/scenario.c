/*
 * The scenario language parser and interpreter. A scenario is parsed whole
 * into statements with resolved names and compiled expressions before anything
 * runs, so an error never leaves a half-run session; then the statements drive
 * the runtime. Grammar and examples: schemas/scenario.md.
 */
#include "scenario.h"
#include "contract/errors.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SC_MAX_NAMES 4096
#define SC_MAX_DEPTH 8
#define SC_MAX_EXPR 32
#define SC_MAX_FILE (16u << 20)
/* Resource bounds (schemas/scenario.md, docs/RELIABILITY.md): statements run
 * (each repeat iteration counts), and the memory of all log buffers. */
#define SC_MAX_STEPS 100000000ull
#define SC_MAX_LOG_BYTES (1ull << 30)
/* GPU operations queued and not yet executed, over all queues (each is held
 * in memory until its queue runs it): about 200 MB. */
#define SC_MAX_PENDING (1ull << 22)

enum sc_kind { SC_ADAPTER, SC_QUEUE, SC_FENCE, SC_EVENT, SC_DISPLAY, SC_KIND_COUNT };
static const char *const sc_kind_names[SC_KIND_COUNT] = { "adapter", "queue", "fence", "event", "display" };

enum sc_op {
	SC_OP_ADAPTER, SC_OP_QUEUE, SC_OP_FENCE, SC_OP_OPEN, SC_OP_CLOSE, SC_OP_DESTROY_QUEUE,
	SC_OP_WAIT, SC_OP_SIGNAL, SC_OP_WORK, SC_OP_ADVANCE, SC_OP_AT, SC_OP_CPU_WAIT,
	SC_OP_CPU_WAIT_ASYNC, SC_OP_EVENT_WAIT, SC_OP_EVENT_CLOSE, SC_OP_CPU_SIGNAL, SC_OP_THREAD,
	SC_OP_REPEAT, SC_OP_DISPLAY, SC_OP_PRESENT,
};

/* A compiled integer expression in reverse Polish notation. */
enum sc_tok { SC_T_CONST, SC_T_VAR, SC_T_ADD, SC_T_SUB, SC_T_MUL, SC_T_DIV, SC_T_MOD };
struct sc_expr {
	uint8_t n;
	bool chain;  /* a value, then (value, operator) pairs: evaluated left to right */
	struct { uint8_t t; uint64_t v; } code[SC_MAX_EXPR];
};

struct sc_stmt {
	enum sc_op op;
	uint32_t line;
	uint32_t a, b, c;            /* symbol indices */
	struct sc_expr e1, e2;       /* value / duration / count, timeout */
	bool has_e2;
	uint64_t steps;              /* statements it runs (repeat: with its body), saturated */
	struct nf_adapter_desc adesc;
	struct nf_fence_desc fdesc;
	struct nf_display_desc ddesc;  /* display (its name is the symbol's) */
	bool legacy;                 /* fence: a legacy monitored fence */
	uint32_t node, engine, process;
	uint32_t var_depth;          /* repeat: depth of its loop variable */
	struct sc_stmt *body;        /* repeat */
	uint32_t n_body;
};

struct sc_symbol {
	char name[64];
	enum sc_kind kind;
	uint32_t adapter;            /* for queues and fences: their adapter symbol */
};

struct nf_scenario {
	char name[256];
	struct sc_stmt *stmts;
	uint32_t n_stmts;
	struct sc_symbol *syms;
	uint32_t n_syms;
	struct nf_scenario_settings settings;
	char *adapter_names;         /* storage for adapter desc names */
};

/* ------------------------------------------------------------------ */
/* lexing one line into words                                         */

struct sc_word {
	const char *s;
	uint32_t len;
	uint32_t col;
};

struct sc_parser {
	struct nf_scenario *sc;
	struct nf_error *err;
	uint32_t line;
	struct sc_word w[64];
	uint32_t nw;
	char vars[SC_MAX_DEPTH][32];
	uint32_t depth;
	uint32_t n_adapters;     /* adapter statements so far */
};

__attribute__((format(printf, 3, 4)))
static int perr(struct sc_parser *p, uint32_t col, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return nf_error_set(p->err, NF_EFORMAT, "%s:%u:%u: %s", p->sc->name, p->line, col, msg);
}

static bool word_is(const struct sc_word *w, const char *s)
{
	return strlen(s) == w->len && memcmp(w->s, s, w->len) == 0;
}

static void word_copy(const struct sc_word *w, char *buf, size_t len)
{
	size_t n = w->len < len - 1 ? w->len : len - 1;

	memcpy(buf, w->s, n);
	buf[n] = '\0';
}

/* ------------------------------------------------------------------ */
/* numbers and expressions                                             */

struct sc_unit { const char *suffix; double mult; };
/* A session's time is at most 1 hour: `advance` and `at` beyond it stop
 * the run (the engine writes periodic reads all along, so a longer one could
 * fill a disk). */
#define NF_SC_MAX_SESSION_NS 3600000000000ull

static const struct sc_unit sc_time_units[] = {
	{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { NULL, 0 } };
static const struct sc_unit sc_freq_units[] = {
	{ "Hz", 1 }, { "kHz", 1e3 }, { "MHz", 1e6 }, { "GHz", 1e9 }, { NULL, 0 } };

/* Parses a literal like 42, 0x10, 1.5ms, 19.2MHz (units from the table, if any). */
static int parse_literal(struct sc_parser *p, const char *s, size_t len, uint32_t col,
			 const struct sc_unit *units, uint64_t *out)
{
	char buf[64], *end;
	double mult = 1;

	if (len == 0 || len >= sizeof(buf))
		return perr(p, col, "expected a number");
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (len > 2 && buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X')) {
		errno = 0;
		unsigned long long v = strtoull(buf + 2, &end, 16);
		if (errno || *end || end == buf + 2)
			return perr(p, col, "bad hexadecimal number '%s'", buf);
		*out = v;
		return 0;
	}
	if (!isdigit((unsigned char)buf[0]))
		return perr(p, col, "expected a number, got '%s'", buf);
	/* Plain integers are read exactly (doubles lose precision past 2^53). */
	if (strspn(buf, "0123456789") == len) {
		errno = 0;
		unsigned long long v = strtoull(buf, NULL, 10);
		if (errno)
			return perr(p, col, "number '%s' out of range", buf);
		*out = v;
		return 0;
	}
	errno = 0;
	double d = strtod(buf, &end);
	if (errno || d < 0)
		return perr(p, col, "number '%s' out of range", buf);
	if (*end) {
		bool found = false;
		for (const struct sc_unit *u = units; u && u->suffix; u++)
			if (strcmp(end, u->suffix) == 0) {
				mult = u->mult;
				found = true;
			}
		if (!found)
			return perr(p, col, "unknown unit '%s' in '%s'", end, buf);
	}
	d *= mult;
	if (d >= 1.8e19)
		return perr(p, col, "number '%s' out of range", buf);
	if (fabs(d - floor(d + 0.5)) > 1e-6 * (d > 1 ? d : 1))
		return perr(p, col, "'%s' is not a whole number%s", buf, units ? " of the base unit" : "");
	*out = (uint64_t)llround(d);
	return 0;
}

struct sc_expr_parser {
	struct sc_parser *p;
	const char *s, *end;
	uint32_t col0;
	struct sc_expr *e;
	const struct sc_unit *units;
};

static int ep_emit(struct sc_expr_parser *ep, uint8_t t, uint64_t v)
{
	if (ep->e->n >= SC_MAX_EXPR)
		return perr(ep->p, ep->col0, "expression too long");
	ep->e->code[ep->e->n].t = t;
	ep->e->code[ep->e->n].v = v;
	ep->e->n++;
	return 0;
}

static int ep_sum(struct sc_expr_parser *ep, int level);

static int ep_factor(struct sc_expr_parser *ep, int level)
{
	uint32_t col = ep->col0;
	const char *start = ep->s;

	if (level > 16)
		return perr(ep->p, col, "expression nested too deeply");
	if (ep->s >= ep->end)
		return perr(ep->p, col, "incomplete expression");
	if (*ep->s == '(') {
		ep->s++;
		int rc = ep_sum(ep, level + 1);
		if (rc)
			return rc;
		if (ep->s >= ep->end || *ep->s != ')')
			return perr(ep->p, col, "missing ')'");
		ep->s++;
		return 0;
	}
	if (*ep->s == '$') {
		ep->s++;
		while (ep->s < ep->end && (isalnum((unsigned char)*ep->s) || *ep->s == '_'))
			ep->s++;
		size_t n = (size_t)(ep->s - start - 1);
		for (uint32_t d = ep->p->depth; d-- > 0;)
			if (strlen(ep->p->vars[d]) == n && memcmp(ep->p->vars[d], start + 1, n) == 0)
				return ep_emit(ep, SC_T_VAR, d);
		return perr(ep->p, col, "unknown loop variable '%.*s'", (int)(n + 1), start);
	}
	while (ep->s < ep->end && (isalnum((unsigned char)*ep->s) || *ep->s == '.'))
		ep->s++;
	uint64_t v = 0;
	int rc = parse_literal(ep->p, start, (size_t)(ep->s - start), col, ep->units, &v);
	return rc ? rc : ep_emit(ep, SC_T_CONST, v);
}

static int ep_product(struct sc_expr_parser *ep, int level)
{
	int rc = ep_factor(ep, level);

	while (!rc && ep->s < ep->end && strchr("*/%", *ep->s)) {
		char op = *ep->s++;
		rc = ep_factor(ep, level);
		if (!rc)
			rc = ep_emit(ep, op == '*' ? SC_T_MUL : op == '/' ? SC_T_DIV : SC_T_MOD, 0);
	}
	return rc;
}

static int ep_sum(struct sc_expr_parser *ep, int level)
{
	int rc = ep_product(ep, level);

	while (!rc && ep->s < ep->end && (*ep->s == '+' || *ep->s == '-')) {
		char op = *ep->s++;
		rc = ep_product(ep, level);
		if (!rc)
			rc = ep_emit(ep, op == '+' ? SC_T_ADD : SC_T_SUB, 0);
	}
	return rc;
}

static int eval_expr(const struct sc_expr *e, const uint64_t *vars, uint64_t *out);
static bool expr_is_const(const struct sc_expr *e);

static int parse_expr(struct sc_parser *p, const struct sc_word *w, const struct sc_unit *units,
		      struct sc_expr *e)
{
	struct sc_expr_parser ep = { p, w->s, w->s + w->len, w->col, e, units };

	memset(e, 0, sizeof(*e));
	int rc = ep_sum(&ep, 0);
	if (!rc && ep.s != ep.end)
		return perr(p, w->col, "unexpected '%c' in expression '%.*s'", *ep.s, (int)w->len, w->s);
	/* Most expressions ($b*32+$i+1) apply each operator to the result so
	 * far and a value: such a chain needs no stack. */
	e->chain = e->n % 2 == 1;
	for (uint32_t i = 0; i < e->n && e->chain; i++) {
		bool value = e->code[i].t == SC_T_CONST || e->code[i].t == SC_T_VAR;
		e->chain = i == 0 || i % 2 == 1 ? value : !value;
	}
	/* A constant expression is checked now, so it cannot fail half way through a run. */
	if (!rc && expr_is_const(e)) {
		uint64_t zero[SC_MAX_DEPTH] = { 0 }, v;
		if (eval_expr(e, zero, &v))
			return perr(p, w->col, "expression '%.*s' overflows, goes below zero or divides by zero",
				    (int)w->len, w->s);
	}
	return rc;
}

/* Evaluates an expression; vars[d] is the loop counter at depth d. The top of
 * the stack is kept in a register (st[0] is a dummy under the bottom). */
static int eval_expr(const struct sc_expr *e, const uint64_t *vars, uint64_t *out)
{
	uint64_t st[SC_MAX_EXPR + 1];
	uint64_t top = 0;
	uint32_t sp = 0; /* values on the stack, the top included */

	if (e->chain) {
		/* The same operations, checks and order as the stack would do. */
		uint64_t acc = e->code[0].t == SC_T_VAR ? vars[e->code[0].v] : e->code[0].v;

		for (uint32_t i = 1; i < e->n; i += 2) {
			uint64_t b = e->code[i].t == SC_T_VAR ? vars[e->code[i].v] : e->code[i].v;

			switch (e->code[i + 1].t) {
			case SC_T_ADD: if (acc > UINT64_MAX - b) return NF_EINVAL; acc += b; break;
			case SC_T_SUB: if (b > acc) return NF_EINVAL; acc -= b; break;
			case SC_T_MUL: if (acc && b > UINT64_MAX / acc) return NF_EINVAL; acc *= b; break;
			case SC_T_DIV: if (!b) return NF_EINVAL; acc /= b; break;
			case SC_T_MOD: if (!b) return NF_EINVAL; acc %= b; break;
			}
		}
		*out = acc;
		return 0;
	}
	for (uint32_t i = 0; i < e->n; i++) {
		uint64_t a, b = top;

		switch (e->code[i].t) {
		case SC_T_CONST: st[sp++] = top; top = e->code[i].v; continue;
		case SC_T_VAR: st[sp++] = top; top = vars[e->code[i].v]; continue;
		}
		a = st[--sp];
		switch (e->code[i].t) {
		case SC_T_ADD: if (a > UINT64_MAX - b) return NF_EINVAL; top = a + b; break;
		case SC_T_SUB: if (b > a) return NF_EINVAL; top = a - b; break;
		case SC_T_MUL: if (a && b > UINT64_MAX / a) return NF_EINVAL; top = a * b; break;
		case SC_T_DIV: if (!b) return NF_EINVAL; top = a / b; break;
		case SC_T_MOD: if (!b) return NF_EINVAL; top = a % b; break;
		}
	}
	/* the bottom value, as a stack would leave it */
	*out = sp == 0 ? 0 : sp == 1 ? top : st[1];
	return 0;
}

static bool expr_is_const(const struct sc_expr *e)
{
	for (uint32_t i = 0; i < e->n; i++)
		if (e->code[i].t == SC_T_VAR)
			return false;
	return true;
}

static int const_value(struct sc_parser *p, const struct sc_word *w, const struct sc_unit *units,
		       uint64_t *out)
{
	struct sc_expr e;
	uint64_t zero[SC_MAX_DEPTH] = { 0 };
	int rc = parse_expr(p, w, units, &e);

	if (rc)
		return rc;
	if (!expr_is_const(&e))
		return perr(p, w->col, "a constant is needed here, not a loop variable");
	if (eval_expr(&e, zero, out))
		return perr(p, w->col, "expression '%.*s' overflows or divides by zero", (int)w->len, w->s);
	return 0;
}

static int parse_u32(struct sc_parser *p, const struct sc_word *w, uint32_t *out)
{
	uint64_t v;
	int rc = const_value(p, w, NULL, &v);

	if (rc)
		return rc;
	if (v > UINT32_MAX)
		return perr(p, w->col, "'%.*s' does not fit in 32 bits", (int)w->len, w->s);
	*out = (uint32_t)v;
	return 0;
}

static int parse_rate(struct sc_parser *p, const struct sc_word *w, double lo, double hi, double *out)
{
	char buf[64], *end;

	word_copy(w, buf, sizeof(buf));
	errno = 0;
	double d = strtod(buf, &end);
	if (errno || *end || end == buf || !(d >= lo && d <= hi))
		return perr(p, w->col, "expected a number between %g and %g, got '%s'", lo, hi, buf);
	*out = d;
	return 0;
}

static int parse_bool(struct sc_parser *p, const struct sc_word *w, bool *out)
{
	if (word_is(w, "on") || word_is(w, "true") || word_is(w, "1"))
		*out = true;
	else if (word_is(w, "off") || word_is(w, "false") || word_is(w, "0"))
		*out = false;
	else
		return perr(p, w->col, "expected on or off, got '%.*s'", (int)w->len, w->s);
	return 0;
}

/* A refresh rate: a frequency (60Hz, 144Hz, 60: whole hertz) or a ratio of
 * hertz NUM/DEN (60000/1001), 1 .. 1000 Hz. */
static int parse_refresh(struct sc_parser *p, const struct sc_word *w, struct nf_display_desc *d)
{
	const char *slash = memchr(w->s, '/', w->len);
	uint64_t num, den = 1;
	int rc;

	if (slash) {
		struct sc_word a = { w->s, (uint32_t)(slash - w->s), w->col };
		struct sc_word b = { slash + 1, w->len - a.len - 1, w->col + a.len + 1 };

		rc = const_value(p, &a, NULL, &num);
		if (!rc)
			rc = const_value(p, &b, NULL, &den);
	} else {
		rc = const_value(p, w, sc_freq_units, &num);
	}
	if (rc)
		return rc;
	if (!den || num > 1000 * den || num < den)
		return perr(p, w->col, "refresh rate '%.*s' is outside 1 .. 1000 Hz", (int)w->len, w->s);
	d->refresh_num = (uint32_t)num;
	d->refresh_den = (uint32_t)den;
	return 0;
}

/* ------------------------------------------------------------------ */
/* symbols                                                             */

static int sym_define(struct sc_parser *p, const struct sc_word *w, enum sc_kind kind,
		      uint32_t *out)
{
	struct nf_scenario *sc = p->sc;

	if (w->len == 0 || w->len >= sizeof(sc->syms[0].name) || w->s[0] == '$' ||
	    !(isalpha((unsigned char)w->s[0]) || w->s[0] == '_'))
		return perr(p, w->col, "bad %s name '%.*s'", sc_kind_names[kind], (int)w->len, w->s);
	for (uint32_t i = 0; i < sc->n_syms; i++)
		if (strlen(sc->syms[i].name) == w->len && !memcmp(sc->syms[i].name, w->s, w->len))
			return perr(p, w->col, "'%.*s' is already defined as a %s", (int)w->len, w->s,
				    sc_kind_names[sc->syms[i].kind]);
	if (sc->n_syms >= SC_MAX_NAMES)
		return perr(p, w->col, "too many names (limit %d)", SC_MAX_NAMES);
	if (p->depth)
		return perr(p, w->col, "a %s cannot be defined inside repeat", sc_kind_names[kind]);
	word_copy(w, sc->syms[sc->n_syms].name, sizeof(sc->syms[0].name));
	sc->syms[sc->n_syms].kind = kind;
	*out = sc->n_syms++;
	return 0;
}

static int sym_find(struct sc_parser *p, const struct sc_word *w, enum sc_kind kind, uint32_t *out)
{
	struct nf_scenario *sc = p->sc;

	for (uint32_t i = 0; i < sc->n_syms; i++)
		if (strlen(sc->syms[i].name) == w->len && !memcmp(sc->syms[i].name, w->s, w->len)) {
			if (sc->syms[i].kind != kind)
				return perr(p, w->col, "'%.*s' is a %s, not a %s", (int)w->len, w->s,
					    sc_kind_names[sc->syms[i].kind], sc_kind_names[kind]);
			*out = i;
			return 0;
		}
	return perr(p, w->col, "unknown %s '%.*s'", sc_kind_names[kind], (int)w->len, w->s);
}

/* ------------------------------------------------------------------ */
/* statements                                                          */

static int need_words(struct sc_parser *p, uint32_t n, const char *usage)
{
	if (p->nw < n)
		return perr(p, p->nw ? p->w[p->nw - 1].col + p->w[p->nw - 1].len : 1,
			    "missing arguments; usage: %s", usage);
	return 0;
}

/* Latencies and costs: a GPU or an OS taking more than a second for one
 * step is no model of either, and a huge one made a single advance run (and
 * write periodic reads) for ever. */
static int at_most_1s(struct sc_parser *p, const struct sc_word *v, const char *what, uint64_t ns)
{
	if (ns > 1000000000ull)
		return perr(p, v->col, "%s must be at most 1s", what);
	return 0;
}

static int parse_adapter(struct sc_parser *p, struct sc_stmt *st)
{
	struct nf_adapter_desc *d = &st->adesc;
	int rc = need_words(p, 2, "adapter NAME [key value]...");

	if (rc)
		return rc;
	/* What the engine would refuse only once the session exists (leaving a
	 * directory with only its metadata) is refused here: more than 16
	 * adapters, a stride beyond 56 bytes, a GPU frequency beyond 10 GHz. */
	if (++p->n_adapters > 16)
		return perr(p, p->w[0].col, "too many adapters (at most 16)");
	rc = sym_define(p, &p->w[1], SC_ADAPTER, &st->a);
	if (rc)
		return rc;
	nf_adapter_desc_init(d);
	d->name = p->sc->syms[st->a].name;
	for (uint32_t i = 2; i < p->nw; i++) {
		const struct sc_word *k = &p->w[i], *v = i + 1 < p->nw ? &p->w[i + 1] : NULL;

		if (word_is(k, "map_to_gpu_system_process")) {
			d->native_fence_caps |= NF_NATIVE_FENCE_CAP_MAP_TO_GPU_SYSTEM_PROCESS;
			continue;
		}
		if (!v)
			return perr(p, k->col, "'%.*s' needs a value", (int)k->len, k->s);
		i++;
		if (word_is(k, "caps")) {
			d->vidsch_caps = 0;
			const char *s = v->s, *e = v->s + v->len;
			while (s < e) {
				const char *c = memchr(s, ',', (size_t)(e - s));
				size_t n = (size_t)((c ? c : e) - s);
				if (n == 6 && !memcmp(s, "native", 6))
					d->vidsch_caps |= NF_VIDSCH_NATIVE_GPU_FENCE;
				else if (n == 9 && !memcmp(s, "optimized", 9))
					d->vidsch_caps |= NF_VIDSCH_OPTIMIZED_NATIVE_FENCE_SIGNALED_INTERRUPT;
				else if (n == 7 && !memcmp(s, "no64bit", 7))
					d->vidsch_caps |= NF_VIDSCH_NO64BIT_ATOMICS;
				else if (n == 4 && !memcmp(s, "none", 4))
					;
				else
					return perr(p, v->col + (uint32_t)(s - v->s),
						    "unknown capability '%.*s' (native, optimized, no64bit, none)",
						    (int)n, s);
				s += n + (c ? 1 : 0);
			}
		} else if (word_is(k, "stride")) {
			rc = parse_u32(p, v, &d->monitored_value_stride);
		} else if (word_is(k, "gpu_frequency")) {
			rc = const_value(p, v, sc_freq_units, &d->gpu_clock.frequency);
		} else if (word_is(k, "gpu_offset")) {
			rc = const_value(p, v, NULL, &d->gpu_clock.offset);
		} else if (word_is(k, "drift")) {
			char buf[64];
			word_copy(v, buf, sizeof(buf));
			size_t n = strlen(buf);
			if (n > 3 && !strcmp(buf + n - 3, "ppm"))
				buf[n - 3] = '\0';
			struct sc_word t = { buf, (uint32_t)strlen(buf), v->col };
			rc = parse_rate(p, &t, -10000, 10000, &d->gpu_clock.drift_ppm);
		} else if (word_is(k, "jitter")) {
			rc = const_value(p, v, sc_time_units, &d->gpu_clock.jitter_ns);
		} else if (word_is(k, "payload")) {
			if (word_is(v, "fence_array")) d->interrupt_payload = NF_IRQ_FENCE_ARRAY;
			else if (word_is(v, "null_array")) d->interrupt_payload = NF_IRQ_NULL_ARRAY;
			else if (word_is(v, "null_array_legacy")) d->interrupt_payload = NF_IRQ_NULL_ARRAY_LEGACY;
			else if (word_is(v, "null_queue")) d->interrupt_payload = NF_IRQ_OPTIMIZED_NULL_QUEUE;
			else
				return perr(p, v->col, "unknown payload '%.*s' (fence_array, null_array, null_array_legacy, null_queue)",
					    (int)v->len, v->s);
		} else if (word_is(k, "signal_cost")) {
			rc = const_value(p, v, sc_time_units, &d->signal_cost_ns);
			rc = rc ? rc : at_most_1s(p, v, "signal_cost", d->signal_cost_ns);
		} else if (word_is(k, "wait_cost")) {
			rc = const_value(p, v, sc_time_units, &d->wait_cost_ns);
			rc = rc ? rc : at_most_1s(p, v, "wait_cost", d->wait_cost_ns);
		} else if (word_is(k, "irq_latency")) {
			rc = const_value(p, v, sc_time_units, &d->interrupt_latency_ns);
			rc = rc ? rc : at_most_1s(p, v, "irq_latency", d->interrupt_latency_ns);
		} else if (word_is(k, "submit_latency")) {
			rc = const_value(p, v, sc_time_units, &d->submit_latency_ns);
			rc = rc ? rc : at_most_1s(p, v, "submit_latency", d->submit_latency_ns);
		} else if (word_is(k, "zero_ts")) {
			rc = parse_rate(p, v, 0, 1, &d->zero_ts_rate);
		} else if (word_is(k, "repeat_ts")) {
			rc = parse_rate(p, v, 0, 1, &d->repeat_ts_rate);
		} else if (word_is(k, "log_entries")) {
			rc = parse_u32(p, v, &d->log_entries);
			if (!rc && (d->log_entries == 0 || d->log_entries > (1u << 20)))
				return perr(p, v->col, "log_entries must be between 1 and 1048576");
		} else {
			return perr(p, k->col, "unknown adapter setting '%.*s'", (int)k->len, k->s);
		}
		if (rc)
			return rc;
	}
	if (d->gpu_clock.frequency == 0 || d->gpu_clock.frequency > 10000000000ull)
		return perr(p, p->w[1].col, "gpu_frequency must be between 1 Hz and 10 GHz");
	if (d->monitored_value_stride > NF_MONITORED_VALUE_STRIDE_MAX)
		return perr(p, p->w[1].col, "stride must be at most %u bytes", NF_MONITORED_VALUE_STRIDE_MAX);
	return 0;
}

static int parse_settings(struct sc_parser *p, bool os)
{
	struct nf_runtime_config *cfg = &p->sc->settings.cfg;
	int rc = 0;

	if (p->depth)
		return perr(p, p->w[0].col, "'%.*s' is not allowed inside repeat", (int)p->w[0].len, p->w[0].s);
	for (uint32_t i = 1; i < p->nw; i += 2) {
		const struct sc_word *k = &p->w[i], *v = &p->w[i + 1];

		if (i + 1 >= p->nw)
			return perr(p, k->col, "'%.*s' needs a value", (int)k->len, k->s);
		if (!os && word_is(k, "seed")) {
			rc = const_value(p, v, NULL, &p->sc->settings.seed);
			p->sc->settings.has_seed = true;
		} else if (!os && word_is(k, "cpu_frequency")) {
			rc = const_value(p, v, sc_freq_units, &cfg->cpu_frequency);
			if (!rc && (cfg->cpu_frequency == 0 || cfg->cpu_frequency > 10000000000ull))
				return perr(p, v->col, "cpu_frequency out of range");
		} else if (!os && word_is(k, "cpu_start")) {
			rc = const_value(p, v, NULL, &cfg->cpu_start_ticks);
		} else if (os && word_is(k, "native_fence")) {
			rc = parse_bool(p, v, &cfg->os_native_fence_enabled);
		} else if (os && word_is(k, "support_intra_gpu_fence_type")) {
			rc = parse_bool(p, v, &cfg->os_support_intra_gpu_fence_type);
		} else if (os && word_is(k, "support_optimized_default_fence_type")) {
			rc = parse_bool(p, v, &cfg->os_support_optimized_default_fence_type);
		} else if (os && word_is(k, "tracing")) {
			rc = parse_bool(p, v, &cfg->tracing);
		} else if (os && word_is(k, "tracing_log_entries")) {
			rc = parse_u32(p, v, &cfg->tracing_log_entries);
			if (!rc && (cfg->tracing_log_entries == 0 || cfg->tracing_log_entries > (1u << 20)))
				return perr(p, v->col, "tracing_log_entries must be between 1 and 1048576");
		} else if (os && word_is(k, "log_read_interval")) {
			rc = const_value(p, v, sc_time_units, &cfg->log_read_interval_ns);
		} else if (os && word_is(k, "calibration_interval")) {
			rc = const_value(p, v, sc_time_units, &cfg->calibration_interval_ns);
			if (!rc && (cfg->calibration_interval_ns == 0 || cfg->calibration_interval_ns > 30000000))
				return perr(p, v->col, "calibration_interval must be between 1ns and 30ms");
		} else if (os && word_is(k, "recreate_logs")) {
			rc = const_value(p, v, sc_time_units, &cfg->log_recreate_interval_ns);
		} else if (os && word_is(k, "max_operations")) {
			rc = const_value(p, v, NULL, &cfg->max_operations);
		} else {
			return perr(p, k->col, "unknown %s setting '%.*s'", os ? "os" : "session",
				    (int)k->len, k->s);
		}
		if (rc)
			return rc;
	}
	/* The session's CPU times must stay readable in nanoseconds (the
	 * readers refuse a clock value beyond 2^63 ns): a start beyond 2^62 ns
	 * recorded a session nothing could read. */
	if (!os && (long double)cfg->cpu_start_ticks * 1e9L / (long double)cfg->cpu_frequency >
			   (long double)(1ull << 62))
		return perr(p, p->w[0].col, "cpu_start %llu is beyond 2^62 ns at %llu Hz",
			    (unsigned long long)cfg->cpu_start_ticks, (unsigned long long)cfg->cpu_frequency);
	return 0;
}

static int parse_block(struct sc_parser *p, const char **cursor, const char *end,
		       struct sc_stmt **out, uint32_t *n_out, bool in_repeat);
static void free_stmts(struct sc_stmt *v, uint32_t n);

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Statements a block runs; a repeat whose count uses a loop variable counts
 * one iteration here (the run counts the rest). */
static uint64_t block_steps(const struct sc_stmt *v, uint32_t n)
{
	uint64_t total = 0;

	for (uint32_t i = 0; i < n; i++)
		total = sat_add(total, v[i].steps);
	return total;
}

static int parse_statement(struct sc_parser *p, struct sc_stmt *st, const char **cursor,
			   const char *end)
{
	const struct sc_word *w0 = &p->w[0];
	int rc = 0;

	memset(st, 0, sizeof(*st));
	st->line = p->line;
	st->steps = 1;
	if (word_is(w0, "adapter")) {
		st->op = SC_OP_ADAPTER;
		return p->depth ? perr(p, w0->col, "adapter is not allowed inside repeat") :
				  parse_adapter(p, st);
	}
	if (word_is(w0, "queue")) {
		st->op = SC_OP_QUEUE;
		rc = need_words(p, 4, "queue NAME adapter ADAPTER [node N] [engine N]");
		if (!rc)
			rc = sym_define(p, &p->w[1], SC_QUEUE, &st->a);
		for (uint32_t i = 2; !rc && i < p->nw; i += 2) {
			if (i + 1 >= p->nw)
				return perr(p, p->w[i].col, "'%.*s' needs a value", (int)p->w[i].len, p->w[i].s);
			if (word_is(&p->w[i], "adapter"))
				rc = sym_find(p, &p->w[i + 1], SC_ADAPTER, &st->b);
			else if (word_is(&p->w[i], "node"))
				rc = parse_u32(p, &p->w[i + 1], &st->node);
			else if (word_is(&p->w[i], "engine"))
				rc = parse_u32(p, &p->w[i + 1], &st->engine);
			else
				return perr(p, p->w[i].col, "unknown queue setting '%.*s'", (int)p->w[i].len, p->w[i].s);
		}
		if (!rc)
			p->sc->syms[st->a].adapter = st->b;
		return rc;
	}
	if (word_is(w0, "fence") || word_is(w0, "open")) {
		bool open = word_is(w0, "open");
		bool have_adapter = false, have_from = false;

		st->op = open ? SC_OP_OPEN : SC_OP_FENCE;
		rc = need_words(p, 4, open ? "open NAME fence FENCE adapter ADAPTER [process N]"
					   : "fence NAME adapter ADAPTER [type default|intra_gpu] [shared] [cross_adapter] [legacy] [initial N] [process N]");
		if (!rc)
			rc = sym_define(p, &p->w[1], SC_FENCE, &st->a);
		for (uint32_t i = 2; !rc && i < p->nw; i++) {
			const struct sc_word *k = &p->w[i], *v = i + 1 < p->nw ? &p->w[i + 1] : NULL;

			if (!open && word_is(k, "shared")) { st->fdesc.shared = true; continue; }
			if (!open && word_is(k, "cross_adapter")) { st->fdesc.cross_adapter = true; continue; }
			if (!open && word_is(k, "legacy")) { st->legacy = true; continue; }
			if (!v)
				return perr(p, k->col, "'%.*s' needs a value", (int)k->len, k->s);
			i++;
			if (word_is(k, "adapter")) {
				rc = sym_find(p, v, SC_ADAPTER, &st->b);
				have_adapter = true;
			} else if (open && word_is(k, "fence")) {
				rc = sym_find(p, v, SC_FENCE, &st->c);
				have_from = true;
			} else if (word_is(k, "process")) {
				rc = parse_u32(p, v, &st->process);
			} else if (!open && word_is(k, "initial")) {
				rc = const_value(p, v, NULL, &st->fdesc.initial_value);
			} else if (!open && word_is(k, "type")) {
				if (word_is(v, "default")) st->fdesc.type = NF_FENCE_TYPE_DEFAULT;
				else if (word_is(v, "intra_gpu")) st->fdesc.type = NF_FENCE_TYPE_INTRA_GPU;
				else return perr(p, v->col, "unknown fence type '%.*s' (default, intra_gpu)", (int)v->len, v->s);
			} else {
				return perr(p, k->col, "unknown %s setting '%.*s'", open ? "open" : "fence", (int)k->len, k->s);
			}
		}
		if (!rc && !have_adapter)
			return perr(p, w0->col, "%s needs 'adapter NAME'", open ? "open" : "fence");
		if (!rc && open && !have_from)
			return perr(p, w0->col, "open needs 'fence NAME' (the fence to open)");
		st->fdesc.process = st->process;
		if (!rc)
			p->sc->syms[st->a].adapter = st->b;
		return rc;
	}
	if (word_is(w0, "close") || word_is(w0, "destroy_queue") || word_is(w0, "event_close")) {
		enum sc_kind kind = word_is(w0, "close") ? SC_FENCE : word_is(w0, "destroy_queue") ? SC_QUEUE : SC_EVENT;
		st->op = kind == SC_FENCE ? SC_OP_CLOSE : kind == SC_QUEUE ? SC_OP_DESTROY_QUEUE : SC_OP_EVENT_CLOSE;
		rc = need_words(p, 2, "close FENCE | destroy_queue QUEUE | event_close EVENT");
		return rc ? rc : sym_find(p, &p->w[1], kind, &st->a);
	}
	if (word_is(w0, "wait") || word_is(w0, "signal")) {
		st->op = word_is(w0, "wait") ? SC_OP_WAIT : SC_OP_SIGNAL;
		rc = need_words(p, 4, "wait|signal QUEUE FENCE VALUE");
		if (!rc && p->nw > 4)
			return perr(p, p->w[4].col, "unexpected '%.*s'", (int)p->w[4].len, p->w[4].s);
		if (!rc)
			rc = sym_find(p, &p->w[1], SC_QUEUE, &st->a);
		if (!rc)
			rc = sym_find(p, &p->w[2], SC_FENCE, &st->b);
		if (!rc && p->sc->syms[st->a].adapter != p->sc->syms[st->b].adapter)
			return perr(p, p->w[2].col, "fence '%s' is on adapter '%s' but queue '%s' is on adapter '%s'",
				    p->sc->syms[st->b].name, p->sc->syms[p->sc->syms[st->b].adapter].name,
				    p->sc->syms[st->a].name, p->sc->syms[p->sc->syms[st->a].adapter].name);
		return rc ? rc : parse_expr(p, &p->w[3], NULL, &st->e1);
	}
	if (word_is(w0, "work")) {
		st->op = SC_OP_WORK;
		rc = need_words(p, 3, "work QUEUE DURATION");
		if (!rc)
			rc = sym_find(p, &p->w[1], SC_QUEUE, &st->a);
		return rc ? rc : parse_expr(p, &p->w[2], sc_time_units, &st->e1);
	}
	if (word_is(w0, "advance") || word_is(w0, "at")) {
		st->op = word_is(w0, "at") ? SC_OP_AT : SC_OP_ADVANCE;
		rc = need_words(p, 2, "advance DURATION | at TIME");
		if (!rc && p->nw > 2)
			return perr(p, p->w[2].col, "unexpected '%.*s'", (int)p->w[2].len, p->w[2].s);
		return rc ? rc : parse_expr(p, &p->w[1], sc_time_units, &st->e1);
	}
	if (word_is(w0, "cpu_wait") || word_is(w0, "cpu_signal")) {
		bool wait = word_is(w0, "cpu_wait");

		st->op = wait ? SC_OP_CPU_WAIT : SC_OP_CPU_SIGNAL;
		rc = need_words(p, 3, wait ? "cpu_wait FENCE VALUE [timeout DURATION]" : "cpu_signal FENCE VALUE");
		if (!rc)
			rc = sym_find(p, &p->w[1], SC_FENCE, &st->a);
		if (!rc)
			rc = parse_expr(p, &p->w[2], NULL, &st->e1);
		if (!rc && p->nw > 3) {
			if (!wait || !word_is(&p->w[3], "timeout") || p->nw != 5)
				return perr(p, p->w[3].col, "unexpected '%.*s'", (int)p->w[3].len, p->w[3].s);
			st->has_e2 = true;
			rc = parse_expr(p, &p->w[4], sc_time_units, &st->e2);
		}
		return rc;
	}
	if (word_is(w0, "cpu_wait_async")) {
		st->op = SC_OP_CPU_WAIT_ASYNC;
		rc = need_words(p, 4, "cpu_wait_async EVENT FENCE VALUE");
		if (!rc)
			rc = sym_define(p, &p->w[1], SC_EVENT, &st->a);
		if (!rc)
			rc = sym_find(p, &p->w[2], SC_FENCE, &st->b);
		return rc ? rc : parse_expr(p, &p->w[3], NULL, &st->e1);
	}
	if (word_is(w0, "event_wait")) {
		st->op = SC_OP_EVENT_WAIT;
		rc = need_words(p, 2, "event_wait EVENT [timeout DURATION]");
		if (!rc)
			rc = sym_find(p, &p->w[1], SC_EVENT, &st->a);
		if (!rc && p->nw > 2) {
			if (!word_is(&p->w[2], "timeout") || p->nw != 4)
				return perr(p, p->w[2].col, "unexpected '%.*s'", (int)p->w[2].len, p->w[2].s);
			st->has_e2 = true;
			rc = parse_expr(p, &p->w[3], sc_time_units, &st->e2);
		}
		return rc;
	}
	if (word_is(w0, "display")) {
		bool have_adapter = false;

		st->op = SC_OP_DISPLAY;
		rc = need_words(p, 4, "display NAME adapter ADAPTER [refresh RATE] [process N]");
		if (!rc)
			rc = sym_define(p, &p->w[1], SC_DISPLAY, &st->a);
		nf_display_desc_init(&st->ddesc);
		for (uint32_t i = 2; !rc && i < p->nw; i += 2) {
			const struct sc_word *k = &p->w[i], *v = &p->w[i + 1];

			if (i + 1 >= p->nw)
				return perr(p, k->col, "'%.*s' needs a value", (int)k->len, k->s);
			if (word_is(k, "adapter")) {
				rc = sym_find(p, v, SC_ADAPTER, &st->b);
				have_adapter = true;
			} else if (word_is(k, "process")) {
				rc = parse_u32(p, v, &st->ddesc.process);
			} else if (word_is(k, "refresh")) {
				rc = parse_refresh(p, v, &st->ddesc);
			} else {
				return perr(p, k->col, "unknown display setting '%.*s'", (int)k->len, k->s);
			}
		}
		if (!rc && !have_adapter)
			return perr(p, w0->col, "display needs 'adapter NAME'");
		if (!rc)
			p->sc->syms[st->a].adapter = st->b;
		return rc;
	}
	if (word_is(w0, "present")) {
		st->op = SC_OP_PRESENT;
		st->node = 1; /* the sync interval */
		rc = need_words(p, 3, "present QUEUE DISPLAY [interval N]");
		if (!rc)
			rc = sym_find(p, &p->w[1], SC_QUEUE, &st->a);
		if (!rc)
			rc = sym_find(p, &p->w[2], SC_DISPLAY, &st->b);
		if (!rc && p->sc->syms[st->a].adapter != p->sc->syms[st->b].adapter)
			return perr(p, p->w[2].col, "display '%s' is on adapter '%s' but queue '%s' is on adapter '%s'",
				    p->sc->syms[st->b].name, p->sc->syms[p->sc->syms[st->b].adapter].name,
				    p->sc->syms[st->a].name, p->sc->syms[p->sc->syms[st->a].adapter].name);
		if (!rc && p->nw > 3) {
			if (!word_is(&p->w[3], "interval") || p->nw != 5)
				return perr(p, p->w[3].col, "unexpected '%.*s'", (int)p->w[3].len, p->w[3].s);
			rc = parse_u32(p, &p->w[4], &st->node);
			if (!rc && st->node > 4)
				return perr(p, p->w[4].col, "a sync interval is 0 to 4");
		}
		return rc;
	}
	if (word_is(w0, "thread")) {
		st->op = SC_OP_THREAD;
		rc = need_words(p, 2, "thread N");
		return rc ? rc : parse_expr(p, &p->w[1], NULL, &st->e1);
	}
	if (word_is(w0, "repeat")) {
		st->op = SC_OP_REPEAT;
		rc = need_words(p, 3, "repeat COUNT [as $VAR] {");
		if (rc)
			return rc;
		if (!word_is(&p->w[p->nw - 1], "{"))
			return perr(p, p->w[p->nw - 1].col, "repeat line must end with '{'");
		rc = parse_expr(p, &p->w[1], NULL, &st->e1);
		if (rc)
			return rc;
		if (p->depth >= SC_MAX_DEPTH)
			return perr(p, w0->col, "repeat nested too deeply (limit %d)", SC_MAX_DEPTH);
		char var[32] = "";
		if (p->nw == 5 && word_is(&p->w[2], "as")) {
			if (p->w[3].s[0] != '$' || p->w[3].len < 2)
				return perr(p, p->w[3].col, "loop variable must look like $i");
			word_copy(&(struct sc_word){ p->w[3].s + 1, p->w[3].len - 1, 0 }, var, sizeof(var));
		} else if (p->nw != 3) {
			return perr(p, p->w[2].col, "expected '{' or 'as $VAR {'");
		}
		st->var_depth = p->depth;
		snprintf(p->vars[p->depth], sizeof(p->vars[0]), "%s", var);
		p->depth++;
		uint32_t line = p->line, col = w0->col;
		rc = parse_block(p, cursor, end, &st->body, &st->n_body, true);
		p->depth--;
		if (rc)
			return rc;
		/* 1 + count x (1 + body), counted as the run counts them. */
		uint64_t count = 1, body = sat_add(block_steps(st->body, st->n_body), 1);
		if (expr_is_const(&st->e1))
			(void)eval_expr(&st->e1, NULL, &count);
		st->steps = count && body > UINT64_MAX / count ? UINT64_MAX : sat_add(count * body, 1);
		if (st->steps > SC_MAX_STEPS) {
			p->line = line;
			free_stmts(st->body, st->n_body); /* the caller frees only whole statements */
			st->body = NULL;
			st->n_body = 0;
			char n[32] = "2^64 or more";
			if (st->steps < UINT64_MAX)
				snprintf(n, sizeof(n), "%llu", (unsigned long long)st->steps);
			return perr(p, col, "this repeat runs %s statements, more than the limit of %llu",
				    n, (unsigned long long)SC_MAX_STEPS);
		}
		return 0;
	}
	return perr(p, w0->col, "unknown statement '%.*s'", (int)w0->len, w0->s);
}

/* Splits the next line into words; returns false at the end of the text. */
static bool next_line(struct sc_parser *p, const char **cursor, const char *end, int *rc)
{
	*rc = 0;
	while (*cursor < end) {
		const char *ls = *cursor, *le = memchr(ls, '\n', (size_t)(end - ls));
		if (!le)
			le = end;
		*cursor = le < end ? le + 1 : end;
		p->line++;
		p->nw = 0;
		for (const char *s = ls; s < le;) {
			if (*s == '#')
				break;
			if (*s == ' ' || *s == '\t' || *s == '\r') {
				s++;
				continue;
			}
			if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f) {
				*rc = perr(p, (uint32_t)(s - ls) + 1, "unexpected character 0x%02x", (unsigned char)*s);
				return false;
			}
			const char *ws = s;
			while (s < le && *s != ' ' && *s != '\t' && *s != '\r' && *s != '#') {
				if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f) {
					*rc = perr(p, (uint32_t)(s - ls) + 1, "unexpected character 0x%02x",
						   (unsigned char)*s);
					return false;
				}
				s++;
			}
			if (p->nw >= sizeof(p->w) / sizeof(p->w[0])) {
				*rc = perr(p, (uint32_t)(ws - ls) + 1, "too many words on one line");
				return false;
			}
			p->w[p->nw].s = ws;
			p->w[p->nw].len = (uint32_t)(s - ws);
			p->w[p->nw].col = (uint32_t)(ws - ls) + 1;
			p->nw++;
		}
		if (p->nw)
			return true;
	}
	return false;
}

static int parse_block(struct sc_parser *p, const char **cursor, const char *end,
		       struct sc_stmt **out, uint32_t *n_out, bool in_repeat)
{
	struct sc_stmt *v = NULL;
	uint32_t n = 0, cap = 0, open_line = p->line;
	int rc;

	while (next_line(p, cursor, end, &rc)) {
		if (word_is(&p->w[0], "}")) {
			if (!in_repeat)
				rc = perr(p, p->w[0].col, "'}' without a matching repeat");
			else if (p->nw > 1)
				rc = perr(p, p->w[1].col, "unexpected '%.*s' after '}'", (int)p->w[1].len, p->w[1].s);
			if (rc)
				goto out_free;
			*out = v;
			*n_out = n;
			return 0;
		}
		if (word_is(&p->w[0], "session") || word_is(&p->w[0], "os")) {
			rc = parse_settings(p, word_is(&p->w[0], "os"));
			if (rc)
				goto out_free;
			continue;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			struct sc_stmt *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				rc = nf_error_set(p->err, NF_ENOMEM, "out of memory");
				goto out_free;
			}
			v = nv;
		}
		rc = parse_statement(p, &v[n], cursor, end);
		if (rc)
			goto out_free;
		n++;
	}
	if (rc)
		goto out_free;
	if (in_repeat) {
		rc = nf_error_set(p->err, NF_EFORMAT, "%s:%u:1: repeat opened here is never closed with '}'",
				  p->sc->name, open_line);
		goto out_free;
	}
	*out = v;
	*n_out = n;
	return 0;
out_free:
	free_stmts(v, n);
	return rc;
}

static void free_stmts(struct sc_stmt *v, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (v[i].op == SC_OP_REPEAT)
			free_stmts(v[i].body, v[i].n_body);
	free(v);
}

/*
 * Resource bounds of a whole scenario, checked before anything runs: the
 * statements it runs (each repeat is also checked where it is parsed), and the
 * memory its log buffers take (two logs per queue, a log entry and its ground
 * truth per slot), so a scenario cannot make the recorder run for days or
 * allocate more than the machine has.
 */
static int check_bounds(const struct nf_scenario *sc, struct nf_error *err)
{
	const struct nf_runtime_config *cfg = &sc->settings.cfg;
	const uint64_t slot = sizeof(struct nf_log_entry) + 64; /* entry + its ground truth */
	uint64_t total = 0, bytes = 0;
	uint32_t queues = 0;

	for (uint32_t i = 0; i < sc->n_stmts; i++) {
		const struct sc_stmt *st = &sc->stmts[i];

		total = sat_add(total, st->steps);
		if (total > SC_MAX_STEPS)
			return nf_error_set(err, NF_EFORMAT,
					    "%s:%u:1: the scenario runs more than %llu statements here (the limit)",
					    sc->name, st->line, (unsigned long long)SC_MAX_STEPS);
		if (st->op != SC_OP_QUEUE)
			continue;
		/* The queue's adapter is the statement that defined the symbol. */
		uint32_t asked = 0;
		for (uint32_t j = 0; j < i; j++)
			if (sc->stmts[j].op == SC_OP_ADAPTER && sc->stmts[j].a == st->b)
				asked = sc->stmts[j].adesc.log_entries;
		/* The size the engine will give the logs (tracing enlarges them). */
		uint64_t entries = nf_log_entries_effective(cfg, asked);
		bytes += 2 * entries * slot;
		queues++;
		if (bytes > SC_MAX_LOG_BYTES)
			return nf_error_set(err, NF_EFORMAT,
					    "%s:%u:1: the log buffers of %u queues would take more than %llu MiB (the limit)",
					    sc->name, st->line, queues,
					    (unsigned long long)(SC_MAX_LOG_BYTES >> 20));
	}
	return 0;
}

int nf_scenario_parse(const char *name, const char *text, size_t len, struct nf_scenario **out,
		      struct nf_error *err)
{
	struct nf_scenario *sc = calloc(1, sizeof(*sc));
	struct sc_parser p = { 0 };
	const char *cursor = text;
	int rc;

	*out = NULL;
	if (!sc)
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	snprintf(sc->name, sizeof(sc->name), "%s", name ? name : "<scenario>");
	sc->syms = calloc(SC_MAX_NAMES, sizeof(*sc->syms));
	if (!sc->syms) {
		free(sc);
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	}
	nf_runtime_config_init(&sc->settings.cfg);
	p.sc = sc;
	p.err = err;
	if (memchr(text, '\0', len)) {
		const char *z = memchr(text, '\0', len);
		uint32_t line = 1;
		for (const char *c = text; c < z; c++)
			line += *c == '\n';
		rc = nf_error_set(err, NF_EFORMAT, "%s:%u:1: binary data (NUL byte) in a scenario", sc->name, line);
		nf_scenario_destroy(sc);
		return rc;
	}
	rc = parse_block(&p, &cursor, text + len, &sc->stmts, &sc->n_stmts, false);
	if (rc) {
		nf_scenario_destroy(sc);
		return rc;
	}
	if (sc->n_stmts == 0) {
		nf_scenario_destroy(sc);
		return nf_error_set(err, NF_EFORMAT, "%s:1:1: empty scenario (no statements)",
				    name ? name : "<scenario>");
	}
	rc = check_bounds(sc, err);
	if (rc) {
		nf_scenario_destroy(sc);
		return rc;
	}
	*out = sc;
	return 0;
}

int nf_scenario_load(const char *path, struct nf_scenario **out, struct nf_error *err)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;
	int rc;

	*out = NULL;
	if (!f)
		return nf_error_set(err, errno == ENOENT ? NF_ENOENT : NF_EIO, "%s: %s", path, strerror(errno));
	buf = malloc(SC_MAX_FILE + 1);
	if (!buf) {
		fclose(f);
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	}
	n = fread(buf, 1, SC_MAX_FILE + 1, f);
	if (ferror(f)) {
		rc = nf_error_set(err, NF_EIO, "%s: read error (is it a directory?)", path);
	} else if (n > SC_MAX_FILE) {
		rc = nf_error_set(err, NF_EFORMAT, "%s: larger than the %u MiB scenario limit", path, SC_MAX_FILE >> 20);
	} else if (n == 0) {
		rc = nf_error_set(err, NF_EFORMAT, "%s:1:1: empty file", path);
	} else {
		rc = nf_scenario_parse(path, buf, n, out, err);
	}
	free(buf);
	fclose(f);
	return rc;
}

size_t nf_scenario_adapters(const struct nf_scenario *s, const struct nf_adapter_desc **out,
			    size_t max)
{
	size_t n = 0;

	/* Adapters are defined at the top level only (never inside repeat). */
	for (uint32_t i = 0; i < s->n_stmts; i++) {
		if (s->stmts[i].op != SC_OP_ADAPTER)
			continue;
		if (n < max)
			out[n] = &s->stmts[i].adesc;
		n++;
	}
	return n;
}

void nf_scenario_apply_settings(const struct nf_scenario *s, struct nf_runtime_config *cfg)
{
	struct nf_event_sink sink = cfg->sink;
	bool truth = cfg->ground_truth;
	uint64_t seed = cfg->seed;
	enum nf_mode mode = cfg->mode;

	*cfg = s->settings.cfg;
	cfg->sink = sink;
	cfg->ground_truth = truth;
	cfg->mode = mode;
	cfg->seed = s->settings.has_seed ? s->settings.seed : seed;
}

void nf_scenario_destroy(struct nf_scenario *s)
{
	if (!s)
		return;
	free_stmts(s->stmts, s->n_stmts);
	free(s->syms);
	free(s);
}

/* ------------------------------------------------------------------ */
/* running                                                             */

struct sc_run {
	const struct nf_scenario *sc;
	nf_runtime *rt;
	const struct nf_scenario_progress *progress;
	struct nf_error *err;
	uint32_t *objs;          /* symbol -> adapter index or handle */
	uint64_t vars[SC_MAX_DEPTH];
	uint64_t ops;
	uint64_t steps;          /* statements run, repeat iterations included */
	uint64_t next_tick;      /* steps at which a loop next checks for an interrupt */
};

__attribute__((format(printf, 3, 4)))
static int rerr(struct sc_run *r, const struct sc_stmt *st, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return nf_error_set(r->err, NF_EINVAL, "%s:%u: %s", r->sc->name, st->line, msg);
}

static int run_value(struct sc_run *r, const struct sc_stmt *st, const struct sc_expr *e, uint64_t *v)
{
	if (eval_expr(e, r->vars, v))
		return rerr(r, st, "expression overflows, goes below zero or divides by zero");
	return 0;
}

static int run_block(struct sc_run *r, const struct sc_stmt *v, uint32_t n);

static int run_stmt(struct sc_run *r, const struct sc_stmt *st)
{
	struct nf_error e;
	uint64_t x = 0, y = NF_NO_TIMEOUT;
	int rc = 0;

	e.code = NF_OK; /* nf_error_clear, without a call per statement */
	e.msg[0] = '\0';
	if (++r->steps > SC_MAX_STEPS)
		return rerr(r, st, "the scenario ran more than %llu statements (the limit)",
			    (unsigned long long)SC_MAX_STEPS);
	switch (st->op) {
	case SC_OP_ADAPTER:
		rc = nf_adapter_create(r->rt, &st->adesc, &r->objs[st->a], &e);
		break;
	case SC_OP_QUEUE:
		rc = nf_hwqueue_create(r->rt, r->objs[st->b], st->node, st->engine,
				       r->sc->syms[st->a].name, &r->objs[st->a], &e);
		break;
	case SC_OP_FENCE:
		rc = st->legacy ? nf_monitored_fence_create(r->rt, r->objs[st->b], &st->fdesc,
							    &r->objs[st->a], &e)
				: nf_fence_create(r->rt, r->objs[st->b], &st->fdesc, &r->objs[st->a], &e);
		break;
	case SC_OP_OPEN: {
		nf_handle g;
		rc = nf_fence_global_handle(r->rt, r->objs[st->c], &g, &e);
		if (!rc)
			rc = nf_fence_open(r->rt, r->objs[st->b], st->process, g, &r->objs[st->a], &e);
		break;
	}
	case SC_OP_CLOSE:
		rc = nf_fence_close(r->rt, r->objs[st->a], &e);
		break;
	case SC_OP_DESTROY_QUEUE:
		rc = nf_hwqueue_destroy(r->rt, r->objs[st->a], &e);
		break;
	case SC_OP_EVENT_CLOSE:
		rc = nf_event_close(r->rt, r->objs[st->a], &e);
		break;
	case SC_OP_WAIT:
	case SC_OP_SIGNAL:
		rc = run_value(r, st, &st->e1, &x);
		if (rc)
			return rc;
		rc = st->op == SC_OP_WAIT ? nf_queue_wait(r->rt, r->objs[st->a], r->objs[st->b], x, &e)
					  : nf_queue_signal(r->rt, r->objs[st->a], r->objs[st->b], x, &e);
		r->ops++;
		if (!rc && (r->ops & 1023) == 0) {
			struct nf_runtime_stats rs;
			nf_runtime_get_stats(r->rt, &rs);
			uint64_t done = rs.signals_executed + rs.waits_unblocked;
			if (rs.operations > done && rs.operations - done > SC_MAX_PENDING)
				return rerr(r, st,
					    "%llu GPU operations are queued and not executed (the limit is %llu): is a wait never satisfied?",
					    (unsigned long long)(rs.operations - done),
					    (unsigned long long)SC_MAX_PENDING);
		}
		if (!rc && r->progress && r->progress->tick && (r->ops & 0xffff) == 0)
			rc = r->progress->tick(r->progress->ctx, r->ops);
		if (rc && !e.code)
			return rc;
		break;
	case SC_OP_WORK:
		rc = run_value(r, st, &st->e1, &x);
		if (!rc)
			rc = nf_queue_work(r->rt, r->objs[st->a], x, &e);
		break;
	case SC_OP_ADVANCE:
		rc = run_value(r, st, &st->e1, &x);
		if (!rc && x > NF_SC_MAX_SESSION_NS - nf_runtime_now_ns(r->rt))
			return rerr(r, st, "'advance %llu' would take the session past 1 hour, the limit (now %llu ns)",
				    (unsigned long long)x, (unsigned long long)nf_runtime_now_ns(r->rt));
		if (!rc)
			rc = nf_runtime_advance(r->rt, x, &e);
		break;
	case SC_OP_AT:
		rc = run_value(r, st, &st->e1, &x);
		if (!rc && x < nf_runtime_now_ns(r->rt))
			return rerr(r, st, "'at %llu' is in the past (now %llu ns)", (unsigned long long)x,
				    (unsigned long long)nf_runtime_now_ns(r->rt));
		if (!rc && x > NF_SC_MAX_SESSION_NS)
			return rerr(r, st, "'at %llu' is past 1 hour, the limit of a session's time",
				    (unsigned long long)x);
		if (!rc)
			rc = nf_runtime_advance(r->rt, x - nf_runtime_now_ns(r->rt), &e);
		break;
	case SC_OP_CPU_WAIT:
		rc = run_value(r, st, &st->e1, &x);
		if (!rc && st->has_e2)
			rc = run_value(r, st, &st->e2, &y);
		if (!rc)
			rc = nf_cpu_wait(r->rt, r->objs[st->a], x, y, &e);
		if (rc == NF_ETIMEOUT && st->has_e2)
			rc = 0; /* a timeout the scenario asked for is an outcome, not an error */
		break;
	case SC_OP_CPU_WAIT_ASYNC:
		rc = run_value(r, st, &st->e1, &x);
		if (!rc)
			rc = nf_cpu_wait_async(r->rt, r->objs[st->b], x, &r->objs[st->a], &e);
		break;
	case SC_OP_EVENT_WAIT:
		if (st->has_e2)
			rc = run_value(r, st, &st->e2, &y);
		if (!rc)
			rc = nf_event_wait(r->rt, r->objs[st->a], y, &e);
		if (rc == NF_ETIMEOUT && st->has_e2)
			rc = 0;
		break;
	case SC_OP_CPU_SIGNAL:
		rc = run_value(r, st, &st->e1, &x);
		if (!rc)
			rc = nf_cpu_signal(r->rt, r->objs[st->a], x, &e);
		break;
	case SC_OP_DISPLAY: {
		struct nf_display_desc d = st->ddesc;

		d.name = r->sc->syms[st->a].name;
		rc = nf_display_create(r->rt, r->objs[st->b], &d, &r->objs[st->a], &e);
		break;
	}
	case SC_OP_PRESENT:
		rc = nf_present(r->rt, r->objs[st->a], r->objs[st->b], st->node, NULL, &e);
		r->ops++;
		break;
	case SC_OP_THREAD:
		rc = run_value(r, st, &st->e1, &x);
		if (!rc)
			nf_runtime_set_thread(r->rt, (uint32_t)x);
		break;
	case SC_OP_REPEAT:
		rc = run_value(r, st, &st->e1, &x);
		for (uint64_t i = 0; !rc && i < x; i++) {
			if (++r->steps > SC_MAX_STEPS)
				return rerr(r, st, "the scenario ran more than %llu statements (the limit)",
					    (unsigned long long)SC_MAX_STEPS);
			/* Empty or op-less loops still notice an interrupt (threaded runs
			 * take real time: 1024 statements of advance 1ms is a second). */
			if (r->steps >= r->next_tick) {
				r->next_tick = r->steps + 1024;
				if (r->progress && r->progress->tick &&
				    (rc = r->progress->tick(r->progress->ctx, r->ops)) != 0)
					return rc;
			}
			r->vars[st->var_depth] = i;
			rc = run_block(r, st->body, st->n_body);
		}
		return rc;
	}
	if (rc && e.code)
		return nf_error_set(r->err, rc, "%s:%u: %s", r->sc->name, st->line, e.msg);
	return rc;
}

static int run_block(struct sc_run *r, const struct sc_stmt *v, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		int rc = run_stmt(r, &v[i]);
		if (rc)
			return rc;
	}
	return 0;
}

int nf_scenario_run(const struct nf_scenario *s, nf_runtime *rt,
		    const struct nf_scenario_progress *progress, struct nf_error *err)
{
	struct sc_run r = { s, rt, progress, err, NULL, { 0 }, 0, 0, 1024 };
	int rc;

	r.objs = calloc(s->n_syms ? s->n_syms : 1, sizeof(*r.objs));
	if (!r.objs)
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	rc = run_block(&r, s->stmts, s->n_stmts);
	free(r.objs);
	return rc;
}
