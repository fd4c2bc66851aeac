/*
 * The ETL test writer (etl_writer.h): small .etl files laid out as
 * /work/shared/reference/etw/etl-format.md describes, written with its own
 * byte packing (not etl/'s code) so tests compare two independent readings
 * of the format.
 */
#include "etl_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_HDR 72u

struct cpu_buf {
	uint8_t *p;            /* buffer_size bytes, or NULL when none is open */
	uint32_t used;
	uint16_t flags;
	int64_t last_ts;
};

struct nf_etlw {
	struct nf_etlw_options o;
	struct cpu_buf *cpus;
	uint32_t ncpus;
	uint8_t *out;          /* flushed buffers (after the header buffer) */
	size_t nout, capout;
	uint8_t *file;         /* the finished file */
	size_t nfile;
	uint64_t seq;
	bool finished;
};

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q) {
		fprintf(stderr, "etl_writer: out of memory\n");
		abort();
	}
	return q;
}

static void w16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void w32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void w64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }

static void wguid(uint8_t *p, const struct nf_etl_guid *g)
{
	if (!g) {
		memset(p, 0, 16);
		return;
	}
	w32(p, g->data1);
	w16(p + 4, g->data2);
	w16(p + 6, g->data3);
	memcpy(p + 8, g->data4, 8);
}

/* ---- payload builder ---------------------------------------------------- */

static void buf_room(struct nf_etlw_buf *b, size_t n)
{
	if (b->n + n > b->cap) {
		size_t c = b->cap ? b->cap * 2 : 64;
		while (c < b->n + n)
			c *= 2;
		b->p = xrealloc(b->p, c);
		b->cap = c;
	}
}

void nf_etlw_put_bytes(struct nf_etlw_buf *b, const void *p, size_t n)
{
	buf_room(b, n);
	if (n)
		memcpy(b->p + b->n, p, n);
	b->n += n;
}

void nf_etlw_put_u8(struct nf_etlw_buf *b, uint8_t v) { nf_etlw_put_bytes(b, &v, 1); }
void nf_etlw_put_u16(struct nf_etlw_buf *b, uint16_t v) { uint8_t t[2]; w16(t, v); nf_etlw_put_bytes(b, t, 2); }
void nf_etlw_put_u32(struct nf_etlw_buf *b, uint32_t v) { uint8_t t[4]; w32(t, v); nf_etlw_put_bytes(b, t, 4); }
void nf_etlw_put_u64(struct nf_etlw_buf *b, uint64_t v) { uint8_t t[8]; w64(t, v); nf_etlw_put_bytes(b, t, 8); }

void nf_etlw_put_ptr(struct nf_etlw_buf *b, uint64_t v)
{
	if (b->pointer_size == 4)
		nf_etlw_put_u32(b, (uint32_t)v);
	else
		nf_etlw_put_u64(b, v);
}

void nf_etlw_put_wstr(struct nf_etlw_buf *b, const char *s)
{
	for (; *s; s++)
		nf_etlw_put_u16(b, (uint8_t)*s);
	nf_etlw_put_u16(b, 0);
}

void nf_etlw_buf_free(struct nf_etlw_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->n = b->cap = 0;
}

/* ---- buffers ------------------------------------------------------------ */

struct nf_etlw *nf_etlw_create(const struct nf_etlw_options *o)
{
	struct nf_etlw *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	if (o)
		w->o = *o;
	if (!w->o.buffer_size)
		w->o.buffer_size = 8192;
	if (w->o.buffer_size < 1024 || w->o.buffer_size % 8) { /* the logfile header must fit */
		free(w);
		return NULL;
	}
	if (!w->o.cpus)
		w->o.cpus = 4;
	if (!w->o.header_pointer_size)
		w->o.header_pointer_size = 8;
	if (!w->o.pointer_size)
		w->o.pointer_size = w->o.header_pointer_size;
	if (!w->o.os_build)
		w->o.os_build = 17134;
	if (!w->o.clock_type)
		w->o.clock_type = NF_ETL_CLOCK_QPC;
	if (!w->o.perf_freq)
		w->o.perf_freq = 10000000;
	if (!w->o.cpu_mhz)
		w->o.cpu_mhz = 3000;
	if (!w->o.start_filetime)
		w->o.start_filetime = 131908320000000000; /* 2019-01-01 00:00:00 UTC */
	if (!w->o.header_ticks)
		w->o.header_ticks = 1000;
	if (!w->o.logger_name)
		w->o.logger_name = "NT Kernel Logger";
	if (!w->o.log_file_name)
		w->o.log_file_name = "C:\\capture.etl";
	w->ncpus = 256;
	w->cpus = calloc(w->ncpus, sizeof(*w->cpus));
	if (!w->cpus) {
		free(w);
		return NULL;
	}
	return w;
}

