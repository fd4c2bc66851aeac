/*
 * `nftrace import FILE.txt`: ftrace text (what `trace-cmd report` prints and
 * what tracefs' `trace` file gives) into a session directory, through the
 * same decoder as trace.dat files (kernel/decode.c), so both give the same
 * kernel stream.
 *
 * The text has no event formats: each line's event and layout pick a
 * synthetic format, made here and parsed into a tep handle, whose fields are
 * named as the decoder looks them up (numbers as u64, strings as
 * __data_loc char[]), and the line becomes a binary record of that format.
 * A layout is a template of the event's print format (tx_events below: the
 * kernel's TP_printk, and trace-cmd's sched plugin for sched_switch and
 * sched_wakeup); an event with no template, or a line its templates do not
 * match, keeps its text (the __info string, which the format prints) and the
 * decoder makes it a KernelRaw, as it does with events it does not know in a
 * trace.dat. The text does not name an event's system: the decoder's events
 * get theirs from the table, the others "?".
 *
 * Two passes: the first checks every line (a line that cannot be read is an
 * error naming FILE:LINE) and collects the header (CPU count), the first time
 * and the thread names; the second decodes.
 */
#define _GNU_SOURCE /* memmem, getline */
#include "kernel_int.h"
#include "contract/errors.h"

#include "contract/infile.h"
#include "contract/record.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef NF_VERSION
#define NF_VERSION "0.0.0"
#endif

/* Bounds on untrusted input. */
#define TX_MAX_LINE (64u * 1024u)     /* bytes of one line */
#define TX_MAX_CPUS 8192u             /* the kernel's NR_CPUS limit */
#define TX_MAX_VARIANTS 8192u         /* distinct (event, layout) pairs: event ids (a kernel has
                                         * about 2000 events; libtraceevent adds them in quadratic time) */
#define TX_MAX_CAPS 12
#define TX_MATCH_STEPS (1l << 20)     /* steps of one template match (its backtracking) */

/*
 * The events the decoder knows, with the layouts their lines take. In a
 * template, {K:NAME} captures a field: K is s (a string: as short as the rest
 * of the template allows), d (a decimal number, maybe negative), x (hex, with
 * or without 0x; "(nil)" is 0), P (a pointer printed without 0x: 8 or 16 hex
 * digits), S (a task state as the kernel's sched_switch prints it: R, or
 * "|"-joined letters of its bits, "+" for preempted), W (a task state as
 * libtraceevent's sched_switch plugin prints it: its letters "SDTtZXxW" are
 * bits 0-7, other bits are not printed); NAME "_" reads and drops it. {*}
 * takes the rest of the line. Anything else is literal.
 */
struct tx_event {
	const char *name, *system;
	const char *tmpl[4];
};

#define TX_FENCE "driver={s:driver} timeline={s:timeline} context={d:context} seqno={d:seqno}"
#define TX_I915 "dev={d:_}, engine={d:class}:{d:instance}, ctx={d:ctx}, seqno={d:seqno}"
#define TX_SCHED616 "dev={s:dev}, fence={d:fence_context}:{d:fence_seqno}, ring={s:name}, job count:{d:_}, " \
		    "hw job count:{d:_}, client_id:{d:client_id}"
#define TX_SCHED "entity={x:_}, id={d:id}, fence={x:fence}, ring={s:name}, job count:{d:_}, hw job count:{d:_}"
#define TX_AMD_PTR "sched_job={d:sched_job_id}, timeline={s:timeline}, context={d:context}, seqno={d:seqno}, " \
		   "ring_name={P:_}, num_ibs={d:_}"
#define TX_AMD "sched_job={d:sched_job_id}, timeline={s:timeline}, context={d:context}, seqno={d:seqno}, " \
	       "ring_name={s:ring}, num_ibs={d:_}"
#define TX_XE_JOB "fence={x:fence}, seqno={d:seqno}, lrc_seqno={d:_}, guc_id={d:guc_id}, {*}"
#define TX_XE_FENCE "ctx={x:ctx}, fence={x:fence}, seqno={d:seqno}"
#define TX_XE_QUEUE "{d:class}:{x:_}, gt={d:_}, width={d:_}, guc_id={d:guc_id}, {*}"

