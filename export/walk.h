/*
 * Private to the export module: the state of one walk of a timeline (struct
 * exporter: the connections, the writer, the tracks made so far, the
 * selection as SQL) and the helpers its files share: export.c (the entry,
 * the selection, events and their arguments), tracks.c (processes, tracks,
 * lanes; the adapters and queues), flows.c (where flows come from), ops.c
 * (fence operations, read on a thread of their own), cpu.c (CPU threads,
 * waits and signals), anomalies.c and items.c (the timeline's items and
 * their links).
 */
#ifndef NF_EXPORT_WALK_H
#define NF_EXPORT_WALK_H

#include "export_int.h"
#include "contract/errors.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* pass_ops: operations without a time were seen, the export is to be made again. */
#define EXPORT_RETRY 1
#define NAME_MAX_LEN 200
/*
 * Process ids we make up (every process of the export is ours: real thread
 * ids appear only as tids in the CPU threads' one), small so that JSON's
 * per-event "pid" stays short. The tids of tracks we make up: in the CPU
 * threads' process above every Linux thread id (pid_max <= 2^22), elsewhere
 * small (unique in the whole file).
 */
#define PID_CPU 1
#define PID_ADAPTER0 16
#define TID_SYNTH0 0x40000000
/* (2, 3 ...: the processes of the lanes' groups, items.c) */

/* The lanes of one queue or thread: lane 0 is its own track, lane k a child. */
struct lane {
	struct nf_xtrack t;
	int64_t end;        /* end of its last slice */
	int used;
};

struct lanes {
	struct lane *v;
	size_t n, cap;
	char *name;          /* the base name ("Q0 0x40000040"), lanes "... #2" */
	char **names;        /* lane names (lane 0 uses name) */
};

struct xadapter {
	int64_t adapter;
	char *name;
	struct nf_xtrack t;
	int described;
};

struct xqueue {
	int64_t queue;
	int64_t adapter;
	int has_adapter;
	char *name;
	struct lanes lanes;
	struct nf_xtrack anom;       /* "anomalies" child, uuid 0 until described */
	struct nf_xtrack counter[3]; /* waits, signals, other logs */
	char *counter_name[3];
	int64_t lost_total[3];
};

struct xthread {
	int64_t thread;
	struct lanes lanes;
};

struct exporter {
	sqlite3 *db;
	/* A second connection for what the main thread reads while the scan of
	 * fence_ops runs on db in the reader thread (deps by signal, thread names). */
	sqlite3 *db2;
	/* A third, the reader thread's for deps while it scans fence_ops (the flows). */
	sqlite3 *db3;
	const struct nf_export_options *opts;
	struct nf_xwriter *w;
	struct nf_export_stats st;
	struct nf_error *err;
	int64_t t0, t1;           /* window, inclusive */
	int filtered;             /* any filter or window given */
	uint64_t next_uuid;
	int32_t next_tid;         /* made-up tids in the CPU threads' process */
	int32_t next_small_tid;   /* made-up tids elsewhere */
	struct xadapter *adapters;
	size_t n_adapters;
	struct xqueue *queues;    /* sorted by queue */
	size_t n_queues, cap_queues;
	struct xthread *threads;  /* sorted by thread */
	size_t n_threads, cap_threads;
	struct nf_xtrack cpu;     /* the "CPU threads" process */
	int cpu_described;
	struct xqueue session;    /* items with no queue and no thread */
	int session_ready;
	sqlite3_stmt *thread_name;
	int check_ends;           /* flows' other ends checked by joins (see flowsrc_open) */
	int force_check;          /* check_ends even unfiltered (the second try, see pass_ops) */
	struct xgroup *groups;    /* the lanes' tracks (items.c) */
	size_t n_groups, cap_groups;
	struct nf_xtrack group_proc[16]; /* the processes of the lanes' groups, by lanes.grp_ord */
	char *group_name[16];
	char **kept;              /* argument keys and categories of items (items.c: keep) */
	size_t n_kept, cap_kept;
	int64_t items_flow_base;  /* flow id of item link 0 */
	/* SQL predicates from the selection (each "" or " AND ..."). */
	char *op_pred_f, *op_pred_s, *op_pred_w, *cpu_pred_c, *cpu_pred;
	char *item_pred_i, *item_pred_a, *item_pred_b;
};

struct xgroup;

/*
 * Flow ids collected for one signal, and where errors go: the main thread's
 * for the CPU signals' pass, the reader thread's own for fence_ops (the two
 * threads never share one).
 */