void nf_etlw_destroy(struct nf_etlw *w)
{
	if (!w)
		return;
	for (uint32_t i = 0; i < w->ncpus; i++)
		free(w->cpus[i].p);
	free(w->cpus);
	free(w->out);
	free(w->file);
	free(w);
}

/* Fills a WMI_BUFFER_HEADER. */
static void buffer_header(struct nf_etlw *w, uint8_t *b, uint32_t used, uint16_t cpu, uint16_t flags,
			  uint16_t type, int64_t ts)
{
	uint32_t bs = w->o.buffer_size;
	memset(b, 0, BUF_HDR);
	w32(b + 0x00, bs);
	w32(b + 0x04, used);            /* SavedOffset */
	w32(b + 0x08, used);            /* CurrentOffset */
	w64(b + 0x10, (uint64_t)ts);    /* flush time */
	w64(b + 0x18, ++w->seq);        /* SequenceNumber */
	b[0x28] = (uint8_t)cpu;         /* ProcessorNumber */
	w16(b + 0x2A, 17);              /* LoggerId */
	w32(b + 0x30, used);            /* Offset */
	w16(b + 0x34, (uint16_t)(0x20 | flags));
	w16(b + 0x36, type);
	if (used < bs)
		memset(b + used, 0xFF, bs - used);
}

static void flush_cpu(struct nf_etlw *w, uint16_t cpu)
{
	struct cpu_buf *c = &w->cpus[cpu];
	if (!c->p)
		return;
	buffer_header(w, c->p, c->used, cpu, c->flags, 0, c->last_ts);
	if (w->nout + w->o.buffer_size > w->capout) {
		size_t nc = w->capout ? w->capout * 2 : (size_t)w->o.buffer_size * 8;
		while (nc < w->nout + w->o.buffer_size)
			nc *= 2;
		w->out = xrealloc(w->out, nc);
		w->capout = nc;
	}
	memcpy(w->out + w->nout, c->p, w->o.buffer_size);
	w->nout += w->o.buffer_size;
	free(c->p);
	c->p = NULL;
	c->used = 0;
	c->flags = 0;
}

static struct cpu_buf *open_cpu(struct nf_etlw *w, uint16_t cpu)
{
	struct cpu_buf *c = &w->cpus[cpu % w->ncpus];
	if (!c->p) {
		c->p = xrealloc(NULL, w->o.buffer_size);
		memset(c->p, 0, w->o.buffer_size);
		c->used = BUF_HDR;
	}
	return c;
}

/* Room for n bytes (8-aligned start) in cpu's buffer; a full one is flushed. */
static uint8_t *reserve(struct nf_etlw *w, uint16_t cpu, uint32_t n, int64_t ts)
{
	if (w->finished || n > w->o.buffer_size - BUF_HDR)
		return NULL;
	cpu = (uint16_t)(cpu % w->ncpus);
	uint32_t pad = (n + 7u) & ~7u;
	struct cpu_buf *c = open_cpu(w, cpu);
	if (c->used + pad > w->o.buffer_size) {
		flush_cpu(w, cpu);
		c = open_cpu(w, cpu);
	}
	uint8_t *p = c->p + c->used;
	memset(p, 0, pad);
	c->used += pad;
	c->last_ts = ts;
	return p;
}

void nf_etlw_flag(struct nf_etlw *w, uint16_t cpu, uint16_t flags)
{
	open_cpu(w, cpu)->flags |= flags;
}

/* ---- records ------------------------------------------------------------ */