static const struct tx_event tx_events[] = {
	/* the function tracer's lines (tx_event_line): raw, as in a trace.dat */
	{ "function", "ftrace", { "{*}" } },
	{ "dma_fence_init", "dma_fence", { TX_FENCE } },
	{ "dma_fence_emit", "dma_fence", { TX_FENCE } },
	{ "dma_fence_enable_signal", "dma_fence", { TX_FENCE } },
	{ "dma_fence_signaled", "dma_fence", { TX_FENCE } },
	{ "dma_fence_wait_start", "dma_fence", { TX_FENCE } },
	{ "dma_fence_wait_end", "dma_fence", { TX_FENCE } },
	{ "dma_fence_destroy", "dma_fence", { TX_FENCE } },
	{ "sched_switch", "sched",
	  { "prev_comm={s:prev_comm} prev_pid={d:prev_pid} prev_prio={d:prev_prio} prev_state={S:prev_state} ==> "
	    "next_comm={s:next_comm} next_pid={d:next_pid} next_prio={d:next_prio}",
	    /* trace-cmd's sched_switch plugin */
	    "{s:prev_comm}:{d:prev_pid} [{d:prev_prio}] {W:prev_state} ==> {s:next_comm}:{d:next_pid} [{d:next_prio}]" } },
	{ "sched_wakeup", "sched",
	  { "comm={s:comm} pid={d:pid} prio={d:prio} target_cpu={d:target_cpu}",
	    "comm={s:comm} pid={d:pid} prio={d:prio} success={d:_} target_cpu={d:target_cpu}",
	    /* trace-cmd's sched_wakeup plugin */
	    "{s:comm}:{d:pid} [{d:prio}] CPU:{d:target_cpu}",
	    "{s:comm}:{d:pid} [{d:prio}] success={d:_} CPU:{d:target_cpu}" } },
	{ "drm_vblank_event", "drm",
	  { "crtc={d:crtc}, seq={d:seq}", "crtc={d:crtc}, seq={d:seq}, {*}" } },
	{ "i915_flip_request", "i915", { "plane={d:plane}, obj={x:obj}" } },
	{ "i915_flip_complete", "i915", { "plane={d:plane}, obj={x:obj}" } },
	/* 4.11's ring_name is a pointer (the decoder then takes the timeline) */
	{ "amdgpu_cs_ioctl", "amdgpu", { TX_AMD_PTR, TX_AMD } },
	{ "amdgpu_sched_run_job", "amdgpu", { TX_AMD_PTR, TX_AMD } },
	{ "drm_sched_job", "gpu_scheduler", { TX_SCHED } },
	{ "drm_run_job", "gpu_scheduler", { TX_SCHED } },
	{ "drm_sched_process_job", "gpu_scheduler", { "fence={x:fence} signaled" } },
	{ "drm_sched_job_wait_dep", "gpu_scheduler",
	  { "job ring={s:name}, id={d:id}, depends fence={x:_}, context={d:ctx}, seq={d:seqno}" } },
	{ "drm_sched_job_queue", "gpu_scheduler", { TX_SCHED616 } },
	{ "drm_sched_job_run", "gpu_scheduler", { TX_SCHED616 } },
	{ "drm_sched_job_done", "gpu_scheduler", { "fence={d:fence_context}:{d:fence_seqno} signaled" } },
	{ "drm_sched_job_add_dep", "gpu_scheduler",
	  { "fence={d:fence_context}:{d:fence_seqno} depends on fence={d:ctx}:{d:seqno}" } },
	{ "drm_sched_job_unschedulable", "gpu_scheduler",
	  { "fence={d:fence_context}:{d:fence_seqno} depends on unsignalled fence={d:ctx}:{d:seqno}" } },
	{ "xe_sched_job_exec", "xe", { "dev={s:dev}, " TX_XE_JOB, TX_XE_JOB } },
	{ "xe_sched_job_run", "xe", { "dev={s:dev}, " TX_XE_JOB, TX_XE_JOB } },
	{ "xe_hw_fence_signal", "xe", { "dev={s:dev}, " TX_XE_FENCE, TX_XE_FENCE } },
	{ "xe_hw_fence_create", "xe", { "dev={s:dev}, " TX_XE_FENCE, TX_XE_FENCE } },
	{ "i915_request_add", "i915", { TX_I915 ", {*}" } },
	{ "i915_request_submit", "i915", { TX_I915 ", {*}" } },
	{ "i915_request_in", "i915", { TX_I915 ", {*}" } },
	{ "i915_request_out", "i915", { TX_I915 ", completed?={d:completed}" } },
	{ "i915_request_retire", "i915", { TX_I915 ", {*}" } },
};

/* Any xe_exec_queue_* event (the decoder takes them all). */
static const struct tx_event tx_xe_queue = {
	"xe_exec_queue_", "xe", { "dev={s:dev}, " TX_XE_QUEUE, TX_XE_QUEUE }
};

/* The marker: ftrace:print, printed "IP: BUF" (IP a symbol or an address);
 * tracefs prints the event as "tracing_mark_write: BUF". */
#define TX_PRINT_LAYOUT 100
static const struct tx_event tx_print = { "print", "ftrace", { NULL } };

/* One parsed line. */
enum tx_kind { TX_SKIP, TX_CPUS, TX_LOST, TX_ENTRIES, TX_EVENT };

struct tx_line {
	enum tx_kind kind;
	unsigned long cpus;                /* TX_CPUS */
	bool online;                       /* TX_CPUS of "#P:N": the CPUs online, not their highest number */
	unsigned long cpu;                 /* TX_LOST, TX_EVENT */
	long long lost;                    /* TX_LOST; -1: count unknown */
	bool entries;                      /* a tracefs header line: */
	unsigned long long in_buffer, written; /* entries-in-buffer/entries-written */
	const char *comm;                  /* TX_EVENT */
	size_t comm_len;
	long pid;
	uint64_t ts;
	int digits;                        /* the timestamp's decimals */
	const char *event;
	size_t event_len;
	const char *body;
	size_t body_len;
};

struct tx_cap {
	const char *name; /* NULL: dropped */
	size_t name_len;
	char kind;
	const char *s;
	size_t n;
	uint64_t v;
};

/* One (event, layout): a synthetic format and its event id. */
struct tx_variant {
	char *key;                   /* "event\001layout" */
	int id;
	int layout;                  /* template index, -1: the text only, TX_PRINT_LAYOUT */
	int ncaps;
};

struct tx_reader {
	const char *path;
	struct nf_error *err;
	struct tep_handle *tep;
	struct tx_variant *vars;     /* open addressing on key */
	size_t var_cap, n_vars;
	unsigned char *rec;          /* the record being built */
	size_t rec_cap;
	uint64_t lineno;
	uint64_t unmatched;          /* lines of a known event no layout matched */
	uint64_t first_unmatched;
};

static int tx_fail(struct tx_reader *r, const char *fmt, const char *what)
{
	return nf_error_set(r->err, NF_EFORMAT, "%s:%" PRIu64 ": %s%s", r->path, r->lineno, fmt, what ? what : "");
}

static bool tx_isdigit(char c)
{
	return c >= '0' && c <= '9';
}

static bool tx_isspace(char c)
{
	return c == ' ' || c == '\t';
}

static bool tx_prefix(const char *s, const char *e, const char *p)
{
	size_t n = strlen(p);

	return (size_t)(e - s) >= n && memcmp(s, p, n) == 0;
}

/* A decimal number at *p (digits only), at most 19 digits. */
static bool tx_ulong(const char **p, const char *e, unsigned long long *v)
{
	const char *s = *p;
	unsigned long long x = 0;

	while (*p < e && tx_isdigit(**p) && *p - s < 19)
		x = x * 10 + (unsigned long long)(*(*p)++ - '0');
	if (*p == s || (*p < e && tx_isdigit(**p)))
		return false;
	*v = x;
	return true;
}

/*
 * The header and marker lines: trace-cmd report's "cpus=N", "version = N",
 * "CPU N is empty", its lost-events lines "CPU:N [M EVENTS DROPPED]" and
 * "CPU:N [EVENTS DROPPED]"; tracefs' "CPU:N [LOST M EVENTS]", its comments
 * ("#P:N" and "entries-in-buffer/entries-written: A/B" read).
 */
