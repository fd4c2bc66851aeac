/*
 * trace.dat (version 6) writer for test fixtures; see tracedat_writer.h.
 * The file layout: magic, version, endianness, long size, page size,
 * header_page, header_event, ftrace formats (none), event formats per system,
 * kallsyms (empty), printk formats (empty), cmdlines, CPU count, "flyrecord",
 * per CPU (offset, size), then the page-aligned per-CPU ring-buffer pages.
 */
#include "tracedat_writer.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event-parse.h>

#define TDW_PAGE 4096u
#define TDW_PAGE_HDR 16u
#define TDW_MAX_CPUS 64u
#define TDW_MISSED_EVENTS (1ull << 31)
#define TDW_MISSED_STORED (1ull << 30)

struct tdw_buf {
	unsigned char *p;
	size_t len, cap;
};

static int buf_put(struct tdw_buf *b, const void *data, size_t n)
{
	if (b->len + n > b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 65536;
		while (nc < b->len + n)
			nc *= 2;
		unsigned char *np = realloc(b->p, nc);
		if (!np)
			return -1;
		b->p = np;
		b->cap = nc;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
	return 0;
}

static int put_u32(struct tdw_buf *b, uint32_t v) { return buf_put(b, &v, 4); }
static int put_u64(struct tdw_buf *b, uint64_t v) { return buf_put(b, &v, 8); }
static int put_str(struct tdw_buf *b, const char *s) { return buf_put(b, s, strlen(s) + 1); }

char *nf_tdw_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct tdw_buf b = { 0 };
	char chunk[8192];
	size_t n;

	if (!f)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (buf_put(&b, chunk, n)) {
			fclose(f);
			free(b.p);
			return NULL;
		}
	fclose(f);
	if (buf_put(&b, "", 1)) {
		free(b.p);
		return NULL;
	}
	if (len)
		*len = b.len - 1;
	return (char *)b.p;
}

struct tdw_system {
	char name[256];
	char *formats[32];
	size_t n;
};

/* One CPU's pages being built. */
struct tdw_cpu {
	struct tdw_buf pages;
	unsigned char page[TDW_PAGE];
	size_t used;          /* data bytes on the current page */
	uint64_t last_ts;
	bool open, any;
	long long pending_lost;
};

struct tdw {
	struct tep_handle *tep;
	struct tdw_system sys[16];
	size_t n_sys;
	struct tdw_cpu cpu[TDW_MAX_CPUS];
	unsigned int max_cpu;
	struct tdw_buf cmdlines;
	char *why;
	size_t why_len;
};

__attribute__((format(printf, 2, 3)))
static int fail(struct tdw *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->why, t->why_len, fmt, ap);
	va_end(ap);
	return -1;
}

/* Systems and events in name order, so that the same inputs give the same bytes. */
static int load_formats(struct tdw *t, const char *dir)
{
	struct dirent **sys = NULL, **evs = NULL;
	char path[4096];
	int ns, ne, rc = 0;

	ns = scandir(dir, &sys, NULL, alphasort);
	if (ns < 0)
		return fail(t, "%s: cannot open", dir);
	for (int i = 0; i < ns && !rc; i++) {
		if (sys[i]->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, sys[i]->d_name);
		ne = scandir(path, &evs, NULL, alphasort);
		if (ne < 0)
			continue; /* header_page, header_event */
		if (t->n_sys == 16)
			rc = fail(t, "too many systems");
		struct tdw_system *s = &t->sys[t->n_sys];
		if (!rc) {
			t->n_sys++;
			snprintf(s->name, sizeof(s->name), "%s", sys[i]->d_name);
		}
		for (int j = 0; j < ne; j++) {
			char fpath[4400];
			char *text;
			size_t len;

			if (!rc && evs[j]->d_name[0] != '.') {
				snprintf(fpath, sizeof(fpath), "%s/%s/format", path, evs[j]->d_name);
				if ((text = nf_tdw_slurp(fpath, &len))) {
					if (s->n == 32 || tep_parse_event(t->tep, text, len, s->name) != 0) {
						free(text);
						rc = fail(t, "%s: cannot parse", fpath);
					} else {
						s->formats[s->n++] = text;
					}
				}
			}
			free(evs[j]);
		}
		free(evs);
	}
	for (int i = 0; i < ns; i++)
		free(sys[i]);
	free(sys);
	return rc;
}

static void cpu_page_start(struct tdw_cpu *c, uint64_t ts)
{
	memset(c->page, 0, sizeof(c->page));
	memcpy(c->page, &ts, 8);
	c->used = 0;
	c->open = true;
	c->last_ts = ts;
}

