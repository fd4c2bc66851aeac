/*
 * The parser on a thread of its own: nf_timeline_run_pipelined() runs
 * nf_parser_run() on another thread and hands copies of its items (events,
 * decoded entries, findings) to the callbacks on the calling thread, in the
 * same order, a few hundred at a time, so that reading and replaying the logs
 * overlaps what the callbacks do with them (the timeline builder's matching).
 *
 * The copies carry nf_event.str, nf_event.u32s and nf_finding.stream (valid
 * during the call, as from the parser) but not nf_event.entries (NULL): the
 * entries of a LOG_READ come decoded, through the entry callback.
 */
#ifndef NF_ANALYZER_PIPELINE_H
#define NF_ANALYZER_PIPELINE_H

#include "contract/errors.h"
#include "contract/parser.h"

/*
 * Returns what nf_parser_run() would: 0, the parser's error (err filled), or
 * the first non-zero callback return (the parser is stopped then).
 * NF_ENOMEM when the copies cannot be had. Without a thread, runs the parser
 * directly.
 */
int nf_timeline_run_pipelined(struct nf_parser *p, const struct nf_parser_callbacks *cb,
			    struct nf_error *err);

#endif