static bool tx_header(const char *s, const char *e, struct tx_line *l)
{
	const char *p = s;
	unsigned long long a, b;

	if (*s == '#') {
		const char *c = s, *q;

		l->kind = TX_SKIP;
		for (q = s; q + 3 <= e; q++) {
			if (!memcmp(q, "#P:", 3)) {
				c = q + 3;
				if (tx_ulong(&c, e, &a) && a > 0 && a <= TX_MAX_CPUS) {
					l->kind = TX_CPUS;
					l->cpus = (unsigned long)a;
					l->online = true;
				}
			}
		}
		q = memmem(s, (size_t)(e - s), "entries-in-buffer/entries-written: ", 35);
		if (q) {
			c = q + 35;
			if (tx_ulong(&c, e, &a) && c < e && *c++ == '/' && tx_ulong(&c, e, &b)) {
				l->kind = l->kind == TX_SKIP ? TX_ENTRIES : l->kind;
				l->entries = true;
				l->in_buffer = a;
				l->written = b;
			}
		}
		return true;
	}
	if (tx_prefix(s, e, "cpus=")) {
		p = s + 5;
		if (!tx_ulong(&p, e, &a) || p != e || a == 0 || a > TX_MAX_CPUS)
			return false;
		l->kind = TX_CPUS;
		l->cpus = (unsigned long)a;
		return true;
	}
	if (tx_prefix(s, e, "version = ")) {
		p = s + 10;
		l->kind = TX_SKIP;
		return tx_ulong(&p, e, &a) && p == e;
	}
	if (tx_prefix(s, e, "CPU ")) {
		p = s + 4;
		l->kind = TX_SKIP;
		return tx_ulong(&p, e, &a) && (size_t)(e - p) == 9 && !memcmp(p, " is empty", 9);
	}
	if (tx_prefix(s, e, "CPU:")) {
		p = s + 4;
		if (!tx_ulong(&p, e, &a) || a >= TX_MAX_CPUS || !tx_prefix(p, e, " ["))
			return false;
		l->kind = TX_LOST;
		l->cpu = (unsigned long)a;
		p += 2;
		if ((size_t)(e - p) == 15 && !memcmp(p, "EVENTS DROPPED]", 15)) {
			l->lost = -1;
			return true;
		}
		if (tx_prefix(p, e, "LOST ")) {
			p += 5;
			return tx_ulong(&p, e, &b) && (size_t)(e - p) == 8 && !memcmp(p, " EVENTS]", 8) &&
			       (l->lost = (long long)b, b > 0 && b < (1ull << 62));
		}
		return tx_ulong(&p, e, &b) && (size_t)(e - p) == 16 && !memcmp(p, " EVENTS DROPPED]", 16) &&
		       (l->lost = (long long)b, b > 0 && b < (1ull << 62));
	}
	return false;
}

/* "SECONDS.FRACTION:" into ns; false when it is not one. */
static bool tx_timestamp(const char *s, const char *e, uint64_t *ns, int *digits)
{
	const char *p = s;
	unsigned long long sec, frac = 0;
	int d = 0;

	if (!tx_ulong(&p, e, &sec) || sec > 18000000000ull || p >= e || *p != '.')
		return false;
	for (p++; p < e && tx_isdigit(*p); p++, d++) {
		if (d == 9)
			return false;
		frac = frac * 10 + (unsigned long long)(*p - '0');
	}
	if (d == 0 || p != e)
		return false;
	for (int i = d; i < 9; i++)
		frac *= 10;
	*ns = sec * 1000000000ull + frac;
	*digits = d;
	return true;
}

/* tracefs' and trace-cmd -l's latency flags ("d..2.", "....", "dNh1"). */
static bool tx_flags(const char *s, const char *e)
{
	if (e - s < 1 || e - s > 8)
		return false;
	for (; s < e; s++)
		if (!strchr(".dDXnNpPhHsSbBzZ0123456789", *s))
			return false;
	return true;
}

/*
 * An event line: "COMM-PID [CPU] FLAGS? SECONDS.FRACTION: EVENT: BODY", the
 * COMM right-aligned and maybe holding spaces and '-', an optional
 * "(TGID)" after PID (tracefs' record-tgid option). Returns NULL, or what is
 * wrong.
 */
static const char *tx_event_line(const char *s, const char *e, struct tx_line *l)
{
	const char *open = s;

	while (s < e && tx_isspace(*s))
		s++;
	/* the CPU column: " [DIGITS]" after "COMM-PID" (and a TGID) */
	for (;;) {
		const char *p, *q, *c;
		unsigned long long cpu, pid;

		open = memchr(open, '[', (size_t)(e - open));
		if (!open)
			return "not an event line (no [CPU] column after TASK-PID)";
		c = open + 1;
		if (open == s || !tx_isspace(open[-1]) || !tx_ulong(&c, e, &cpu) || c >= e || *c != ']') {
			open++;
			continue;
		}
		q = open;
		while (q > s && tx_isspace(q[-1]))
			q--;
		if (q > s && q[-1] == ')') { /* "(TGID)" or "(-------)" */
			/* a few characters back, not to the line's start: a line of
			 * many ") [0]" would be quadratic */
			p = q - 1;
			while (p > s && p[-1] != '(' && q - p < 16)
				p--;
			if (p == s || p[-1] != '(') {
				open++;
				continue;
			}
			q = p - 1;
			while (q > s && tx_isspace(q[-1]))
				q--;
		}
		p = q;
		while (p > s && tx_isdigit(p[-1]))
			p--;
		if (p == q || p == s || p[-1] != '-' || q - p > 7) {
			open++;
			continue;
		}
		{
			const char *t = p;

			if (!tx_ulong(&t, q, &pid) || pid > 0x7fffffff) {
				open++;
				continue;
			}
		}
		if (cpu >= TX_MAX_CPUS)
			return "CPU number too large";
		l->comm = s;
		l->comm_len = (size_t)(p - 1 - s);
		l->pid = (long)pid;
		l->cpu = (unsigned long)cpu;
		s = c + 1;
		break;
	}
	/* FLAGS? TIMESTAMP: */
	for (int i = 0; i < 2; i++) {
		const char *t;

		while (s < e && tx_isspace(*s))
			s++;
		t = s;
		while (t < e && !tx_isspace(*t))
			t++;
		if (t > s && t[-1] == ':' && tx_timestamp(s, t - 1, &l->ts, &l->digits)) {
			/* the session's times are int64 ns */
			if (l->ts >= (uint64_t)INT64_MAX)
				return "a timestamp too large (2^63 ns or more)";
			s = t;
			break;
		}
		if (i == 1 || !tx_flags(s, t)) {
			const char *d = s;
			unsigned long long v;

			if (tx_ulong(&d, t, &v) && d == t - 1 && *d == ':')
				return "a timestamp without decimals (a counter clock such as x86-tsc or counter): "
				       "its unit is unknown";
			return "no SECONDS.FRACTION: timestamp after the [CPU] column";
		}
		s = t;
	}
	while (s < e && tx_isspace(*s))
		s++;
	l->event = s;
	while (s < e && ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || tx_isdigit(*s) || *s == '_'))
		s++;
	const char *tok = s;

	while (tok < e && !tx_isspace(*tok))
		tok++;
	if (tok > l->event && tok < e && tok[-1] != ':' && tx_prefix(tok + 1, e, "<-")) {
		/* the function tracer's "FUNC <-PARENT" (a name may be "foo.isra.0"):
		 * event ftrace:function, kept raw */
		l->body = l->event;
		l->body_len = (size_t)(e - l->event);
		l->event = "function";
		l->event_len = 8;
		l->kind = TX_EVENT;
		return NULL;
	}
	if (s == l->event || s >= e || *s != ':' || s - l->event > 200)
		return "no EVENT: name after the timestamp";
	l->event_len = (size_t)(s - l->event);
	s++;
	while (s < e && tx_isspace(*s))
		s++;
	l->body = s;
	l->body_len = (size_t)(e - s);
	l->kind = TX_EVENT;
	return NULL;
}