static int cpu_page_close(struct tdw_cpu *c)
{
	uint64_t commit = c->used;

	if (!c->open)
		return 0;
	if (c->pending_lost) {
		commit |= TDW_MISSED_EVENTS | TDW_MISSED_STORED;
		memcpy(c->page + TDW_PAGE_HDR + c->used, &c->pending_lost, 8);
		c->pending_lost = 0;
	}
	memcpy(c->page + 8, &commit, 8);
	c->open = false;
	return buf_put(&c->pages, c->page, TDW_PAGE);
}

/* Appends an event of len data bytes (a multiple of 4, at most 112) at ts. */
static int cpu_add(struct tdw *t, unsigned int cpu, uint64_t ts, const unsigned char *data, size_t len,
		   long long lost_before)
{
	struct tdw_cpu *c = &t->cpu[cpu];
	uint64_t delta;
	size_t need = 4 + len + 8; /* a possible time extend */

	if (c->any && ts < c->last_ts)
		return fail(t, "CPU %u: time %llu before %llu", cpu, (unsigned long long)ts,
			    (unsigned long long)c->last_ts);
	if (lost_before) {
		if (cpu_page_close(c))
			return fail(t, "out of memory");
	}
	if (c->open && c->used + need + 8 > TDW_PAGE - TDW_PAGE_HDR && cpu_page_close(c))
		return fail(t, "out of memory");
	if (!c->open) {
		cpu_page_start(c, ts);
		c->pending_lost = lost_before;
	}
	delta = ts - c->last_ts;
	unsigned char *p = c->page + TDW_PAGE_HDR + c->used;
	if (delta >= (1u << 27)) {
		uint32_t h = 30u | (uint32_t)((delta & ((1u << 27) - 1)) << 5), hi = (uint32_t)(delta >> 27);

		memcpy(p, &h, 4);
		memcpy(p + 4, &hi, 4);
		p += 8;
		c->used += 8;
		delta = 0;
	}
	uint32_t h = (uint32_t)(len / 4) | (uint32_t)(delta << 5);
	memcpy(p, &h, 4);
	memcpy(p + 4, data, len);
	c->used += 4 + len;
	c->last_ts = ts;
	c->any = true;
	return 0;
}

/* Decodes "hex:" values (any bytes but NUL: spaces, controls, invalid
 * UTF-8) into out, NUL-terminated; -1 when not hex or too long. */
static int unhex(const char *h, char *out, size_t cap)
{
	size_t n = 0;

	for (; h[0] && h[1]; h += 2) {
		unsigned int b;

		if (n + 1 >= cap || sscanf(h, "%2x", &b) != 1 || !b)
			return -1;
		out[n++] = (char)b;
	}
	if (*h)
		return -1;
	out[n] = '\0';
	return 0;
}

/* Builds the record bytes of one event line. */
static int encode(struct tdw *t, char *line, unsigned int *cpu, uint64_t *ts, unsigned char *rec,
		  size_t *len)
{
	char *save = NULL, *tok[4];
	struct tep_event *e;
	size_t dyn;

	for (int i = 0; i < 4; i++)
		if (!(tok[i] = strtok_r(i ? NULL : line, " \t", &save)))
			return fail(t, "short event line");
	*cpu = (unsigned int)strtoul(tok[0], NULL, 10);
	*ts = strtoull(tok[1], NULL, 10);
	char *colon = strchr(tok[2], ':');
	if (!colon)
		return fail(t, "%s: expected SYSTEM:EVENT", tok[2]);
	*colon = '\0';
	if (!(e = tep_find_event_by_name(t->tep, tok[2], colon + 1)))
		return fail(t, "%s:%s: no such format", tok[2], colon + 1);
	memset(rec, 0, 128);
	uint16_t type = (uint16_t)e->id;
	int32_t pid = (int32_t)strtol(tok[3], NULL, 10);
	memcpy(rec, &type, 2);
	memcpy(rec + 4, &pid, 4);
	dyn = 0;
	for (struct tep_format_field *f = e->format.fields; f; f = f->next)
		if (!(f->flags & TEP_FIELD_IS_DYNAMIC) && (size_t)(f->offset + f->size) > dyn)
			dyn = (size_t)(f->offset + f->size);
	char *kv;
	while ((kv = strtok_r(NULL, " \t", &save))) {
		char *eq = strchr(kv, '=');
		struct tep_format_field *f;

		if (!eq)
			return fail(t, "%s: expected FIELD=VALUE", kv);
		*eq = '\0';
		if (!(f = tep_find_field(e, kv)))
			return fail(t, "%s: no field %s", e->name, kv);
		const char *v = eq + 1;
		char raw[128];
		if (!strncmp(v, "hex:", 4)) {
			if (unhex(v + 4, raw, sizeof(raw)))
				return fail(t, "%s: bad hex: value", kv);
			v = raw;
		}
		if (f->flags & TEP_FIELD_IS_DYNAMIC) {
			size_t n = strlen(v) + 1;
			uint32_t loc = (uint32_t)dyn | (uint32_t)(n << 16);

			if (dyn + n > 112)
				return fail(t, "%s: record too long", e->name);
			memcpy(rec + f->offset, &loc, 4);
			memcpy(rec + dyn, v, n);
			dyn += n;
		} else if ((f->flags & TEP_FIELD_IS_ARRAY) && f->size == 0) {
			/* "char buf[]" (ftrace:print): the string runs to the end of the record. */
			size_t n = strlen(v) + 1;

			if ((size_t)f->offset + n > 112)
				return fail(t, "%s: record too long", e->name);
			memcpy(rec + f->offset, v, n);
			if ((size_t)f->offset + n > dyn)
				dyn = (size_t)f->offset + n;
		} else if (f->flags & TEP_FIELD_IS_ARRAY) {
			size_t n = strlen(v);

			memcpy(rec + f->offset, v, n < (size_t)f->size ? n : (size_t)f->size);
		} else {
			/* Kernel addresses (0xffff...) do not fit a long long. */
			unsigned long long x = v[0] == '-' ? (unsigned long long)strtoll(v, NULL, 0) : strtoull(v, NULL, 0);

			memcpy(rec + f->offset, &x, (size_t)f->size); /* little endian */
		}
	}
	*len = (dyn + 3) & ~(size_t)3;
	return 0;
}

