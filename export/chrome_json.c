/*
 * The Chrome trace event format (JSON object form): {"displayTimeUnit":"ns",
 * "traceEvents":[...]}, as chrome://tracing and Perfetto UI open it. Slices
 * are complete events ("X", ts and dur in microseconds, written with three
 * decimals so nanoseconds stay exact), names come from metadata events ("M":
 * process_name, thread_name, sort indexes), flows are "s"/"f" pairs binding to
 * the enclosing slices ("f" with "bp":"e"), counters "C" events. Every
 * string from the database is written by nf_esc_json (controls escaped,
 * bytes that are not UTF-8 as U+FFFD), so the file is always valid JSON.
 */
#include "export_int.h"
#include "contract/escape.h"
#include "contract/sattime.h"

#include <stdlib.h>
#include <string.h>

struct cj_writer {
	struct nf_xwriter w;
	int first;
};

/* Unsigned decimal into d; returns the length: the digits counted first
 * (compares, no divisions), then written two at a time from the end (ts,
 * dur, pid and tid of every event: the writer's most frequent work). */
static size_t put_u64(char *d, uint64_t v)
{
	static const char pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				       "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				       "8081828384858687888990919293949596979899";
	size_t n = 1;

	for (uint64_t p10 = 10; n < 20 && v >= p10; p10 *= 10)
		n++;
	char *p = d + n;

	while (v >= 100) {
		unsigned k = (unsigned)(v % 100) * 2;

		v /= 100;
		*--p = pairs[k + 1];
		*--p = pairs[k];
	}
	if (v >= 10) {
		*--p = pairs[v * 2 + 1];
		*--p = pairs[v * 2];
	} else {
		*--p = (char)('0' + v);
	}
	return n;
}

static size_t put_i64(char *d, int64_t v)
{
	if (v < 0) {
		d[0] = '-';
		return 1 + put_u64(d + 1, (uint64_t)0 - (uint64_t)v);
	}
	return put_u64(d, (uint64_t)v);
}

/* Nanoseconds as microseconds with three decimals ("12.345"). */
static size_t put_us(char *d, int64_t ns)
{
	size_t n = 0;
	uint64_t a;

	if (ns < 0) {
		d[n++] = '-';
		a = (uint64_t)0 - (uint64_t)ns;
	} else {
		a = (uint64_t)ns;
	}
	n += put_u64(d + n, a / 1000);
	d[n++] = '.';
	d[n++] = (char)('0' + a / 100 % 10);
	d[n++] = (char)('0' + a / 10 % 10);
	d[n++] = (char)('0' + a % 10);
	return n;
}

/* key (a literal of at most 40 bytes) and a number, formatted straight into the output. */
static void out_num_n(struct nf_xout *o, const char *key, size_t kn, int64_t v)
{
	unsigned char *d = nf_xout_reserve(o, kn + 24);

	if (!d)
		return;
	memcpy(d, key, kn);
	o->len += kn + put_i64((char *)d + kn, v);
}

static void out_us_n(struct nf_xout *o, const char *key, size_t kn, int64_t ns)
{
	unsigned char *d = nf_xout_reserve(o, kn + 28);

	if (!d)
		return;
	memcpy(d, key, kn);
	o->len += kn + put_us((char *)d + kn, ns);
}

#define out_num(o, key, v) out_num_n((o), (key), sizeof(key) - 1, (v))
#define out_us(o, key, ns) out_us_n((o), (key), sizeof(key) - 1, (ns))

static int xout_write(void *ctx, const char *p, size_t n)
{
	nf_xout_put(ctx, p, n);
	return 0;
}

/* A JSON string (nf_esc_json: quotes, escapes, controls and noncharacters
 * as \u escapes, bytes that are not UTF-8 as U+FFFD). */
static void out_jstr(struct nf_xout *o, const char *str)
{
	size_t n;
	unsigned char *d;

	str = str ? str : "";
	if (!nf_esc_json_plain(str, &n)) {
		nf_esc_json(str, n + strlen(str + n), 0, xout_write, o);
	} else if ((d = nf_xout_reserve(o, n + 2))) {
		/* what nf_esc_json writes of it, in one piece */
		d[0] = '"';
		memcpy(d + 1, str, n);
		d[n + 1] = '"';
		o->len += n + 2;
	}
}

