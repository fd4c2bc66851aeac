/*
 * Private to parser/: the native reader (fastread.c) for sessions whose
 * metadata nftrace generated at this schema version. It decodes the stream
 * files' packets itself and merges the streams in the order babeltrace2's
 * filter.utils.muxer gives; reader.c uses it instead of the babeltrace2 graph
 * for such sessions (NFTRACE_READER=babeltrace2 forces the graph).
 */
#ifndef NF_PARSER_FASTREAD_H
#define NF_PARSER_FASTREAD_H

#include "contract/errors.h"
#include "nftrace/events.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the reader needs from the trace class (read by the babeltrace2 probe). */
struct nf_fr_trace {
	uint64_t freq;               /* clock frequency (Hz) */
	int64_t offset_s;            /* clock offset, seconds ... */
	uint64_t offset_cycles;      /* ... and cycles (< freq), as babeltrace2 normalises them */
	uint32_t stream_classes;     /* bit per stream class id the metadata defines */
};

/* Called per event, in muxed order; stream is the file's base name, packet its
 * ordinal in the file (from 0). ev's pointers are valid during the call only. */
struct nf_fr_sink {
	void *ctx;
	int (*event)(void *ctx, struct nf_event *ev, const char *stream, uint64_t packet);
	void (*discarded)(void *ctx, uint64_t count);
};

/* Runs the native reader over dir. Returns 0, a sink's code, NF_EFORMAT
 * ("DIR/FILE: packet at offset N: what"), NF_EIO or NF_ENOMEM. */
int nf_fastread_run(const char *dir, const struct nf_fr_trace *tr, const struct nf_fr_sink *sink,
		    struct nf_error *err);

/* Grows a reusable buffer to hold n elements of size sz (n bounded by the
 * caller); both readers use it. 0 or NF_ENOMEM. */
int nf_parser_buf_reserve(void **buf, size_t *cap, size_t n, size_t sz, struct nf_error *err);

/* The sequence bound the babeltrace2 path applies too (elements per field). */
#define NF_READER_MAX_SEQ (1u << 20)

#endif