static int write_file(struct tdw *t, const char *formats_dir, const char *out,
		      const struct nf_tdw_options *o)
{
	struct tdw_buf b = { 0 };
	char path[4200];
	size_t len;
	int rc = -1;
	unsigned int cpus = o->cpus ? o->cpus : t->max_cpu + 1;
	static const unsigned char magic[10] = { 0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g' };
	unsigned char one;
	uint32_t page = TDW_PAGE;

	buf_put(&b, magic, 10);
	put_str(&b, o->version ? o->version : "6");
	one = 0; /* little endian */
	buf_put(&b, &one, 1);
	one = 8; /* long size */
	buf_put(&b, &one, 1);
	put_u32(&b, page);
	for (int i = 0; i < 2; i++) {
		const char *name = i ? "header_event" : "header_page";
		char *text;

		snprintf(path, sizeof(path), "%s/%s", formats_dir, name);
		if (!(text = nf_tdw_slurp(path, &len))) {
			fail(t, "%s: cannot read", path);
			goto out_free;
		}
		put_str(&b, name);
		put_u64(&b, len);
		buf_put(&b, text, len);
		free(text);
	}
	put_u32(&b, 0); /* ftrace formats */
	uint32_t n_sys = 0;
	for (size_t s = 0; !o->no_formats && s < t->n_sys; s++)
		n_sys += !o->only_system || !strcmp(o->only_system, t->sys[s].name);
	put_u32(&b, n_sys);
	for (size_t s = 0; !o->no_formats && s < t->n_sys; s++) {
		if (o->only_system && strcmp(o->only_system, t->sys[s].name))
			continue;
		put_str(&b, t->sys[s].name);
		put_u32(&b, (uint32_t)t->sys[s].n);
		for (size_t e = 0; e < t->sys[s].n; e++) {
			put_u64(&b, strlen(t->sys[s].formats[e]));
			buf_put(&b, t->sys[s].formats[e], strlen(t->sys[s].formats[e]));
		}
	}
	put_u32(&b, 0); /* kallsyms */
	put_u32(&b, 0); /* printk formats */
	put_u64(&b, t->cmdlines.len);
	if (t->cmdlines.len)
		buf_put(&b, t->cmdlines.p, t->cmdlines.len);
	put_u32(&b, cpus);
	if (o->n_cpustat) {
		/* the options section: id (u16), size (u32), data; id 0 ends it */
		buf_put(&b, "options  ", 10);
		for (unsigned int i = 0; i < o->n_cpustat; i++) {
			uint16_t id = 2; /* TRACECMD_OPTION_CPUSTAT */
			uint32_t n = (uint32_t)strlen(o->cpustat[i]) + 1;

			buf_put(&b, &id, 2);
			put_u32(&b, n);
			buf_put(&b, o->cpustat[i], n);
		}
		buf_put(&b, "\0\0", 2);
	}
	buf_put(&b, "flyrecord", 10);
	size_t table = b.len;
	for (unsigned int c = 0; c < cpus; c++) {
		put_u64(&b, 0);
		put_u64(&b, 0);
	}
	for (unsigned int c = 0; c < cpus; c++) {
		uint64_t off, size = t->cpu[c].pages.len;
		static const unsigned char zero[TDW_PAGE];

		buf_put(&b, zero, (TDW_PAGE - b.len % TDW_PAGE) % TDW_PAGE);
		off = b.len;
		if (size)
			buf_put(&b, t->cpu[c].pages.p, size);
		memcpy(b.p + table + 16 * c, &off, 8);
		memcpy(b.p + table + 16 * c + 8, &size, 8);
	}
	FILE *f = fopen(out, "wb");
	if (!f || fwrite(b.p, 1, b.len, f) != b.len) {
		if (f)
			fclose(f);
		fail(t, "%s: cannot write", out);
		goto out_free;
	}
	if (fclose(f) != 0) {
		fail(t, "%s: cannot write", out);
		goto out_free;
	}
	rc = 0;
out_free:
	free(b.p);
	return rc;
}

int nf_tdw_write(const char *formats_dir, const char *events_text, const char *out_path,
		 const struct nf_tdw_options *opts, char *why, size_t why_len)
{
	struct nf_tdw_options defaults = { 0 };
	struct tdw *t = calloc(1, sizeof(*t));
	char *text = strdup(events_text), *save = NULL, *line;
	long long lost[TDW_MAX_CPUS] = { 0 };
	int rc = -1, lineno = 0;

	if (!t || !text) {
		snprintf(why, why_len, "out of memory");
		goto out_free;
	}
	t->why = why;
	t->why_len = why_len;
	t->tep = tep_alloc();
	if (!t->tep || load_formats(t, formats_dir))
		goto out_free;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned char rec[128];
		unsigned int cpu = 0;
		uint64_t ts = 0;
		size_t len = 0;

		lineno++;
		while (*line == ' ' || *line == '\t')
			line++;
		if (!*line || *line == '#')
			continue;
		if (!strncmp(line, "lost ", 5)) {
			unsigned int c;
			long long n;

			if (sscanf(line + 5, "%u %lld", &c, &n) != 2 || c >= TDW_MAX_CPUS) {
				fail(t, "line %d: lost CPU COUNT", lineno);
				goto out_free;
			}
			lost[c] = n;
			continue;
		}
		if (!strncmp(line, "cmdline ", 8)) {
			char *hx = strstr(line + 8, " hex:"), raw[128];

			if (hx) { /* cmdline PID hex:COMM */
				if (unhex(hx + 5, raw, sizeof(raw))) {
					fail(t, "line %d: bad hex: comm", lineno);
					goto out_free;
				}
				buf_put(&t->cmdlines, line + 8, (size_t)(hx + 1 - (line + 8)));
				buf_put(&t->cmdlines, raw, strlen(raw));
			} else
				buf_put(&t->cmdlines, line + 8, strlen(line + 8));
			buf_put(&t->cmdlines, "\n", 1);
			continue;
		}
		if (encode(t, line, &cpu, &ts, rec, &len))
			goto out_free;
		if (cpu >= TDW_MAX_CPUS) {
			fail(t, "line %d: CPU %u out of range", lineno, cpu);
			goto out_free;
		}
		if (cpu > t->max_cpu)
			t->max_cpu = cpu;
		if (cpu_add(t, cpu, ts, rec, len, lost[cpu]))
			goto out_free;
		lost[cpu] = 0;
	}
	for (unsigned int c = 0; c < TDW_MAX_CPUS; c++)
		if (cpu_page_close(&t->cpu[c])) {
			fail(t, "out of memory");
			goto out_free;
		}
	if (opts && opts->cpu_pages) {
		for (unsigned int c = 0; c < opts->n_cpu_pages && c < TDW_MAX_CPUS; c++) {
			size_t n = t->cpu[c].pages.len;

			opts->cpu_pages[c] = n ? malloc(n) : NULL;
			opts->cpu_pages_len[c] = n;
			if (n && !opts->cpu_pages[c]) {
				fail(t, "out of memory");
				goto out_free;
			}
			if (n)
				memcpy(opts->cpu_pages[c], t->cpu[c].pages.p, n);
		}
	}
	rc = out_path ? write_file(t, formats_dir, out_path, opts ? opts : &defaults) : 0;
out_free:
	if (t) {
		for (size_t s = 0; s < t->n_sys; s++)
			for (size_t e = 0; e < t->sys[s].n; e++)
				free(t->sys[s].formats[e]);
		for (unsigned int c = 0; c < TDW_MAX_CPUS; c++)
			free(t->cpu[c].pages.p);
		free(t->cmdlines.p);
		tep_free(t->tep);
	}
	free(t);
	free(text);
	return rc;
}
