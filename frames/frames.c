/*
 * Frames: one row per present (or per user marker a regular expression
 * matches), per swap chain in present order, with PresentMon's metrics
 * (/work/shared/reference/presentmon-frames.md, section 3), whether it was
 * late, its GPU work (frames_gpu.c) and its critical path and blame
 * (frames_path.c). Reads the generic tables only (schemas/timeline.sql,
 * "Displays, presents, flips and frames"), so every source is one algorithm.
 */
#define _GNU_SOURCE /* qsort_r */
#include "frames_int.h"
#include "contract/errors.h"
#include "contract/session.h"
#include "contract/timeline.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "contract/capbuf.h"

int fr_grow(void **arr, size_t *cap, size_t need, size_t sz)
{
	return nf_array_reserve(arr, cap, need, sz, 16, 0);
}

int fr_sql(struct fr_ctx *c, const char *what)
{
	return nf_error_set(c->err, NF_ESQL, "%s: frames: %s: %s", c->db_path, what, sqlite3_errmsg(c->db));
}

bool fr_col(sqlite3_stmt *s, int col, int64_t *v)
{
	if (sqlite3_column_type(s, col) == SQLITE_NULL)
		return false;
	*v = sqlite3_column_int64(s, col);
	return true;
}

static struct fr_opt col_opt(sqlite3_stmt *s, int col)
{
	int64_t v;

	return fr_col(s, col, &v) ? fr_some(v) : fr_none;
}

void fr_reason(struct fr_ctx *c, struct fr_frame *f, const char *fmt, ...)
{
	char buf[400];
	va_list ap;
	size_t n;

	(void)c;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	n = strlen(buf);
	char *r = realloc(f->reasons, f->reasons_len + n + 3);
	if (!r)
		return; /* a reason lost to memory: the column stays NULL, its text shorter */
	if (f->reasons_len) {
		memcpy(r + f->reasons_len, "; ", 2);
		f->reasons_len += 2;
	}
	memcpy(r + f->reasons_len, buf, n + 1);
	f->reasons_len += n;
	f->reasons = r;
}

