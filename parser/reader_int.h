/*
 * The session reader's private parts, shared by its three files:
 *   reader.c        the dispatch: nf_parser_open / run / destroy, our own
 *                   sessions to the native reader (fastread.c), any other
 *                   trace to babeltrace2's graph; the log replay's turn;
 *   reader_bt.c     reading a trace through libbabeltrace2's graph (field
 *                   decoding by name, environment, packets, the sink);
 *   reader_child.c  crash containment: babeltrace2 reads a foreign trace in
 *                   a child process first (killed at a time bound, memory
 *                   capped), so its crashes end the child, not the caller.
 * Private to parser/.
 */
#ifndef NF_PARSER_READER_INT_H
#define NF_PARSER_READER_INT_H

#include "contract/parser.h"

#include "fastread.h"

#include <babeltrace2/babeltrace.h>
#include <stdbool.h>
#include <stdint.h>

/* Bounds on what one trace may make us allocate. */
#define NF_READER_MAX_CLASSES 4096u        /* distinct event classes */
#define NF_READER_MAX_STREAMS 256u         /* streams whose packets findings name */

/* How one event class of the trace maps onto the schema (reader_bt.c). */
struct nf_class_map;

struct nf_parser {
	char *dir;
	struct nf_session_info info;
	struct nf_parser_stats stats;
	const bt_plugin *ctf_plugin;
	const bt_plugin *utils_plugin;
	bool ran;
	bool fast;                   /* nftrace's own metadata: the native reader */
	struct nf_fr_trace tr;       /* what it needs from the trace class */
};

/* State of one pass over the graph (the environment probe or the full run). */
struct nf_pass {
	struct nf_parser *p;
	bool probe;                         /* only looking for the environment */
	bool env_done;
	const struct nf_parser_callbacks *cb;
	struct nf_logreplay *replay;
	struct nf_error *err;
	int rc;                             /* our own error, stops the graph */
	struct nf_class_map *classes;
	size_t n_classes, cap_classes;
	uint32_t *u32s;
	size_t cap_u32s;
	struct nf_log_entry *entries;
	size_t cap_entries;
	/* The current packet of each stream, for findings' places (streams live
	 * as long as the graph, so their addresses are stable keys). */
	struct {
		const bt_stream *stream;
		uint64_t packet, ordinal;
	} streams[NF_READER_MAX_STREAMS];
	size_t n_streams;
	uint64_t cur_packet;                /* packet of the event being fed */
	struct nf_parser_callbacks replay_cb; /* wraps cb: adds the packet */
};

/* "" that the session info points at until a value is read (never freed). */
extern const char nf_empty[];

/* ---- reader.c ---- */

/* The log replay's turn for an event the caller has seen (either reader). */
int nf_pass_replay(struct nf_pass *ps, const struct nf_event *ev, const char *stream,
		   uint64_t packet, uint64_t index);

/* ---- reader_bt.c ---- */

/* Finds babeltrace2's plugin `name` (ctf, utils); NF_EFORMAT when absent. */
int nf_find_plugin(const char *name, const bt_plugin **out, struct nf_error *err);
/* Builds the graph source.ctf.fs -> muxer -> our sink for one pass. */
int nf_graph_build(struct nf_pass *ps, bt_graph **out);
/* Runs the graph to its end (or the pass's error). */
int nf_graph_drive(struct nf_pass *ps, bt_graph *g);
/* Frees the pass's class maps and reused buffers. */
void nf_pass_release(struct nf_pass *ps);
/* Runs the graph up to the first stream, for the environment and the clock. */
int nf_parser_probe(struct nf_parser *p, struct nf_error *err);

/* ---- reader_child.c ---- */

/*
 * Reads the trace in a child first. Returns 0 when the child read it whole
 * (the graph then runs here), the child's own error when babeltrace2 refused
 * the trace, NF_EFORMAT when the child crashed or ran out of time, NF_EIO
 * when it could not be started.
 */
int nf_bt_contained(struct nf_parser *p, struct nf_error *err);

#endif