/* One line (without its newline; a trailing '\r' dropped). Returns NULL, or what is wrong. */
static const char *tx_parse(const char *s, size_t n, struct tx_line *l)
{
	const char *e = s + n, *b = s;

	memset(l, 0, sizeof(*l));
	if (memchr(s, '\0', n))
		return "a NUL byte (not text)";
	if (e > s && e[-1] == '\r')
		e--;
	while (b < e && tx_isspace(*b))
		b++;
	if (b == e) {
		l->kind = TX_SKIP;
		return NULL;
	}
	if (*b == '#')
		return tx_header(b, e, l) ? NULL : "a comment that does not read as one";
	/* a header line; else an event line (a thread may be called "CPU 0/KVM") */
	if ((tx_prefix(b, e, "cpus=") || tx_prefix(b, e, "version = ") || tx_prefix(b, e, "CPU ") ||
	     tx_prefix(b, e, "CPU:")) && tx_header(b, e, l))
		return NULL;
	memset(l, 0, sizeof(*l));
	return tx_event_line(s, e, l);
}

/*
 * A task state: the letters of the kernel's sched_switch print format (4.14
 * on, TASK_REPORT: "SDTtXZPI", '+' the preempted bit 0x100), or of
 * libtraceevent's sched_switch plugin ("SDTtZXxW", plugin true).
 */
static bool tx_state(const char *s, size_t n, bool plugin, uint64_t *v)
{
	const char *letters = plugin ? "SDTtZXxW" : "SDTtXZPI";
	uint64_t x = 0;

	if (n == 0)
		return false;
	if (!plugin && s[n - 1] == '+') {
		x |= 0x100;
		n--;
	}
	if (n == 1 && s[0] == 'R') {
		*v = x;
		return true;
	}
	for (size_t i = 0; i < n; i++) {
		const char *c;

		if (i % 2 == 1) {
			if (s[i] != '|')
				return false;
			continue;
		}
		if (!(c = strchr(letters, s[i])) || !*c)
			return false;
		x |= 1u << (c - letters);
	}
	*v = x;
	return n % 2 == 1;
}

/* Matches body [b, e) against template t, filling caps[*n...]. Each string
 * capture tries every end, so two in a template are quadratic in the line:
 * *steps bounds the work (a line that needs more is not matched, kept raw). */
static bool tx_match(const char *t, const char *b, const char *e, struct tx_cap *caps, int *n, long *steps)
{
	int n0 = *n;

	if (--*steps < 0)
		return false;
	while (*t && *t != '{') {
		if (b >= e || *b != *t)
			return false;
		b++;
		t++;
	}
	if (!*t)
		return b == e;
	const char *close = strchr(t, '}');
	struct tx_cap *c;

	if (t[1] == '*')
		return true;
	if (*n >= TX_MAX_CAPS)
		return false;
	c = &caps[(*n)++];
	c->kind = t[1];
	c->name = t + 3;
	c->name_len = (size_t)(close - t - 3);
	if (c->name_len == 1 && c->name[0] == '_')
		c->name = NULL;
	t = close + 1;
	if (c->kind == 's') {
		/* as short as the rest allows */
		for (const char *x = b; x <= e && --*steps >= 0; x++) {
			if (*t && *t != '{' && (x == e || *x != *t))
				continue;
			c->s = b;
			c->n = (size_t)(x - b);
			if (tx_match(t, x, e, caps, n, steps))
				return true;
			*n = n0 + 1;
		}
		*n = n0;
		return false;
	}
	const char *p = b;

	c->v = 0;
	if (c->kind == 'd') {
		bool neg = p < e && *p == '-';
		unsigned long long v;

		if (neg)
			p++;
		/* as the kernel's %d/%lld prints it: down to INT64_MIN */
		if (!tx_ulong(&p, e, &v) || (neg && v > (uint64_t)INT64_MAX + 1))
			goto fail;
		c->v = neg ? (uint64_t)0 - v : v;
	} else if (c->kind == 'x' || c->kind == 'P') {
		if (c->kind == 'x' && (size_t)(e - p) >= 5 && !memcmp(p, "(nil)", 5)) {
			p += 5;
		} else {
			const char *h;

			if (c->kind == 'x' && e - p >= 2 && p[0] == '0' && p[1] == 'x')
				p += 2;
			h = p;
			for (; p < e && strchr("0123456789abcdefABCDEF", *p) && *p; p++)
				if (p - h >= 16)
					goto fail;
			/* P: a kernel pointer printed as %p without 0x: 8 or 16 hex digits */
			if (p == h || (c->kind == 'P' && p - h != 16 && p - h != 8))
				goto fail;
			for (const char *q = h; q < p; q++)
				c->v = c->v << 4 | (uint64_t)(tx_isdigit(*q) ? *q - '0' : (*q | 0x20) - 'a' + 10);
		}
	} else if (c->kind == 'S' || c->kind == 'W') {
		while (p < e && ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '|' || *p == '+'))
			p++;
		if (!tx_state(b, (size_t)(p - b), c->kind == 'W', &c->v))
			goto fail;
	} else {
		goto fail;
	}
	if (tx_match(t, p, e, caps, n, steps))
		return true;