int fr_has_table(sqlite3 *db, const char *name, bool *has)
{
	sqlite3_stmt *s = NULL;
	int rc;

	if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE name = ?1", -1, &s, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	*has = rc == SQLITE_ROW;
	sqlite3_finalize(s);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

static const char *const needed_tables[] = { "displays", "presents", "flips", "frames", "frame_gpu",
					     "frame_path_blocks", "display_vblanks", "markers", "fence_ops", "meta" };

/* ---- loading ------------------------------------------------------------ */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static struct fr_display *display_of(struct fr_ctx *c, int64_t display)
{
	for (size_t i = 0; i < c->n_displays; i++)
		if (c->displays[i].display == display)
			return &c->displays[i];
	return NULL;
}

/* Displays with their blanks; a display that states no refresh period gets the
 * median interval of its blanks (at least three of them). */
static int load_displays(struct fr_ctx *c)
{
	sqlite3_stmt *s = NULL;
	size_t cap = 0;
	int rc;

	if (sqlite3_prepare_v2(c->db, "SELECT display, name, refresh_ns FROM displays ORDER BY display", -1, &s,
			       NULL) != SQLITE_OK)
		return fr_sql(c, "reading displays");
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct fr_display *d;
		const char *name = (const char *)sqlite3_column_text(s, 1);

		if (fr_grow((void **)&c->displays, &cap, c->n_displays + 1, sizeof(*c->displays))) {
			sqlite3_finalize(s);
			return nf_error_set(c->err, NF_ENOMEM, "out of memory (displays)");
		}
		d = &c->displays[c->n_displays++];
		memset(d, 0, sizeof(*d));
		d->display = sqlite3_column_int64(s, 0);
		snprintf(d->name, sizeof(d->name), "%s", name ? name : "");
		if (sqlite3_column_type(s, 2) != SQLITE_NULL && sqlite3_column_double(s, 2) > 0) {
			d->refresh_ns = sqlite3_column_double(s, 2);
			d->refresh_stated = true;
		}
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return fr_sql(c, "reading displays");
	if (sqlite3_prepare_v2(c->db, "SELECT display, ts_ns FROM display_vblanks WHERE ts_ns IS NOT NULL", -1,
			       &s, NULL) != SQLITE_OK)
		return fr_sql(c, "reading display_vblanks");
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct fr_display *d = display_of(c, sqlite3_column_int64(s, 0));

		if (!d)
			continue;
		if (fr_grow((void **)&d->blanks, &d->cap_blanks, d->n_blanks + 1, sizeof(int64_t))) {
			sqlite3_finalize(s);
			return nf_error_set(c->err, NF_ENOMEM, "out of memory (blanks)");
		}
		d->blanks[d->n_blanks++] = sqlite3_column_int64(s, 1);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return fr_sql(c, "reading display_vblanks");
	for (size_t i = 0; i < c->n_displays; i++) {
		struct fr_display *d = &c->displays[i];

		if (d->n_blanks > 1) /* none: blanks is NULL, which qsort may not take */
			qsort(d->blanks, d->n_blanks, sizeof(int64_t), cmp_i64);
		if (d->refresh_stated || d->n_blanks < 3)
			continue;
		int64_t *gaps = malloc((d->n_blanks - 1) * sizeof(int64_t));
		if (!gaps)
			return nf_error_set(c->err, NF_ENOMEM, "out of memory (blanks)");
		for (size_t k = 1; k < d->n_blanks; k++)
			gaps[k - 1] = d->blanks[k] - d->blanks[k - 1];
		qsort(gaps, d->n_blanks - 1, sizeof(int64_t), cmp_i64);
		d->refresh_ns = (double)gaps[(d->n_blanks - 1) / 2];
		free(gaps);
	}
	return 0;
}

static struct fr_frame *new_frame(struct fr_ctx *c)
{
	struct fr_frame *f;

	if (fr_grow((void **)&c->frames, &c->cap_frames, c->n_frames + 1, sizeof(*c->frames))) {
		nf_error_set(c->err, NF_ENOMEM, "out of memory (frames)");
		return NULL;
	}
	f = &c->frames[c->n_frames++];
	memset(f, 0, sizeof(*f));
	f->prev = -1;
	f->blame_seg = -1;
	f->blame_long = -1;
	f->status = "unknown";
	return f;
}

static int load_presents(struct fr_ctx *c)
{
	static const char sql[] =
		"SELECT p.id, p.display, p.process, p.thread, p.swapchain, p.present_ns, p.present_end_ns, p.queue, "
		"p.op, p.ready_ns, p.sync_interval, f.status, f.done_ns, f.vblank_ns, f.vblank_seq, f.detail, f.id "
		"FROM presents p LEFT JOIN flips f ON f.present = p.id WHERE p.present_ns IS NOT NULL "
		"ORDER BY p.present_ns, p.id";
	sqlite3_stmt *s = NULL;
	int rc;

	if (sqlite3_prepare_v2(c->db, sql, -1, &s, NULL) != SQLITE_OK)
		return fr_sql(c, "reading presents");
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct fr_frame *f = new_frame(c);
		const char *sc = (const char *)sqlite3_column_text(s, 4);
		const char *st = (const char *)sqlite3_column_text(s, 11);
		const char *detail = (const char *)sqlite3_column_text(s, 15);

		if (!f) {
			sqlite3_finalize(s);
			return NF_ENOMEM;
		}
		c->sum.presents++;
		f->present = col_opt(s, 0);
		f->display = col_opt(s, 1);
		f->process = col_opt(s, 2);
		f->thread = col_opt(s, 3);
		/* no swap chain or plane said: the presenting process's (else its thread's) */
		if (sc)
			snprintf(f->swapchain, sizeof(f->swapchain), "%s", sc);
		else if (f->process.known)
			snprintf(f->swapchain, sizeof(f->swapchain), "process %" PRId64, f->process.v);
		else if (f->thread.known)
			snprintf(f->swapchain, sizeof(f->swapchain), "thread %" PRId64, f->thread.v);
		else
			snprintf(f->swapchain, sizeof(f->swapchain), "present");
		f->present_ns = sqlite3_column_int64(s, 5);
		f->present_end = col_opt(s, 6);
		f->queue = col_opt(s, 7);
		f->op = col_opt(s, 8);
		f->ready = col_opt(s, 9);
		f->sync_interval = col_opt(s, 10);
		if (sqlite3_column_type(s, 16) != SQLITE_NULL) {
			c->sum.flips++;
			if (st && !strcmp(st, "shown")) {
				struct fr_opt vb = col_opt(s, 13), done = col_opt(s, 12);

				f->status = "displayed";
				f->screen = vb.known ? vb : done;
				f->vblank_seq = col_opt(s, 14);
				if (!vb.known)
					snprintf(f->flip_detail, sizeof(f->flip_detail), "%s",
						 detail ? detail : "no blank event says which");
			} else if (st && !strcmp(st, "dropped")) {
				f->status = "dropped";
			} else {
				f->status = "pending";
			}
		}
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : fr_sql(c, "reading presents");
}

/* Threads' processes, where the capture names them (kernel_threads). */
static int load_threads(struct fr_ctx *c)
{
	sqlite3_stmt *s = NULL;
	bool has = false;
	int rc;

	if (fr_has_table(c->db, "kernel_threads", &has))
		return fr_sql(c, "reading the schema");
	if (!has)
		return 0;
	if (sqlite3_prepare_v2(c->db, "SELECT thread, process FROM kernel_threads WHERE process IS NOT NULL", -1,
			       &s, NULL) != SQLITE_OK)
		return fr_sql(c, "reading kernel_threads");
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (nf_u64map_put(&c->thread_process, (uint64_t)sqlite3_column_int64(s, 0),
				  (uint64_t)sqlite3_column_int64(s, 1))) {
			sqlite3_finalize(s);
			return nf_error_set(c->err, NF_ENOMEM, "out of memory (threads)");
		}
		c->has_threads = true;
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : fr_sql(c, "reading kernel_threads");
}

/* Frames a user marker starts: every markers row whose text the expression matches. */
static int load_markers(struct fr_ctx *c, const char *pattern)
{
	sqlite3_stmt *s = NULL;
	regex_t re;
	int rc = regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB);

	if (rc) {
		char msg[200];

		regerror(rc, &re, msg, sizeof(msg));
		return nf_error_set(c->err, NF_EINVAL, "--frame-marker '%s': %s", pattern, msg);
	}
	if (sqlite3_prepare_v2(c->db, "SELECT id, ts_ns, thread, text FROM markers WHERE ts_ns IS NOT NULL "
			       "ORDER BY ts_ns, id", -1, &s, NULL) != SQLITE_OK) {
		regfree(&re);
		return fr_sql(c, "reading markers");
	}
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *text = (const char *)sqlite3_column_text(s, 3);
		struct fr_frame *f;

		if (!text || regexec(&re, text, 0, NULL, 0) != 0)
			continue;
		if (!(f = new_frame(c))) {
			rc = NF_ENOMEM;
			break;
		}
		c->sum.markers++;
		f->marker = col_opt(s, 0);
		f->present_ns = sqlite3_column_int64(s, 1);
		f->thread = col_opt(s, 2);
		if (f->thread.known) {
			const uint64_t *p = nf_u64map_find(&c->thread_process, (uint64_t)f->thread.v);

			if (p)
				f->process = fr_some((int64_t)*p);
		}
		snprintf(f->swapchain, sizeof(f->swapchain), "marker /%.100s/", pattern);
		f->status = "unknown";
	}
	sqlite3_finalize(s);
	regfree(&re);
	if (rc == NF_ENOMEM)
		return rc;
	return rc == SQLITE_DONE ? 0 : fr_sql(c, "reading markers");
}