static void sep(struct cj_writer *cw)
{
	if (!cw->first)
		nf_xout_put(cw->w.out, ",\n", 2);
	cw->first = 0;
}

/* {"ph":"M","pid":P,"tid":T,"name":WHAT,"args":{"name"|"sort_index":...}} */
static void meta(struct cj_writer *cw, int32_t pid, int32_t tid, const char *what,
		 const char *name, int32_t sort)
{
	struct nf_xout *o = cw->w.out;

	sep(cw);
	out_num(o, "{\"ph\":\"M\",\"pid\":", pid);
	out_num(o, ",\"tid\":", tid);
	NF_XOUT_LIT(o, ",\"name\":\"");
	nf_xout_str(o, what);
	NF_XOUT_LIT(o, "\",\"args\":{");
	if (name) {
		NF_XOUT_LIT(o, "\"name\":");
		out_jstr(o, name);
	} else {
		out_num(o, "\"sort_index\":", sort);
	}
	NF_XOUT_LIT(o, "}}");
}

static int cj_status(struct cj_writer *cw)
{
	return cw->w.out->failed ? NF_EIO : 0;
}

static int cj_begin(struct nf_xwriter *w)
{
	NF_XOUT_LIT(w->out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
	return cj_status((struct cj_writer *)w);
}

static int cj_track(struct nf_xwriter *w, const struct nf_xtrack *t)
{
	struct cj_writer *cw = (struct cj_writer *)w;

	switch (t->kind) {
	case NF_XT_PROCESS:
		meta(cw, t->pid, 0, "process_name", t->name, 0);
		meta(cw, t->pid, 0, "process_sort_index", NULL, t->sort);
		break;
	case NF_XT_THREAD:
	case NF_XT_PLAIN:
		if (t->tid == 0)
			break;
		meta(cw, t->pid, t->tid, "thread_name", t->name, 0);
		meta(cw, t->pid, t->tid, "thread_sort_index", NULL, t->sort);
		break;
	case NF_XT_COUNTER:
		break;  /* a "C" event names its counter */
	}
	return cj_status(cw);
}

static void head(struct cj_writer *cw, const char *ph, const struct nf_xtrack *t, int64_t ts)
{
	struct nf_xout *o = cw->w.out;

	sep(cw);
	NF_XOUT_LIT(o, "{\"ph\":\"");
	nf_xout_str(o, ph);
	out_num(o, "\",\"pid\":", t->pid);
	out_num(o, ",\"tid\":", t->tid);
	out_us(o, ",\"ts\":", ts);
}

static void args(struct nf_xout *o, const struct nf_xevent *e)
{
	NF_XOUT_LIT(o, ",\"args\":{");
	for (int i = 0; i < e->n_args; i++) {
		const struct nf_xarg *a = &e->args[i];

		if (i)
			nf_xout_put(o, ",", 1);
		/* Keys are our own literals, plain ASCII: no escaping. */
		{
			size_t kn = strlen(a->key);
			unsigned char *d = nf_xout_reserve(o, kn + 3);

			if (!d)
				return;
			d[0] = '"';
			memcpy(d + 1, a->key, kn);
			d[kn + 1] = '"';
			d[kn + 2] = ':';
			o->len += kn + 3;
		}
		if (a->type == NF_XA_STR) {
			out_jstr(o, a->s);
		} else if (a->type == NF_XA_HEX) {
			char b[24];
			uint64_t v = (uint64_t)a->i;
			size_t n = 0;
			int started = 0;

			b[n++] = '"';
			b[n++] = '0';
			b[n++] = 'x';
			for (int sh = 60; sh >= 0; sh -= 4) {
				unsigned d = (unsigned)(v >> sh) & 15;

				if (d || started || sh == 0) {
					b[n++] = "0123456789abcdef"[d];
					started = 1;
				}
			}
			b[n++] = '"';
			nf_xout_put(o, b, n);
		} else {
			out_num_n(o, "", 0, a->i);
		}
	}
	NF_XOUT_LIT(o, "}}");
}

static void flow(struct cj_writer *cw, const char *ph, const struct nf_xtrack *t, int64_t ts,
		 uint64_t id)
{
	struct nf_xout *o = cw->w.out;

	head(cw, ph, t, ts);
	out_num(o, ",\"id\":", (int64_t)id);
	NF_XOUT_LIT(o, ",\"cat\":\"dep\",\"name\":\"release\"");
	if (ph[0] == 'f')
		NF_XOUT_LIT(o, ",\"bp\":\"e\"");
	NF_XOUT_LIT(o, "}");
}

static int cj_event(struct nf_xwriter *w, const struct nf_xevent *e)
{
	struct cj_writer *cw = (struct cj_writer *)w;
	struct nf_xout *o = w->out;
	/* Flows bind to slices: an instant that carries one is a zero-length slice. */
	int as_slice = !e->instant || e->n_flows_out || e->flow_in || e->n_flows_in;

	head(cw, as_slice ? "X" : "i", e->track, e->ts);
	if (as_slice)
		out_us(o, ",\"dur\":", nf_time_sub(e->end, e->ts)); /* saturated: never negative */
	else
		NF_XOUT_LIT(o, ",\"s\":\"t\"");
	NF_XOUT_LIT(o, ",\"name\":");
	out_jstr(o, e->name);
	if (e->cat) {
		NF_XOUT_LIT(o, ",\"cat\":");
		out_jstr(o, e->cat);
	}
	args(o, e);
	if (!e->instant && e->stall_ts >= 0) {
		head(cw, "X", e->track, e->stall_ts);
		out_us(o, ",\"dur\":", nf_time_sub(e->end, e->stall_ts));
		/* Nested in its wait, which carries everything else. */
		NF_XOUT_LIT(o, ",\"name\":\"stall\"}");
	}
	for (size_t i = 0; i < e->n_flows_out; i++)
		flow(cw, "s", e->track, e->ts, e->flows_out[i]);
	/* Inside the wait, just before its end: after the signal was queued (flows
	 * are linked in time order) and clear of the slice's edge. */
	if (e->flow_in)
		flow(cw, "f", e->track, e->end - 1 > e->ts ? e->end - 1 : e->ts, e->flow_in);
	for (size_t i = 0; i < e->n_flows_in; i++)
		flow(cw, "f", e->track, e->end - 1 > e->ts ? e->end - 1 : e->ts, e->flows_in[i]);
	return cj_status(cw);
}

static int cj_counter(struct nf_xwriter *w, const struct nf_xtrack *t, int64_t ts, int64_t value)
{
	struct cj_writer *cw = (struct cj_writer *)w;
	struct nf_xout *o = w->out;

	sep(cw);
	out_num(o, "{\"ph\":\"C\",\"pid\":", t->pid);
	out_us(o, ",\"ts\":", ts);
	NF_XOUT_LIT(o, ",\"name\":");
	out_jstr(o, t->name);
	out_num(o, ",\"args\":{\"lost entries\":", value);
	NF_XOUT_LIT(o, "}}");
	return cj_status(cw);
}

static int cj_end(struct nf_xwriter *w)
{
	NF_XOUT_LIT(w->out, "\n]}\n");
	return cj_status((struct cj_writer *)w);
}

static void cj_destroy(struct nf_xwriter *w)
{
	free(w);
}

struct nf_xwriter *nf_export_chrome_create(struct nf_xout *out)
{
	struct cj_writer *cw = calloc(1, sizeof(*cw));

	if (!cw)
		return NULL;
	cw->first = 1;
	cw->w.begin = cj_begin;
	cw->w.track = cj_track;
	cw->w.event = cj_event;
	cw->w.counter = cj_counter;
	cw->w.end = cj_end;
	cw->w.destroy = cj_destroy;
	cw->w.out = out;
	return &cw->w;
}