fail:
	*n = n0;
	return false;
}

static const struct tx_event *tx_known(const char *ev, size_t n)
{
	for (size_t i = 0; i < sizeof(tx_events) / sizeof(tx_events[0]); i++)
		if (strlen(tx_events[i].name) == n && !memcmp(tx_events[i].name, ev, n))
			return &tx_events[i];
	if (n > 14 && !memcmp(ev, "xe_exec_queue_", 14))
		return &tx_xe_queue;
	return NULL;
}

/* "0x" and hex digits: the address a print event shows when no symbol names it. */
static bool tx_hex_name(const char *s, size_t n)
{
	if (n < 3 || n > 18 || memcmp(s, "0x", 2))
		return false;
	for (size_t i = 2; i < n; i++)
		if (!tx_isdigit(s[i]) && !((s[i] | 0x20) >= 'a' && (s[i] | 0x20) <= 'f'))
			return false;
	return true;
}

/* The marker lines: "print: IP: BUF", "tracing_mark_write: BUF" (tracefs), "0xADDR: BUF". */
static bool tx_marker(const struct tx_line *l, const char **buf, size_t *n)
{
	if (l->event_len == 5 && !memcmp(l->event, "print", 5)) {
		const char *c = memmem(l->body, l->body_len, ": ", 2);

		if (!c)
			return false;
		*buf = c + 2;
		*n = l->body_len - (size_t)(c + 2 - l->body);
		return true;
	}
	if ((l->event_len == 18 && !memcmp(l->event, "tracing_mark_write", 18)) ||
	    tx_hex_name(l->event, l->event_len)) {
		*buf = l->body;
		*n = l->body_len;
		return true;
	}
	return false;
}

static uint64_t tx_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static int tx_vars_grow(struct tx_reader *r)
{
	size_t ncap = r->var_cap ? r->var_cap * 2 : 256;
	struct tx_variant *nv = calloc(ncap, sizeof(*nv));

	if (!nv)
		return nf_error_set(r->err, NF_ENOMEM, "%s: out of memory", r->path);
	for (size_t i = 0; i < r->var_cap; i++) {
		if (!r->vars[i].key)
			continue;
		size_t j = tx_hash(r->vars[i].key) & (ncap - 1);

		while (nv[j].key)
			j = (j + 1) & (ncap - 1);
		nv[j] = r->vars[i];
	}
	free(r->vars);
	r->vars = nv;
	r->var_cap = ncap;
	return 0;
}

/* Appends to a growing format text. */
struct tx_buf {
	char *s;
	size_t len, cap;
	bool oom;
};

static void tx_put(struct tx_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void tx_put(struct tx_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if (b->s && (size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		size_t ncap = (b->cap ? b->cap : 512) * 2 + (size_t)n;
		char *ns = realloc(b->s, ncap);

		if (!ns) {
			b->oom = true;
			return;
		}
		b->s = ns;
		b->cap = ncap;
	}
}

/*
 * The record layout of a variant: the common fields (8 bytes), the number
 * captures (u64 each, in template order), the string captures' __data_loc
 * words and __info's (4 bytes each), then the strings. The print layout: the
 * common fields and "char buf[]" to the end.
 */
static int tx_variant_for(struct tx_reader *r, const struct tx_line *l, const struct tx_event *ke, int layout,
			  const struct tx_cap *caps, int ncaps, struct tx_variant **out)
{
	char key[256];
	size_t j;

	/* the marker's lines are ftrace:print whatever they are called */
	const char *name = layout == TX_PRINT_LAYOUT ? "print" : l->event;
	int name_len = layout == TX_PRINT_LAYOUT ? 5 : (int)l->event_len;

	snprintf(key, sizeof(key), "%.*s\001%d", name_len, name, layout);
	if ((r->n_vars + 1) * 2 > r->var_cap && tx_vars_grow(r))
		return r->err->code;
	j = tx_hash(key) & (r->var_cap - 1);
	while (r->vars[j].key) {
		if (!strcmp(r->vars[j].key, key)) {
			*out = &r->vars[j];
			return 0;
		}
		j = (j + 1) & (r->var_cap - 1);
	}
	if (r->n_vars >= TX_MAX_VARIANTS)
		return tx_fail(r, "more distinct events than this reader keeps", NULL);

	struct tx_buf b = { 0 };
	int id = (int)r->n_vars + 1, off = 8;

	tx_put(&b, "name: %.*s\nID: %d\nformat:\n", name_len, name, id);
	tx_put(&b, "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		   "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
		   "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
		   "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n");
	if (layout == TX_PRINT_LAYOUT) {
		tx_put(&b, "\tfield:char buf[];\toffset:8;\tsize:0;\tsigned:0;\n\nprint fmt: \"%%s\", REC->buf\n");
	} else {
		for (int pass = 0; pass < 2; pass++)
			for (int i = 0; i < ncaps; i++) {
				if (!caps[i].name || (caps[i].kind == 's') != (pass == 1))
					continue;
				if (pass == 0)
					tx_put(&b, "\tfield:u64 %.*s;\toffset:%d;\tsize:8;\tsigned:0;\n",
					       (int)caps[i].name_len, caps[i].name, off), off += 8;
				else
					tx_put(&b, "\tfield:__data_loc char[] %.*s;\toffset:%d;\tsize:4;\tsigned:0;\n",
					       (int)caps[i].name_len, caps[i].name, off), off += 4;
			}
		tx_put(&b, "\tfield:__data_loc char[] __info;\toffset:%d;\tsize:4;\tsigned:0;\n\n"
			   "print fmt: \"%%s\", __get_str(__info)\n", off);
	}
	if (b.oom) {
		free(b.s);
		return nf_error_set(r->err, NF_ENOMEM, "%s: out of memory", r->path);
	}
	int prc = tep_parse_event(r->tep, b.s, b.len, ke ? ke->system : "?");

	free(b.s);
	if (prc != 0)
		return tx_fail(r, "libtraceevent refused the format made for this event", NULL);
	r->vars[j].key = strdup(key);
	if (!r->vars[j].key)
		return nf_error_set(r->err, NF_ENOMEM, "%s: out of memory", r->path);
	r->vars[j].id = id;
	r->vars[j].layout = layout;
	r->vars[j].ncaps = ncaps;
	r->n_vars++;
	*out = &r->vars[j];
	return 0;
}

static int tx_reserve(struct tx_reader *r, size_t n)
{
	if (n <= r->rec_cap)
		return 0;
	unsigned char *nr = realloc(r->rec, n + 1024);

	if (!nr)
		return nf_error_set(r->err, NF_ENOMEM, "%s: out of memory", r->path);
	r->rec = nr;
	r->rec_cap = n + 1024;
	return 0;
}

static void tx_put_u64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8); /* the tep handle's byte order is this machine's */
}