/* ---- per frame ------------------------------------------------------------- */

static int cmp_frames(const void *x, const void *y)
{
	const struct fr_frame *a = x, *b = y;

	if (a->present_ns != b->present_ns)
		return a->present_ns < b->present_ns ? -1 : 1;
	/* presents before markers at one time, then by their ids */
	if (a->present.known != b->present.known)
		return a->present.known ? -1 : 1;
	int64_t ia = a->present.known ? a->present.v : a->marker.v, ib = b->present.known ? b->present.v : b->marker.v;
	return ia < ib ? -1 : ia > ib;
}

/* Swap chains: frames of one swap chain name, display and process. */
static int chains(struct fr_ctx *c)
{
	struct chain {
		const char *name;
		struct fr_opt display, process;
		int32_t last;
		int64_t seq;
	} *ch = NULL;
	size_t n = 0, cap = 0;

	if (c->n_frames > 1) /* none: frames is NULL, which qsort may not take (UBSan) */
		qsort(c->frames, c->n_frames, sizeof(*c->frames), cmp_frames);
	for (size_t i = 0; i < c->n_frames; i++) {
		struct fr_frame *f = &c->frames[i];
		size_t k;

		f->frame = (int64_t)i + 1;
		for (k = 0; k < n; k++)
			if (!strcmp(ch[k].name, f->swapchain) && ch[k].display.known == f->display.known &&
			    ch[k].display.v == f->display.v && ch[k].process.known == f->process.known &&
			    ch[k].process.v == f->process.v)
				break;
		/* marker frames are one chain whatever their thread's process */
		if (k == n && f->marker.known)
			for (k = 0; k < n; k++)
				if (!strcmp(ch[k].name, f->swapchain))
					break;
		if (k == n) {
			if (fr_grow((void **)&ch, &cap, n + 1, sizeof(*ch))) {
				free(ch);
				return nf_error_set(c->err, NF_ENOMEM, "out of memory (swap chains)");
			}
			ch[n] = (struct chain){ f->swapchain, f->display, f->process, -1, 0 };
			n++;
		}
		f->chain = (int32_t)k;
		f->prev = ch[k].last;
		f->seq = ++ch[k].seq;
		ch[k].last = (int32_t)i;
	}
	c->n_chains = (int32_t)n;
	free(ch);
	return 0;
}

static double ms(int64_t ns)
{
	return (double)ns / 1e6;
}

/* The refresh period a frame is judged by: its display's, else the only
 * display's when the session has exactly one with a period; why none in why. */
static double refresh_for(struct fr_ctx *c, const struct fr_frame *f, const struct fr_display **dp,
			  char *why, size_t len)
{
	const struct fr_display *d = f->display.known ? display_of(c, f->display.v) : NULL;

	if (d && d->refresh_ns <= 0)
		snprintf(why, len, "its display states no refresh period and has fewer than three blanks");
	if (!d) {
		const struct fr_display *only = NULL;
		size_t n = 0;

		for (size_t i = 0; i < c->n_displays; i++)
			if (c->displays[i].refresh_ns > 0) {
				only = &c->displays[i];
				n++;
			}
		d = n == 1 ? only : NULL;
		if (n > 1)
			snprintf(why, len, "the frame names no display and the capture has %zu with a refresh period "
				 "(give --late)", n);
		else if (!n)
			snprintf(why, len, "no display states a refresh period or has three blanks (give --late)");
	}
	*dp = d;
	return d ? d->refresh_ns : 0;
}