int nf_etlw_event(struct nf_etlw *w, const struct nf_etlw_event *e)
{
	unsigned ps = e->pointer_size ? e->pointer_size : 8;
	uint32_t ext = 0;
	for (unsigned i = 0; i < e->ext_n; i++)
		ext += 8 + ((e->ext[i].size + 7u) & ~7u);
	uint32_t size = 80 + ext + e->size;
	if (size > 0xFFFF)
		return -1;
	uint8_t *p = reserve(w, e->cpu, size, e->ticks);
	if (!p)
		return -1;
	w16(p + 0, (uint16_t)size);
	w16(p + 2, (uint16_t)(0xC000 | (ps == 4 ? 0x12 : 0x13)));
	w16(p + 4, e->ext_n ? 0x0001 : 0);
	w16(p + 6, 0);
	w32(p + 8, e->tid);
	w32(p + 12, e->pid);
	w64(p + 16, (uint64_t)e->ticks);
	wguid(p + 24, e->provider);
	w16(p + 40, e->id);
	p[42] = e->version;
	p[43] = e->channel;
	p[44] = e->level;
	p[45] = e->opcode;
	w16(p + 46, e->task);
	w64(p + 48, e->keyword);
	/* 56: kernel/user time, 64: activity id: zero */
	uint32_t q = 80;
	for (unsigned i = 0; i < e->ext_n; i++) {
		w16(p + q + 2, e->ext[i].type);
		w16(p + q + 4, i + 1 < e->ext_n ? 1 : 0);
		w16(p + q + 6, e->ext[i].size);
		if (e->ext[i].size)
			memcpy(p + q + 8, e->ext[i].data, e->ext[i].size);
		q += 8 + ((e->ext[i].size + 7u) & ~7u);
	}
	if (e->size)
		memcpy(p + q, e->payload, e->size);
	return 0;
}

int nf_etlw_classic(struct nf_etlw *w, const struct nf_etlw_classic *c)
{
	unsigned ps = c->pointer_size ? c->pointer_size : 8;
	uint32_t hdr;
	uint8_t type;
	switch (c->kind) {
	case NF_ETL_HDR_SYSTEM: hdr = 32; type = ps == 4 ? 0x01 : 0x02; break;
	case NF_ETL_HDR_COMPACT: hdr = 24; type = ps == 4 ? 0x03 : 0x04; break;
	case NF_ETL_HDR_PERFINFO: hdr = 16; type = ps == 4 ? 0x10 : 0x11; break;
	default: return -1;
	}
	uint32_t size = hdr + c->size;
	if (size > 0xFFFF)
		return -1;
	uint8_t *p = reserve(w, c->cpu, size, c->ticks);
	if (!p)
		return -1;
	w32(p, (uint32_t)c->version | (uint32_t)type << 16 | 0xC0u << 24);
	w16(p + 4, (uint16_t)size);
	w16(p + 6, c->hook_id);
	if (c->kind == NF_ETL_HDR_PERFINFO) {
		w64(p + 8, (uint64_t)c->ticks);
	} else {
		w32(p + 8, c->tid);
		w32(p + 12, c->pid);
		w64(p + 16, (uint64_t)c->ticks);
	}
	if (c->size)
		memcpy(p + hdr, c->payload, c->size);
	return 0;
}

int nf_etlw_full(struct nf_etlw *w, const struct nf_etlw_full *f)
{
	unsigned ps = f->pointer_size ? f->pointer_size : 8;
	bool full = f->kind == NF_ETL_HDR_FULL;
	if (!full && f->kind != NF_ETL_HDR_INSTANCE)
		return -1;
	uint32_t hdr = full ? 48 : 72;
	uint8_t type = full ? (ps == 4 ? 0x0A : 0x14) : (ps == 4 ? 0x0B : 0x15);
	uint32_t size = hdr + f->size;
	if (size > 0xFFFF)
		return -1;
	uint8_t *p = reserve(w, f->cpu, size, f->ticks);
	if (!p)
		return -1;
	w16(p, (uint16_t)size);
	p[2] = type;
	p[3] = 0xC0;
	p[4] = f->class_type;
	p[5] = f->class_level;
	w16(p + 6, f->class_version);
	w32(p + 8, f->tid);
	w32(p + 12, f->pid);
	w64(p + 16, (uint64_t)f->ticks);
	wguid(p + 24, f->guid);
	if (f->size)
		memcpy(p + hdr, f->payload, f->size);
	return 0;
}

int nf_etlw_raw(struct nf_etlw *w, uint16_t cpu, const void *bytes, uint32_t size)
{
	uint8_t *p = reserve(w, cpu, size, w->cpus[cpu % w->ncpus].last_ts);
	if (!p)
		return -1;
	memcpy(p, bytes, size);
	return 0;
}

/* ---- the logfile header and the file ------------------------------------ */