/*
 * The record of an event line: its variant (made the first time), its
 * binary data in r->rec. *size gets its size.
 */
static int tx_record(struct tx_reader *r, const struct tx_line *l, int *size)
{
	const struct tx_event *ke = tx_known(l->event, l->event_len);
	struct tx_cap caps[TX_MAX_CAPS];
	struct tx_variant *v = NULL;
	int ncaps = 0, layout = -1, rc;
	const char *buf = NULL;
	size_t bn = 0;

	if (tx_marker(l, &buf, &bn)) {
		layout = TX_PRINT_LAYOUT;
		ke = &tx_print;
	} else if (ke) {
		for (int i = 0; i < 4 && ke->tmpl[i] && layout < 0; i++) {
			long steps = TX_MATCH_STEPS;

			ncaps = 0;
			if (tx_match(ke->tmpl[i], l->body, l->body + l->body_len, caps, &ncaps, &steps))
				layout = i;
		}
		if (layout < 0) {
			ncaps = 0;
			if (!r->unmatched++)
				r->first_unmatched = r->lineno;
		}
	} else if (l->event_len == 5 && !memcmp(l->event, "print", 5)) {
		ke = &tx_print; /* no "IP: ": kept raw */
	}
	/* common fields; a __data_loc says where in 16 bits, so a record holds 64 KiB */
	size_t need = 8 + (layout == TX_PRINT_LAYOUT ? bn + 1 : 8 * (size_t)ncaps + 4 * ((size_t)ncaps + 1) +
						 l->body_len + 1);

	for (int i = 0; i < ncaps; i++)
		need += caps[i].kind == 's' ? caps[i].n + 1 : 0;
	if (need > 0xffff && layout >= 0 && layout != TX_PRINT_LAYOUT) {
		/* its fields and its text do not fit together: the text alone, raw */
		layout = -1;
		ncaps = 0;
		need = 8 + 4 + l->body_len + 1;
		if (!r->unmatched++)
			r->first_unmatched = r->lineno;
	}
	if (need > 0xffff)
		return tx_fail(r, "a line too long for one event", NULL);
	if ((rc = tx_variant_for(r, l, ke, layout, caps, ncaps, &v)))
		return rc;
	if ((rc = tx_reserve(r, need)))
		return rc;
	unsigned char *p = r->rec;
	uint16_t type = (uint16_t)v->id;
	int32_t pid = (int32_t)l->pid;

	memset(p, 0, 8);
	memcpy(p, &type, 2);
	memcpy(p + 4, &pid, 4);
	if (layout == TX_PRINT_LAYOUT) {
		memcpy(p + 8, buf, bn);
		p[8 + bn] = '\0';
		*size = (int)(8 + bn + 1);
		return 0;
	}
	size_t off = 8, nnum = 0, nstr = 0;

	for (int i = 0; i < ncaps; i++)
		if (caps[i].name)
			caps[i].kind == 's' ? nstr++ : nnum++;
	size_t loc = 8 + 8 * nnum, data = loc + 4 * (nstr + 1);

	for (int i = 0; i < ncaps; i++)
		if (caps[i].name && caps[i].kind != 's') {
			tx_put_u64(p + off, caps[i].v);
			off += 8;
		}
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < ncaps + 1; i++) {
			const char *s;
			size_t n;
			uint32_t w;

			if (i < ncaps && (!caps[i].name || caps[i].kind != 's' || pass == 1))
				continue;
			if (i == ncaps && pass == 0)
				continue;
			s = i < ncaps ? caps[i].s : l->body;
			n = i < ncaps ? caps[i].n : l->body_len;
			w = (uint32_t)((n + 1) << 16 | data);
			memcpy(p + loc, &w, 4);
			loc += 4;
			memcpy(p + data, s, n);
			p[data + n] = '\0';
			data += n + 1;
		}
	*size = (int)data;
	return 0;
}

bool nf_kernel_text_file_is(const char *path)
{
	char buf[4096];
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	ssize_t n;
	bool yes = false;

	if (fd < 0)
		return false;
	n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, buf, sizeof(buf)) : -1;
	close(fd);
	if (n <= 0 || memchr(buf, '\0', (size_t)n))
		return false;
	/* the first lines that are not blank: a header or an event line decides */
	for (const char *s = buf, *e = buf + n; s < e;) {
		const char *nl = memchr(s, '\n', (size_t)(e - s));
		struct tx_line l;

		if (!nl)
			break; /* a line cut by the buffer: not enough to say */
		if (tx_parse(s, (size_t)(nl - s), &l))
			return false;
		if (l.kind == TX_EVENT || l.kind == TX_CPUS || l.kind == TX_ENTRIES)
			return true;
		if (l.kind == TX_SKIP && (tx_prefix(s, nl, "# tracer: ") || tx_prefix(s, nl, "version = ")))
			yes = true;
		s = nl + 1;
	}
	return yes;
}

bool nf_kernel_text_file_named(const char *path)
{
	size_t n = strlen(path);

	return (n > 4 && !strcmp(path + n - 4, ".txt")) || (n > 7 && !strcmp(path + n - 7, ".report"));
}

/* Reads lines of f; *line gets the next one (without '\n'). 0: a line, 1: end, else an error.
 * Never holds more than TX_MAX_LINE + 2 bytes: a hostile file of one endless
 * line is refused at 64 KiB, not read whole into memory. */