/* The first blank of d at or after t, -1 when none in the capture. */
static int64_t blank_at_or_after(const struct fr_display *d, int64_t t)
{
	size_t lo = 0, hi = d->n_blanks;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->blanks[mid] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < d->n_blanks ? d->blanks[lo] : -1;
}

/* The frame of f's swap chain shown last before f, NULL none. */
static const struct fr_frame *prev_displayed(const struct fr_ctx *c, const struct fr_frame *f)
{
	const struct fr_frame *p = f->prev >= 0 ? &c->frames[f->prev] : NULL;

	while (p && (strcmp(p->status, "displayed") || !p->screen.known))
		p = p->prev >= 0 ? &c->frames[p->prev] : NULL;
	return p;
}

static void metrics(struct fr_ctx *c, struct fr_frame *f)
{
	const struct fr_frame *p = f->prev >= 0 ? &c->frames[f->prev] : NULL;
	bool displayed = !strcmp(f->status, "displayed") && f->screen.known;
	const struct fr_frame *pd = displayed ? prev_displayed(c, f) : NULL;
	const struct fr_display *d = NULL;

	if (p)
		f->cpu_start = p->present_end.known ? p->present_end : fr_some(p->present_ns);
	/* the frame's own time: between display changes, else between presents */
	if (pd)
		f->interval_ns = fr_some(f->screen.v - pd->screen.v);
	else if (p)
		f->interval_ns = fr_some(f->present_ns - p->present_ns);
	char why[160] = "";

	f->refresh_ns = refresh_for(c, f, &d, why, sizeof(why));
	if (f->refresh_ns <= 0) {
		fr_reason(c, f, "late: no refresh period to judge by: %s", why);
		return;
	}
	if (!f->interval_ns.known && !displayed) {
		f->late = fr_some(0);
		return;
	}
	int64_t interval = f->sync_interval.known && f->sync_interval.v > 0 ? f->sync_interval.v : 1;
	int64_t k = f->interval_ns.known ? (int64_t)llround((double)f->interval_ns.v / f->refresh_ns) : 0;

	if (displayed) {
		/* The blank it was due at: the first one after its present at which the
		 * flip queue could take it (the previous shown frame's blank plus that
		 * frame's sync interval); late when shown at a later one. */
		int64_t lower = f->present_ns, due;

		if (pd) {
			int64_t next = pd->screen.v + (int64_t)llround(((double)interval - 0.5) * f->refresh_ns);

			if (next > lower)
				lower = next;
		}
		due = d ? blank_at_or_after(d, lower) : -1;
		if (due < 0) { /* no blank event after it: by the refresh period from the previous shown frame */
			if (!pd) {
				f->late = fr_some(0);
				return;
			}
			due = pd->screen.v + (int64_t)llround((double)interval * f->refresh_ns);
		}
		int64_t missed = f->screen.v > due ? (int64_t)llround((double)(f->screen.v - due) / f->refresh_ns) : 0;

		f->missed = fr_some(missed);
		f->late = fr_some(missed > 0);
		if (missed > 0 && f->ready.known) {
			if (f->ready.v > due)
				f->late_ns = fr_some(f->ready.v - due);
			else
				fr_reason(c, f, "late_ns: its GPU work was done %.3f ms before the blank it was due at; "
					  "the flip queue held it", ms(due - f->ready.v));
		}
	} else if (!strcmp(f->status, "unknown")) {
		/* no flip: by its time between presents (markers, composed presents) */
		f->missed = fr_some(k > 1 ? k - 1 : 0);
		f->late = fr_some(k > 1);
	} else {
		f->late = fr_some(0);
	}
}

static void present_metrics_reasons(struct fr_ctx *c, struct fr_frame *f)
{
	if (!f->present_end.known)
		fr_reason(c, f, "MsInPresentAPI: %s", f->marker.known ? "a marker frame has no present call"
							       : "no event says when the present call returned");
	if (!f->ready.known)
		fr_reason(c, f, "MsUntilRenderComplete: %s",
			  f->marker.known ? "no GPU work of the frame ended in the capture"
					  : "the capture does not say when its GPU work was done");
	if (!f->screen.known) {
		const char *why = !strcmp(f->status, "dropped") ? "dropped: never shown"
				  : !strcmp(f->status, "pending") ? "still in the flip queue when the capture ended"
				  : f->marker.known ? "a marker frame: no flip ties it to the screen"
						    : "no flip of the capture ties it to the screen";

		fr_reason(c, f, "MsUntilDisplayed: %s", why);
	}
	if (!f->vblank_seq.known && f->screen.known)
		fr_reason(c, f, "vblank_seq: %s", f->flip_detail[0] ? f->flip_detail : "no blank event says which");
	if (f->prev < 0)
		fr_reason(c, f, "MsBetweenPresents: the first frame of its swap chain");
	if (!f->timed && f->items)
		fr_reason(c, f, "MsGPUBusy: none of its GPU work (%" PRId64 " jobs or operations) has both a start and "
			  "a measured end in the capture", f->items);
	else if (!f->timed)
		fr_reason(c, f, "MsGPUBusy: no GPU work of the frame in the capture");
}

/* ---- writing ------------------------------------------------------------- */

