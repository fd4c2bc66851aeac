/*
 * Private to the export module: the buffered output both formats write
 * through, and the writer interface the timeline walk (export.c) drives. A
 * writer turns tracks, slices, instants and counters into bytes of its format
 * (perfetto.c, chrome_json.c); it never reads the database.
 */
#ifndef NF_EXPORT_INT_H
#define NF_EXPORT_INT_H

#include "contract/export.h"

#include <stdint.h>
#include <stdio.h>

/* Buffered output: bytes collect in buf and go to f when it fills. */
struct nf_xout_bg;
struct nf_xout {
	FILE *f;
	unsigned char *buf;  /* (with a writer thread, the buffers swap: free it after nf_xout_stop) */
	size_t len, cap;
	uint64_t written;  /* bytes handed to f so far */
	int failed;        /* a write failed (errno kept in err_no) */
	int err_no;
	struct nf_xout_bg *bg;  /* the writer thread, NULL: writes happen inline */
};

/* Starts a writer thread (full buffers are written while the next fills);
 * -1 when it cannot (writes then stay inline). nf_xout_stop waits for it and
 * ends it; both keep what was written and any error in o. */
int nf_xout_start(struct nf_xout *o);
void nf_xout_stop(struct nf_xout *o);

/* Makes room for n more bytes (flushing); returns a pointer to write them at,
 * or NULL after a write error or when n exceeds the buffer. */
unsigned char *nf_xout_reserve(struct nf_xout *o, size_t n);
void nf_xout_bytes(struct nf_xout *o, const void *p, size_t n);
void nf_xout_str(struct nf_xout *o, const char *s);
int nf_xout_flush(struct nf_xout *o);

/* nf_xout_bytes with the common case (room in the buffer) inline. */
static inline void nf_xout_put(struct nf_xout *o, const void *p, size_t n)
{
	if (o->cap - o->len >= n) {
		__builtin_memcpy(o->buf + o->len, p, n);
		o->len += n;
	} else {
		nf_xout_bytes(o, p, n);
	}
}

/* A string literal, its length known at compile time. */
#define NF_XOUT_LIT(o, lit) nf_xout_put((o), (lit), sizeof(lit) - 1)

enum nf_xtrack_kind {
	NF_XT_PROCESS,  /* an adapter, or the CPU threads: pid, name */
	NF_XT_THREAD,   /* a CPU thread: pid (its process), tid, name */
	NF_XT_PLAIN,    /* a queue, a lane, an anomalies or session track: name, parent */
	NF_XT_COUNTER,  /* a counter: name, parent */
};

struct nf_xtrack {
	enum nf_xtrack_kind kind;
	uint64_t uuid;         /* unique, nonzero */
	uint64_t parent;       /* parent track's uuid, 0: none */
	int32_t pid, tid;      /* JSON pid and tid of what is drawn on it (tid 0: none) */
	int32_t sort;          /* order among its siblings */
	const char *name;
};

/* One argument of an event. */
struct nf_xarg {
	const char *key;     /* a string literal: writers may know it by its address */
	enum { NF_XA_INT, NF_XA_HEX, NF_XA_STR } type;
	int64_t i;
	const char *s;
};

#define NF_XARGS_MAX 10

/* A slice (end >= ts; instant: end == ts and instant set), with an optional
 * nested "stall" slice from stall_ts to end (stall_ts < 0: none). */
struct nf_xevent {
	const struct nf_xtrack *track;
	int64_t ts, end, stall_ts;
	int instant;
	const char *name, *cat;  /* cat: a string literal (known by address) */
	uint64_t name_key;       /* nonzero: every event with this key has this name
				  * (writers may know the name by it without reading it) */
	struct nf_xarg args[NF_XARGS_MAX];
	int n_args;
	const uint64_t *flows_out;  /* flows starting here */
	size_t n_flows_out;
	uint64_t flow_in;           /* flow ending here, 0: none */
	const uint64_t *flows_in;   /* more flows ending here (a job's dependencies) */
	size_t n_flows_in;
};

struct nf_xwriter {
	int (*begin)(struct nf_xwriter *w);
	int (*track)(struct nf_xwriter *w, const struct nf_xtrack *t);
	int (*event)(struct nf_xwriter *w, const struct nf_xevent *e);
	int (*counter)(struct nf_xwriter *w, const struct nf_xtrack *t, int64_t ts, int64_t value);
	int (*end)(struct nf_xwriter *w);
	void (*destroy)(struct nf_xwriter *w);
	struct nf_xout *out;
};

/* Writers (NULL on allocation failure); each writes through out. */
struct nf_xwriter *nf_export_perfetto_create(struct nf_xout *out);
struct nf_xwriter *nf_export_chrome_create(struct nf_xout *out);

#endif