static int tx_getline(struct tx_reader *r, FILE *f, char **line, size_t *cap, size_t *len)
{
	size_t n = 0;
	int c;

	if (!*line) {
		if (!(*line = malloc(TX_MAX_LINE + 2)))
			return nf_error_set(r->err, NF_ENOMEM, "%s: out of memory", r->path);
		*cap = TX_MAX_LINE + 2;
	}
	while ((c = getc_unlocked(f)) != EOF && c != '\n') {
		if (n > TX_MAX_LINE) {
			r->lineno++;
			return tx_fail(r, "a line longer than 64 KiB", NULL);
		}
		(*line)[n++] = (char)c;
	}
	if (c == EOF) {
		if (ferror(f))
			return nf_error_set(r->err, NF_EIO, "%s: %s", r->path, strerror(errno));
		if (!n)
			return 1;
	}
	r->lineno++;
	(*line)[n] = '\0';
	*len = n;
	return 0;
}

struct tx_scan {
	bool has_cpus;
	unsigned long cpus, max_cpu;
	unsigned long online;        /* tracefs' "#P:N" (num_online_cpus() when it was read), 0: none */
	bool any;
	uint64_t first, last;
	int min_digits, max_digits;
	uint64_t events, in_buffer, written;
	bool has_entries;
};

/* Pass 1: every line read, the header, first time, thread names. */
static int tx_pass1(struct tx_reader *r, FILE *f, volatile int *interrupt, struct tx_scan *sc)
{
	char *line = NULL;
	size_t cap = 0, len = 0;
	int rc;

	sc->min_digits = 10;
	while ((rc = tx_getline(r, f, &line, &cap, &len)) == 0) {
		struct tx_line l;
		const char *why = tx_parse(line, len, &l);
		int size;

		if (why) {
			rc = tx_fail(r, why, NULL);
			break;
		}
		if ((r->lineno & 4095) == 0 && interrupt && *interrupt) {
			rc = nf_error_set(r->err, NF_EINTR, "%s: interrupted", r->path);
			break;
		}
		if (l.kind == TX_CPUS && l.online) {
			/* a CPU taken offline (or never brought up: nosmt) keeps its
			 * number: lines may name CPUs at or past N */
			sc->online = l.cpus;
		} else if (l.kind == TX_CPUS) {
			if (sc->has_cpus && sc->cpus != l.cpus) {
				rc = tx_fail(r, "a second CPU count, different from the first", NULL);
				break;
			}
			sc->has_cpus = true;
			sc->cpus = l.cpus;
		}
		if (l.entries) {
			sc->has_entries = true;
			sc->in_buffer = l.in_buffer;
			sc->written = l.written;
		}
		if ((l.kind == TX_LOST || l.kind == TX_EVENT) && sc->has_cpus && l.cpu >= sc->cpus) {
			char what[64];

			snprintf(what, sizeof(what), " (CPU %lu; cpus=%lu)", l.cpu, sc->cpus);
			rc = tx_fail(r, "a CPU the header does not have", what);
			break;
		}
		if (l.kind == TX_LOST && l.cpu > sc->max_cpu) {
			sc->max_cpu = l.cpu;
		}
		if (l.kind != TX_EVENT)
			continue;
		if (sc->any && l.ts < sc->last) {
			char what[96];

			snprintf(what, sizeof(what), " (%" PRIu64 " ns after %" PRIu64 ")", l.ts, sc->last);
			rc = tx_fail(r, "the time goes back: the lines are not in time order", what);
			break;
		}
		if (!sc->any)
			sc->first = l.ts;
		sc->any = true;
		sc->last = l.ts;
		sc->events++;
		if (l.cpu > sc->max_cpu)
			sc->max_cpu = l.cpu;
		if (l.digits < sc->min_digits)
			sc->min_digits = l.digits;
		if (l.digits > sc->max_digits)
			sc->max_digits = l.digits;
		/* the thread's name: what the COMM column says ("<...>": unknown) */
		if (l.comm_len && l.comm_len < 64 && !(l.comm_len == 5 && !memcmp(l.comm, "<...>", 5)) &&
		    !tep_is_pid_registered(r->tep, (int)l.pid)) {
			char comm[64];

			memcpy(comm, l.comm, l.comm_len);
			comm[l.comm_len] = '\0';
			if (tep_register_comm(r->tep, comm, (int)l.pid) != 0) {
				rc = nf_error_set(r->err, NF_ENOMEM, "%s: out of memory", r->path);
				break;
			}
		}
		if ((rc = tx_record(r, &l, &size)))
			break;
	}
	free(line);
	if (rc == 1)
		rc = 0;
	if (!rc && !sc->any)
		rc = nf_error_set(r->err, NF_EFORMAT, "%s: no event lines (an ftrace text with no events)", r->path);
	if (!rc && sc->has_cpus && sc->max_cpu >= sc->cpus)
		rc = nf_error_set(r->err, NF_EFORMAT, "%s: CPU %lu in the lines, the header says %lu CPUs", r->path,
				  sc->max_cpu, sc->cpus);
	return rc;
}

/* Pass 2: the lines through the decoder. */
static int tx_pass2(struct tx_reader *r, FILE *f, volatile int *interrupt, struct nf_kdecoder *d, unsigned long ncpus,
		    uint64_t *per_cpu)
{
	long long *lost = calloc(ncpus, sizeof(*lost));
	char *line = NULL;
	size_t cap = 0, len = 0;
	uint64_t last = 0;
	int rc;

	if (!lost)
		return nf_error_set(r->err, NF_ENOMEM, "%s: out of memory", r->path);
	r->lineno = 0;
	r->unmatched = 0;
	while ((rc = tx_getline(r, f, &line, &cap, &len)) == 0) {
		struct tx_line l;
		struct tep_record rec;
		int size;

		if (tx_parse(line, len, &l)) {
			rc = tx_fail(r, "changed while it was read", NULL);
			break;
		}
		if ((r->lineno & 4095) == 0 && interrupt && *interrupt) {
			rc = nf_error_set(r->err, NF_EINTR, "%s: interrupted", r->path);
			break;
		}
		/* pass 1 saw no CPU past ncpus: a line that has one was not there then */
		if ((l.kind == TX_LOST || l.kind == TX_EVENT) && l.cpu >= ncpus) {
			rc = tx_fail(r, "changed while it was read", NULL);
			break;
		}
		if (l.kind == TX_LOST) {
			/* on the CPU's next record, as the ring buffer flags it */
			if (l.lost >= 0 && lost[l.cpu] > LLONG_MAX - l.lost) {
				rc = tx_fail(r, "lost-event counts that add up to 2^63 or more", NULL);
				break;
			}
			if (l.lost < 0 || lost[l.cpu] < 0)
				lost[l.cpu] = -1;
			else
				lost[l.cpu] += l.lost;
			continue;
		}
		if (l.kind != TX_EVENT)
			continue;
		if ((rc = tx_record(r, &l, &size)))
			break;
		memset(&rec, 0, sizeof(rec));
		rec.ts = l.ts;
		rec.offset = r->lineno;
		rec.missed_events = lost[l.cpu];
		rec.size = rec.record_size = size;
		rec.data = r->rec;
		rec.cpu = (int)l.cpu;
		lost[l.cpu] = 0;
		per_cpu[l.cpu]++;
		last = l.ts;
		if ((rc = nf_kdecoder_record(d, &rec, (int)l.cpu, r->err)))
			break;
	}
	free(line);
	if (rc == 1)
		rc = 0;
	/* lost events after a CPU's last line: at the last time */
	for (unsigned long c = 0; c < ncpus && rc == 0; c++)
		if (lost[c])
			rc = nf_kdecoder_lost(d, (int)c, last, lost[c], r->err);
	free(lost);
	return rc;
}