static void bind_opt(sqlite3_stmt *s, int col, struct fr_opt v)
{
	if (v.known)
		sqlite3_bind_int64(s, col, v.v);
	else
		sqlite3_bind_null(s, col);
}

static void bind_ms(sqlite3_stmt *s, int col, bool known, int64_t ns)
{
	if (known)
		sqlite3_bind_double(s, col, ms(ns));
	else
		sqlite3_bind_null(s, col);
}

static int step(struct fr_ctx *c, sqlite3_stmt *s, const char *what)
{
	int rc = sqlite3_step(s);

	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return rc == SQLITE_DONE ? 0 : fr_sql(c, what);
}

static void bind_i64(sqlite3_stmt *s, int col, int64_t v)
{
	if (v != FR_NONE)
		sqlite3_bind_int64(s, col, v);
}

/* A growing text buffer for a frame's path as JSON. */
struct jbuf {
	char *v;
	size_t n, cap;
};

static int jb_room(struct jbuf *b, size_t more)
{
	if (b->n + more <= b->cap)
		return 0;
	size_t nc = b->cap ? b->cap : 4096;

	while (nc < b->n + more)
		nc *= 2;
	char *nv = realloc(b->v, nc);

	if (!nv)
		return -1;
	b->v = nv;
	b->cap = nc;
	return 0;
}

static const char jb_digits[] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* A number (FR_NONE: null) and a comma, without printf: paths have a segment per
 * operation. Two digits at a time. */
static void jb_int(struct jbuf *b, int64_t v)
{
	char tmp[24];
	size_t k = sizeof(tmp);
	uint64_t u;

	if (v == FR_NONE) {
		memcpy(b->v + b->n, "null,", 5);
		b->n += 5;
		return;
	}
	if (v < 0) {
		b->v[b->n++] = '-';
		u = (uint64_t)0 - (uint64_t)v;
	} else {
		u = (uint64_t)v;
	}
	while (u >= 100) {
		unsigned d = (unsigned)(u % 100) * 2;

		u /= 100;
		tmp[--k] = jb_digits[d + 1];
		tmp[--k] = jb_digits[d];
	}
	if (u >= 10) {
		tmp[--k] = jb_digits[u * 2 + 1];
		tmp[--k] = jb_digits[u * 2];
	} else {
		tmp[--k] = (char)('0' + u);
	}
	memcpy(b->v + b->n, tmp + k, sizeof(tmp) - k);
	b->n += sizeof(tmp) - k;
	b->v[b->n++] = ',';
}

/* A JSON string (a ring's name, from the capture): quotes, backslashes and control bytes escaped. */
static void jb_str(struct jbuf *b, const char *s)
{
	b->v[b->n++] = '"';
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\') {
			b->v[b->n++] = '\\';
			b->v[b->n++] = (char)ch;
		} else if (ch < 0x20 || ch == 0x7f) {
			b->n += (size_t)snprintf(b->v + b->n, 7, "\\u%04x", ch);
		} else {
			b->v[b->n++] = (char)ch;
		}
	}
	b->v[b->n++] = '"';
	b->v[b->n++] = ',';
}

/*
 * A frame's path as frame_path_blocks.segs: a JSON array of segments, each
 * [start - base, end - base, kind, queue, thread, ring, display, op, job,
 * fence, value, release_op, by_queue, by_thread, extra, sub] (null: none);
 * the frame_path view reads them (schemas/timeline.sql).
 */
static int path_json(const struct fr_ctx *c, const struct fr_frame *f, struct jbuf *b)
{
	int64_t base = f->path[0].start;

	b->n = 0;
	if (jb_room(b, 2))
		return -1;
	b->v[b->n++] = '[';
	for (size_t i = 0; i < f->n_path; i++) {
		const struct fr_seg *g = &f->path[i];
		const char *ring = g->ring >= 0 ? c->rings[g->ring] : NULL;

		if (jb_room(b, 16 * 24 + 32 + (ring ? 6 * strlen(ring) + 4 : 0)))
			return -1;
		/* the fields after the strings, trailing nulls (and a zero sub) left out:
		 * a missing element reads as null */
		int64_t tail[] = { g->display, g->op, g->job, g->fence, g->value, g->release_op, g->by_queue,
				   g->by_thread, g->extra, g->sub ? g->sub : FR_NONE };
		int nt = (int)(sizeof(tail) / sizeof(tail[0]));

		while (nt > 0 && tail[nt - 1] == FR_NONE)
			nt--;
		b->v[b->n++] = '[';
		jb_int(b, g->start - base);
		jb_int(b, g->end - base);
		jb_str(b, fr_kind_name[g->kind]);
		jb_int(b, g->queue);
		jb_int(b, g->thread);
		if (ring)
			jb_str(b, ring);
		else
			jb_int(b, FR_NONE);
		for (int t = 0; t < nt; t++)
			jb_int(b, tail[t]);
		b->v[b->n - 1] = ']';
		b->v[b->n++] = ',';
	}
	b->v[b->n - 1] = ']';
	return 0;
}