struct flowbuf {
	struct nf_error *err;
	uint64_t *v;
	size_t n, cap;
};

/* A sorted stream of (key, value) pairs from deps, merged with a scan. */
struct edge_cursor {
	sqlite3 *db;
	sqlite3_stmt *st;
	int done, started;
	int64_t key, val;
};

/* The waits that end a flow: a bitmap over fence_ops ids (flows.c). */
struct released {
	uint8_t *bits;
	int64_t lo, n;
};

/* deps by signal, merged from its runs (flows.c). */
struct edge {
	int64_t s, w;
};

struct run {
	sqlite3_stmt *st;
	struct edge head;
};

struct sig_runs {
	struct run *r;
	int *heap;    /* indices of runs with a head, smallest head first */
	size_t n, n_heap;
	sqlite3 *db;
};

/*
 * The helpers keep the short names they had in one file; they are linked as
 * nf_xw_NAME, so that no other module's symbols meet them.
 */
#define sql_fail nf_xw_sql_fail
#define oom nf_xw_oom
#define prepare_owned nf_xw_prepare_owned
#define val_null nf_xw_val_null
#define col_null nf_xw_col_null
#define col_or nf_xw_col_or
#define put_hex nf_xw_put_hex
#define op_name nf_xw_op_name
#define new_tid nf_xw_new_tid
#define describe nf_xw_describe
#define arg_int nf_xw_arg_int
#define arg_hex nf_xw_arg_hex
#define arg_str nf_xw_arg_str
#define emit nf_xw_emit
#define cpu_process nf_xw_cpu_process
#define find_adapter nf_xw_find_adapter
#define adapter_process nf_xw_adapter_process
#define lanes_release nf_xw_lanes_release
#define lanes_add nf_xw_lanes_add
#define lanes_pick nf_xw_lanes_pick
#define find_queue nf_xw_find_queue
#define add_queue nf_xw_add_queue
#define queue_base nf_xw_queue_base
#define queue_track nf_xw_queue_track
#define thread_ensure nf_xw_thread_ensure
#define thread_track nf_xw_thread_track
#define session_ensure nf_xw_session_ensure
#define session_track nf_xw_session_track
#define load_adapters nf_xw_load_adapters
#define has_table nf_xw_has_table
#define load_queues nf_xw_load_queues
#define flowbuf_add nf_xw_flowbuf_add
#define cursor_next nf_xw_cursor_next
#define cursor_open nf_xw_cursor_open
#define cursor_seek nf_xw_cursor_seek
#define cursor_collect nf_xw_cursor_collect
#define released_has nf_xw_released_has
#define released_set nf_xw_released_set
#define released_alloc nf_xw_released_alloc
#define released_fill nf_xw_released_fill
#define sig_runs_close nf_xw_sig_runs_close
#define sig_runs_open nf_xw_sig_runs_open
#define sig_runs_collect nf_xw_sig_runs_collect
#define pass_threads nf_xw_pass_threads
#define pass_ops nf_xw_pass_ops
#define pass_cpu_waits nf_xw_pass_cpu_waits
#define pass_cpu_signals nf_xw_pass_cpu_signals
#define pass_anomalies nf_xw_pass_anomalies
#define items_flows_base nf_xw_items_flows_base
#define pass_items nf_xw_pass_items
#define items_release nf_xw_items_release
#define group_track nf_xw_group_track
#define pass_frames nf_xw_pass_frames

/* export.c */
int sql_fail(struct exporter *x, const char *what);
int oom(struct exporter *x);
int prepare_owned(struct exporter *x, sqlite3 *db, char *sql, sqlite3_stmt **st, const char *what);
void op_name(char *d, const char *prefix, sqlite3_stmt *st, int fcol);
int32_t new_tid(struct exporter *x, int32_t pid);
int describe(struct exporter *x, const struct nf_xtrack *t);
int emit(struct exporter *x, struct nf_xevent *e);