int nf_kernel_import_text(const char *path, const char *out_dir, volatile int *interrupt,
			  struct nf_kernel_stats *st, struct nf_error *err)
{
	struct tx_reader r = { .path = path, .err = err };
	struct tx_scan sc = { 0 };
	struct nf_ctf_writer *w = NULL;
	struct nf_kdecoder *d = NULL;
	uint64_t *per_cpu = NULL;
	unsigned long ncpus;
	bool created = false, existed = false;
	struct stat sst;
	char note[sizeof(st->note)];
	FILE *f;
	int rc, fd;

	memset(st, 0, sizeof(*st));
	if ((fd = nf_infile_open(path, err)) < 0)
		return fd;
	if (!(f = fdopen(fd, "r"))) {
		close(fd);
		return nf_error_set(err, NF_EIO, "%s: %s", path, strerror(errno));
	}
	if (!(r.tep = tep_alloc())) {
		fclose(f);
		return nf_error_set(err, NF_ENOMEM, "%s: out of memory", path);
	}
	tep_set_loglevel(TEP_LOG_NONE);
	{
		enum tep_endian e = tep_is_bigendian() ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN;

		tep_set_file_bigendian(r.tep, e);
		tep_set_local_bigendian(r.tep, e);
		tep_set_long_size(r.tep, 8);
		tep_set_page_size(r.tep, 4096);
	}
	if ((rc = tx_pass1(&r, f, interrupt, &sc)))
		goto out;
	ncpus = sc.has_cpus ? sc.cpus : sc.max_cpu + 1 > sc.online ? sc.max_cpu + 1 : sc.online;
	st->cpus = (uint32_t)ncpus;
	{
		int n = snprintf(note, sizeof(note), "ftrace text: timestamps %s",
				 sc.min_digits == 9 && sc.max_digits == 9 ? "in ns" :
				 sc.min_digits == 6 && sc.max_digits == 6 ? "in µs (each rounded to the nearest µs; "
									    "`trace-cmd report -t` prints ns)"
									  : "of mixed resolutions (fewer than 9 decimals: rounded)");

		if (!sc.has_cpus && sc.online && sc.online < ncpus)
			n += snprintf(note + n, sizeof(note) - (size_t)n,
				      "; the header's #P:%lu counts the CPUs online when the file was read, the lines "
				      "name CPU %lu: %lu CPUs", sc.online, sc.max_cpu, ncpus);
		else if (!sc.has_cpus && !sc.online)
			n += snprintf(note + n, sizeof(note) - (size_t)n,
				      "; no CPU count in the header: %lu, the highest CPU seen plus one", ncpus);
		if (sc.has_entries && sc.written > sc.in_buffer && (size_t)n < sizeof(note))
			n += snprintf(note + n, sizeof(note) - (size_t)n,
				      "; the header says %llu of %llu events written are in the buffer: the oldest "
				      "were overwritten (on which CPUs is not said)", (unsigned long long)sc.in_buffer,
				      (unsigned long long)sc.written);
		if (r.unmatched && (size_t)n < sizeof(note))
			snprintf(note + n, sizeof(note) - (size_t)n,
				 "; %" PRIu64 " lines of events the decoder knows are in a layout this reader does not "
				 "know, or too long or slow to match (the first at line %" PRIu64 "): kept as raw events",
				 r.unmatched, r.first_unmatched);
	}
	memcpy(st->note, note, sizeof(note));
	if (fseeko(f, 0, SEEK_SET) != 0) {
		rc = nf_error_set(err, NF_EIO, "%s: %s", path, strerror(errno));
		goto out;
	}
	if ((rc = nf_record_prepare_dir(out_dir, false, err)))
		goto out;
	existed = stat(out_dir, &sst) == 0;
	if ((rc = nf_kimport_writer_create(out_dir, path, "kernel-text-import", sc.first, st->note, &w, err)))
		goto out;
	created = true;
	struct nf_kclock_map map = { sc.first, sc.first, 1000000000u };

	if (!(d = nf_kdecoder_create(r.tep, w, &map, (uint32_t)ncpus, 0, "unknown (ftrace text)", path, err))) {
		rc = err->code ? err->code : NF_ENOMEM;
		goto out_writer;
	}
	if (!(per_cpu = calloc(ncpus, sizeof(*per_cpu)))) {
		rc = nf_error_set(err, NF_ENOMEM, "%s: out of memory", path);
		goto out_writer;
	}
	if ((rc = tx_pass2(&r, f, interrupt, d, ncpus, per_cpu)))
		goto out_writer;
	/* Each CPU's lines; the text has no CPUSTAT: coverage from its first line. */
	for (unsigned long c = 0; c < ncpus && rc == 0; c++) {
		struct nf_kcpu_stat cs = { .cpu = (uint32_t)c, .records = per_cpu[c] };

		rc = nf_kdecoder_cpu_stat(d, &cs, err);
	}
	if (rc)
		goto out_writer;
	nf_kdecoder_get_stats(d, st);
	memcpy(st->note, note, sizeof(note));
	st->cpus = (uint32_t)ncpus;
out_writer:
	rc = nf_kimport_close(d, w, rc, created, out_dir, existed, err);
out:
	free(per_cpu);
	fclose(f);
	tep_free(r.tep);
	for (size_t i = 0; i < r.var_cap; i++)
		free(r.vars[i].key);
	free(r.vars);
	free(r.rec);
	if (rc)
		st->note[0] = '\0';
	return rc;
}