int fr_write_path(struct fr_ctx *c, const struct fr_frame *f)
{
	struct jbuf *js = c->jbuf;

	if (!f->n_path)
		return 0;
	if (!js && !(js = c->jbuf = calloc(1, sizeof(*js))))
		return nf_error_set(c->err, NF_ENOMEM, "out of memory (frame paths)");
	if (path_json(c, f, js))
		return nf_error_set(c->err, NF_ENOMEM, "out of memory (frame paths)");
	sqlite3_bind_int64(c->st_path, 1, f->frame);
	sqlite3_bind_int64(c->st_path, 2, (int64_t)f->n_path);
	sqlite3_bind_int64(c->st_path, 3, f->path[0].start);
	sqlite3_bind_text(c->st_path, 4, js->v, (int)js->n, SQLITE_STATIC);
	return step(c, c->st_path, "writing frame_path_blocks");
}

static int write_frames(struct fr_ctx *c)
{
	static const char ins_frame[] =
		"INSERT INTO frames(frame, present, marker, display, process, thread, swapchain, seq, present_ns, "
		"present_end_ns, cpu_start_ns, gpu_start_ns, ready_ns, screen_ns, vblank_seq, status, "
		"MsBetweenPresents, MsInPresentAPI, MsUntilRenderComplete, MsUntilDisplayed, MsBetweenDisplayChange, "
		"MsGPULatency, MsGPUBusy, MsGPUWait, interval_ns, refresh_ns, late, missed_vblanks, late_ns, blame, "
		"blame_kind, blame_ns, blame_queue, blame_thread, blame_fence, blame_value, blame_by_queue, "
		"blame_by_thread, null_reasons, blame_seq) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
		"?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, "
		"?34, ?35, ?36, ?37, ?38, ?39, ?40)";
	static const char ins_gpu[] =
		"INSERT INTO frame_gpu(frame, lane, queue, ring, items, first_start_ns, last_end_ns, busy_ns, wait_ns) "
		"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
	sqlite3_stmt *sf = NULL, *sg = NULL;
	int rc = 0;

	if (sqlite3_prepare_v2(c->db, ins_frame, -1, &sf, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(c->db, ins_gpu, -1, &sg, NULL) != SQLITE_OK) {
		rc = fr_sql(c, "preparing the frames tables' inserts");
		goto out;
	}
	for (size_t i = 0; i < c->n_frames && !rc; i++) {
		struct fr_frame *f = &c->frames[i];
		const struct fr_frame *p = f->prev >= 0 ? &c->frames[f->prev] : NULL;
		const struct fr_seg *b = f->blame_seg >= 0 ? &f->blame_at : NULL;
		bool displayed = !strcmp(f->status, "displayed");
		const struct fr_frame *pd = p;

		while (pd && strcmp(pd->status, "displayed"))
			pd = pd->prev >= 0 ? &c->frames[pd->prev] : NULL;
		if (displayed && !pd)
			fr_reason(c, f, "MsBetweenDisplayChange: no frame of its swap chain was shown before it");
		if (!f->cpu_start.known || !f->gpu_start.known)
			fr_reason(c, f, "MsGPULatency: %s", !f->cpu_start.known ? "the first frame of its swap chain"
										: "no GPU work of the frame in the capture");
		if (!f->ready.known || !f->gpu_start.known || !f->timed)
			fr_reason(c, f, "MsGPUWait: %s", !f->ready.known ? "its ready time is unknown"
					 : "its GPU work's running time is unknown (MsGPUBusy)");
		sqlite3_bind_int64(sf, 1, f->frame);
		bind_opt(sf, 2, f->present);
		bind_opt(sf, 3, f->marker);
		bind_opt(sf, 4, f->display);
		bind_opt(sf, 5, f->process);
		bind_opt(sf, 6, f->thread);
		sqlite3_bind_text(sf, 7, f->swapchain, -1, SQLITE_STATIC);
		sqlite3_bind_int64(sf, 8, f->seq);
		sqlite3_bind_int64(sf, 9, f->present_ns);
		bind_opt(sf, 10, f->present_end);
		bind_opt(sf, 11, f->cpu_start);
		bind_opt(sf, 12, f->gpu_start);
		bind_opt(sf, 13, f->ready);
		bind_opt(sf, 14, f->screen);
		bind_opt(sf, 15, f->vblank_seq);
		sqlite3_bind_text(sf, 16, f->status, -1, SQLITE_STATIC);
		bind_ms(sf, 17, p != NULL, p ? f->present_ns - p->present_ns : 0);
		bind_ms(sf, 18, f->present_end.known, f->present_end.v - f->present_ns);
		bind_ms(sf, 19, f->ready.known, f->ready.v - f->present_ns);
		bind_ms(sf, 20, f->screen.known && displayed, f->screen.v - f->present_ns);
		bind_ms(sf, 21, displayed && pd && f->screen.known && pd->screen.known, f->screen.v - (pd ? pd->screen.v : 0));
		bind_ms(sf, 22, f->cpu_start.known && f->gpu_start.known, f->gpu_start.v - f->cpu_start.v);
		bind_ms(sf, 23, f->timed > 0, f->busy_ns);
		if (f->ready.known && f->gpu_start.known && f->timed > 0) {
			int64_t w = f->ready.v - f->gpu_start.v - f->busy_ns;

			sqlite3_bind_double(sf, 24, ms(w > 0 ? w : 0));
		}
		bind_opt(sf, 25, f->interval_ns);
		if (f->refresh_ns > 0)
			sqlite3_bind_double(sf, 26, f->refresh_ns);
		bind_opt(sf, 27, f->late);
		bind_opt(sf, 28, f->missed);
		bind_opt(sf, 29, f->late_ns);
		if (f->blame[0])
			sqlite3_bind_text(sf, 30, f->blame, -1, SQLITE_STATIC);
		if (b) {
			sqlite3_bind_text(sf, 31, fr_kind_name[b->kind], -1, SQLITE_STATIC);
			sqlite3_bind_int64(sf, 32, f->blame_ns);
			bind_i64(sf, 33, b->queue);
			bind_i64(sf, 34, b->thread);
			bind_i64(sf, 35, b->fence);
			bind_i64(sf, 36, b->value);
			bind_i64(sf, 37, b->by_queue);
			bind_i64(sf, 38, b->by_thread);
			if (f->blame_long >= 0)
				sqlite3_bind_int64(sf, 40, f->blame_long);
		}
		if (f->reasons)
			sqlite3_bind_text(sf, 39, f->reasons, -1, SQLITE_STATIC);
		rc = step(c, sf, "writing frames");
	}
	for (size_t i = 0; i < c->n_accs && !rc; i++) {
		const struct fr_lane_acc *a = &c->accs[i];
		const struct fr_lane *l = &c->lanes[a->lane];

		sqlite3_bind_int64(sg, 1, c->frames[a->frame].frame);
		sqlite3_bind_text(sg, 2, l->name, -1, SQLITE_STATIC);
		bind_opt(sg, 3, l->queue);
		if (l->ring[0])
			sqlite3_bind_text(sg, 4, l->ring, -1, SQLITE_STATIC);
		sqlite3_bind_int64(sg, 5, a->items);
		bind_opt(sg, 6, a->first_start != INT64_MAX ? fr_some(a->first_start) : fr_none);
		bind_opt(sg, 7, a->last_end != INT64_MIN ? fr_some(a->last_end) : fr_none);
		bind_opt(sg, 8, a->timed ? fr_some(a->busy) : fr_none);
		bind_opt(sg, 9, a->waits ? fr_some(a->wait) : fr_none);
		rc = step(c, sg, "writing frame_gpu");
	}
out:
	sqlite3_finalize(sf);
	sqlite3_finalize(sg);
	return rc;
}

static int write_meta(struct fr_ctx *c, const char *marker)
{
	sqlite3_stmt *s = NULL;
	char v[16];
	int rc = 0;

	snprintf(v, sizeof(v), "%d", NF_FRAMES_VERSION);
	if (sqlite3_prepare_v2(c->db, "INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)", -1, &s, NULL) !=
	    SQLITE_OK)
		return fr_sql(c, "writing meta");
	sqlite3_bind_text(s, 1, "frames_version", -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, v, -1, SQLITE_STATIC);
	rc = step(c, s, "writing meta");
	if (!rc) {
		sqlite3_bind_text(s, 1, "frames_marker", -1, SQLITE_STATIC);
		if (marker && *marker)
			sqlite3_bind_text(s, 2, marker, -1, SQLITE_STATIC);
		rc = step(c, s, "writing meta");
	}
	sqlite3_finalize(s);
	return rc;
}

static void ctx_free(struct fr_ctx *c)
{
	for (size_t i = 0; i < c->n_displays; i++)
		free(c->displays[i].blanks);
	free(c->displays);
	for (size_t i = 0; i < c->n_frames; i++) {
		free(c->frames[i].path);
		free(c->frames[i].reasons);
	}
	free(c->frames);
	free(c->lanes);
	free(c->accs);
	free(c->rings);
	nf_u64map_free(&c->acc_map);
	nf_u64map_free(&c->thread_process);
	nf_analysis_destroy(c->an);
	nf_analysis_destroy(c->jobs_an);
	sqlite3_finalize(c->st_queued);
	sqlite3_finalize(c->st_path);
	if (c->jbuf)
		free(((struct jbuf *)c->jbuf)->v);
	free(c->jbuf);
}

int nf_frames_compute(const char *db_path, const struct nf_frames_options *opts,
		      struct nf_frames_summary *sum, struct nf_error *err)
{
	struct fr_ctx c = { 0 };
	const char *marker = opts && opts->frame_marker && *opts->frame_marker ? opts->frame_marker : NULL;
	bool in_txn = false;
	int rc;

	c.db_path = db_path;
	c.err = err;
	if (marker) { /* a bad expression fails before anything is opened */
		regex_t re;
		int r = regcomp(&re, marker, REG_EXTENDED | REG_NOSUB);

		if (r) {
			char msg[200];

			regerror(r, &re, msg, sizeof(msg));
			return nf_error_set(err, NF_EINVAL, "--frame-marker '%s': %s", marker, msg);
		}
		regfree(&re);
	}
	if (access(db_path, F_OK) != 0)
		return nf_error_set(err, NF_ENOENT, "%s: no such timeline", db_path);
	if (sqlite3_open_v2(db_path, &c.db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		rc = nf_error_set(err, NF_ESQL, "%s: %s", db_path, c.db ? sqlite3_errmsg(c.db) : "cannot open");
		sqlite3_close(c.db);
		return rc;
	}
	sqlite3_busy_timeout(c.db, 10000);
	for (size_t i = 0; i < sizeof(needed_tables) / sizeof(needed_tables[0]); i++) {
		bool has = false;

		if (fr_has_table(c.db, needed_tables[i], &has)) {
			rc = fr_sql(&c, "reading the schema");
			goto out;
		}
		if (!has) {
			rc = nf_error_set(err, NF_EFORMAT, "%s: not a timeline of version %d (no table %s)", db_path,
					  NF_TIMELINE_VERSION, needed_tables[i]);
			goto out;
		}
	}
	rc = load_displays(&c);
	rc = rc ? rc : load_threads(&c);
	rc = rc ? rc : load_presents(&c);
	if (!rc && marker)
		rc = load_markers(&c, marker);
	rc = rc ? rc : chains(&c);
	rc = rc ? rc : fr_gpu_work(&c);
	for (size_t i = 0; i < c.n_frames && !rc; i++)
		metrics(&c, &c.frames[i]);
	/* one transaction: the paths are written as they are made */
	if (!rc && sqlite3_exec(c.db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		rc = fr_sql(&c, "begin");
	else if (!rc)
		in_txn = true;
	if (!rc && sqlite3_exec(c.db, "DELETE FROM frames; DELETE FROM frame_gpu; DELETE FROM frame_path_blocks;", NULL,
				NULL, NULL) != SQLITE_OK)
		rc = fr_sql(&c, "emptying the frames tables");
	if (!rc && sqlite3_prepare_v2(c.db, "INSERT INTO frame_path_blocks(frame, n, base_ns, segs) VALUES (?1, ?2, ?3, ?4)",
				      -1, &c.st_path, NULL) != SQLITE_OK)
		rc = fr_sql(&c, "preparing frame_path_blocks' insert");
	rc = rc ? rc : fr_paths(&c);
	for (size_t i = 0; i < c.n_frames && !rc; i++) {
		struct fr_frame *f = &c.frames[i];

		present_metrics_reasons(&c, f);
		c.sum.frames++;
		c.sum.displayed += !strcmp(f->status, "displayed");
		c.sum.dropped += !strcmp(f->status, "dropped");
		c.sum.pending += !strcmp(f->status, "pending");
		c.sum.late += f->late.known && f->late.v;
	}
	rc = rc ? rc : write_frames(&c);
	rc = rc ? rc : write_meta(&c, marker);
	if (!rc && sqlite3_exec(c.db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		rc = fr_sql(&c, "commit");
	if (rc && in_txn)
		sqlite3_exec(c.db, "ROLLBACK", NULL, NULL, NULL);
	if (!rc && sum)
		*sum = c.sum;
out:
	ctx_free(&c);
	sqlite3_close(c.db);
	return rc;
}

/* ---- the session's frames, cached in its timeline ---------------------------- */

/* What meta says: frames_version (0: none) and frames_marker (malloc'ed, NULL: none). */
static int read_meta(sqlite3 *db, int64_t *version, char **marker)
{
	sqlite3_stmt *s = NULL;
	int rc;

	*version = 0;
	*marker = NULL;
	if (sqlite3_prepare_v2(db, "SELECT key, value FROM meta WHERE key IN ('frames_version', 'frames_marker')",
			       -1, &s, NULL) != SQLITE_OK)
		return -1;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(s, 0);
		const char *v = (const char *)sqlite3_column_text(s, 1);

		if (k && !strcmp(k, "frames_version") && v)
			*version = strtoll(v, NULL, 10);
		else if (k && !strcmp(k, "frames_marker") && v && !(*marker = strdup(v))) {
			rc = SQLITE_NOMEM;
			break;
		}
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : -1;
}

int nf_frames_ensure(const char *session_dir, const struct nf_frames_options *opts, char *db_path,
		     size_t db_path_len, struct nf_error *err)
{
	sqlite3 *db = NULL;
	char *have_marker = NULL;
	int64_t version = 0;
	int fd, rc;

	if ((rc = nf_timeline_ensure_locked(session_dir, db_path, db_path_len, &fd, err)))
		return rc;
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK || read_meta(db, &version, &have_marker)) {
		rc = nf_error_set(err, NF_ESQL, "%s: %s", db_path, db ? sqlite3_errmsg(db) : "cannot open");
		goto out_unlock;
	}
	sqlite3_close(db);
	db = NULL;
	{
		const char *want = opts ? opts->frame_marker : NULL;
		bool same;

		if (!want) /* keep what was computed last */
			same = version == NF_FRAMES_VERSION;
		else
			same = version == NF_FRAMES_VERSION &&
			       (*want ? have_marker && !strcmp(have_marker, want) : !have_marker);
		if (!same) {
			struct nf_frames_options o = { want ? want : have_marker };

			rc = nf_frames_compute(db_path, &o, NULL, err);
		}
	}
out_unlock:
	sqlite3_close(db);
	free(have_marker);
	nf_timeline_unlock(fd);
	return rc;
}