/* tracks.c */
int cpu_process(struct exporter *x);
struct xadapter *find_adapter(struct exporter *x, int64_t adapter);
int adapter_process(struct exporter *x, struct xadapter *a);
void lanes_release(struct lanes *l);
int lanes_add(struct exporter *x, struct lanes *l, const struct nf_xtrack *base);
int lanes_pick(struct exporter *x, struct lanes *l, int64_t start, int64_t end, const struct nf_xtrack **out);
struct xqueue *find_queue(struct exporter *x, int64_t queue);
struct xqueue *add_queue(struct exporter *x, int64_t queue);
int queue_base(struct exporter *x, struct xqueue *q, struct nf_xtrack *t);
int queue_track(struct exporter *x, struct xqueue *q, int64_t start, int64_t end, const struct nf_xtrack **out);
int thread_ensure(struct exporter *x, int64_t thread, struct xthread **out);
int thread_track(struct exporter *x, int64_t thread, int64_t start, int64_t end, const struct nf_xtrack **out);
int session_ensure(struct exporter *x);
int session_track(struct exporter *x, int64_t start, int64_t end, const struct nf_xtrack **out);
int load_adapters(struct exporter *x);
int has_table(sqlite3 *db, const char *name);
int load_queues(struct exporter *x);

/* flows.c */
int flowbuf_add(struct flowbuf *fb, uint64_t id);
int cursor_next(struct nf_error *err, struct edge_cursor *c);
int cursor_open(struct nf_error *err, struct edge_cursor *c, sqlite3 *db, char *sql);
int cursor_seek(struct nf_error *err, struct edge_cursor *c, int64_t k, int *ret);
int cursor_collect(struct flowbuf *fb, struct edge_cursor *c, int64_t k);
int released_has(const struct released *r, int64_t id);
void released_set(struct released *r, int64_t id);
int released_alloc(struct exporter *x, sqlite3 *db, struct released *r);
int released_fill(struct exporter *x, sqlite3 *db, struct released *r, const char *sql);
void sig_runs_close(struct sig_runs *m);
int sig_runs_open(struct exporter *x, struct sig_runs *m, sqlite3 *db, struct released *rel, sqlite3_stmt *cpu_ok);
int sig_runs_collect(struct flowbuf *fb, struct sig_runs *m, int64_t k);

/* The passes, in the order export.c runs them. */
int pass_threads(struct exporter *x);     /* cpu.c */
int pass_ops(struct exporter *x);         /* ops.c */
int pass_cpu_waits(struct exporter *x);   /* cpu.c */
int pass_cpu_signals(struct exporter *x); /* cpu.c */
int pass_anomalies(struct exporter *x);   /* anomalies.c */
int items_flows_base(struct exporter *x); /* items.c */
int pass_items(struct exporter *x);       /* items.c */
void items_release(struct exporter *x);   /* items.c */
int pass_frames(struct exporter *x);      /* frames.c */
/* items.c: the track of a lane (st's columns 2, 10 to 14 as pass_items reads them) */
int group_track(struct exporter *x, sqlite3_stmt *st, int wait, int64_t start, int64_t end,
		const struct nf_xtrack **out);


/* Small helpers every row of a pass calls: inline (as calls between the
 * module's files they cost the Chrome JSON export 2.5 % of its instructions). */
static inline int val_null(sqlite3_value *v)
{
	return sqlite3_value_type(v) == SQLITE_NULL;
}

static inline int col_null(sqlite3_stmt *st, int col)
{
	return sqlite3_column_type(st, col) == SQLITE_NULL;
}

static inline int64_t col_or(sqlite3_stmt *st, int col, int64_t dflt)
{
	return col_null(st, col) ? dflt : sqlite3_column_int64(st, col);
}

/* Hexadecimal of v after prefix into d ("0x..."); returns the length. */
static inline size_t put_hex(char *d, uint64_t v)
{
	static const char hx[] = "0123456789abcdef";
	size_t n = 0;
	int started = 0;

	d[n++] = '0';
	d[n++] = 'x';
	for (int sh = 60; sh >= 0; sh -= 4) {
		unsigned k = (unsigned)(v >> sh) & 15;

		if (k || started || sh == 0) {
			d[n++] = hx[k];
			started = 1;
		}
	}
	return n;
}

static inline void arg_int(struct nf_xevent *e, const char *key, int64_t v)
{
	e->args[e->n_args++] = (struct nf_xarg){ .key = key, .type = NF_XA_INT, .i = v };
}

static inline void arg_hex(struct nf_xevent *e, const char *key, int64_t v)
{
	e->args[e->n_args++] = (struct nf_xarg){ .key = key, .type = NF_XA_HEX, .i = v };
}

static inline void arg_str(struct nf_xevent *e, const char *key, const char *s)
{
	e->args[e->n_args++] = (struct nf_xarg){ .key = key, .type = NF_XA_STR, .s = s };
}

#endif