static void header_buffer(struct nf_etlw *w, uint8_t *b)
{
	const struct nf_etlw_options *o = &w->o;
	unsigned ps = o->header_pointer_size;
	struct nf_etlw_buf pl = {.pointer_size = ps};
	uint32_t nbuf = (uint32_t)(w->nout / o->buffer_size) + 1;

	/* TRACE_LOGFILE_HEADER */
	nf_etlw_put_u32(&pl, o->buffer_size);
	nf_etlw_put_bytes(&pl, (const uint8_t[4]){10, 0, 1, 5}, 4);
	nf_etlw_put_u32(&pl, o->os_build);
	nf_etlw_put_u32(&pl, o->cpus);
	nf_etlw_put_u64(&pl, (uint64_t)o->start_filetime + 20000000); /* EndTime */
	nf_etlw_put_u32(&pl, 156250);           /* TimerResolution */
	nf_etlw_put_u32(&pl, 0);                /* MaximumFileSize */
	nf_etlw_put_u32(&pl, 0x8000001);        /* LogFileMode */
	nf_etlw_put_u32(&pl, nbuf);             /* BuffersWritten */
	nf_etlw_put_u32(&pl, 1);                /* StartBuffers */
	nf_etlw_put_u32(&pl, o->pointer_size);  /* PointerSize */
	nf_etlw_put_u32(&pl, o->events_lost);
	nf_etlw_put_u32(&pl, o->cpu_mhz);
	nf_etlw_put_ptr(&pl, 0x1000);           /* LoggerName (a pointer of the writer's process) */
	nf_etlw_put_ptr(&pl, 0x2000);           /* LogFileName */
	uint8_t tz[172];
	memset(tz, 0, sizeof(tz));
	nf_etlw_put_bytes(&pl, tz, sizeof(tz));
	while (pl.n % 8)
		nf_etlw_put_u8(&pl, 0);
	nf_etlw_put_u64(&pl, (uint64_t)o->start_filetime - 36000000000); /* BootTime */
	nf_etlw_put_u64(&pl, o->perf_freq);
	nf_etlw_put_u64(&pl, (uint64_t)o->start_filetime);
	nf_etlw_put_u32(&pl, o->clock_type);    /* ReservedFlags */
	nf_etlw_put_u32(&pl, o->buffers_lost);
	nf_etlw_put_wstr(&pl, o->logger_name);
	nf_etlw_put_wstr(&pl, o->log_file_name);

	memset(b, 0, o->buffer_size);
	uint32_t used = BUF_HDR;
	uint8_t *p = b + used;
	uint32_t size = 32 + (uint32_t)pl.n;
	w32(p, 2u | (uint32_t)(ps == 4 ? 0x01 : 0x02) << 16 | 0xC0u << 24);
	w16(p + 4, (uint16_t)size);
	w16(p + 6, 0x0000);
	w32(p + 8, 100);
	w32(p + 12, 200);
	w64(p + 16, (uint64_t)o->header_ticks);
	memcpy(p + 32, pl.p, pl.n);
	used += (size + 7u) & ~7u;
	/* The second record every real file has: HookId 0x0050, 48 bytes. */
	p = b + used;
	w32(p, 2u | (uint32_t)(ps == 4 ? 0x01 : 0x02) << 16 | 0xC0u << 24);
	w16(p + 4, 32 + 48);
	w16(p + 6, 0x0050);
	w32(p + 8, 100);
	w32(p + 12, 200);
	w64(p + 16, (uint64_t)o->header_ticks);
	used += 32 + 48;
	nf_etlw_buf_free(&pl);
	buffer_header(w, b, used, 0, 0x1, 4, o->header_ticks);
}

int nf_etlw_finish(struct nf_etlw *w, const uint8_t **data, size_t *size)
{
	if (!w->finished) {
		for (uint32_t c = 0; c < w->ncpus; c++)
			flush_cpu(w, (uint16_t)c);
		w->nfile = w->o.buffer_size + w->nout;
		w->file = xrealloc(NULL, w->nfile);
		header_buffer(w, w->file);
		if (w->nout)
			memcpy(w->file + w->o.buffer_size, w->out, w->nout);
		w->finished = true;
	}
	*data = w->file;
	*size = w->nfile;
	return 0;
}

int nf_etlw_save(struct nf_etlw *w, const char *path)
{
	const uint8_t *d;
	size_t n;
	nf_etlw_finish(w, &d, &n);
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t k = fwrite(d, 1, n, f);
	if (fclose(f) != 0 || k != n)
		return -1;
	return 0;
}

uint32_t nf_etlw_buffers(const struct nf_etlw *w)
{
	return w->finished ? (uint32_t)(w->nfile / w->o.buffer_size) : 0;
}

int64_t nf_etlw_buffer_offset(const struct nf_etlw *w, uint32_t i)
{
	if (!w->finished || i >= nf_etlw_buffers(w))
		return -1;
	return (int64_t)i * w->o.buffer_size;
}
