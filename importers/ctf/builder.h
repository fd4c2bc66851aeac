/*
 * The analyzer's private contract: the timeline builder, the clock model and
 * the database-level query runner. The builder takes the parser's stream
 * (events, decoded log entries, findings) one item at a time and writes the
 * tables of schemas/timeline.sql into an open SQLite connection; tests drive
 * it directly with synthetic items, nf_timeline_build() drives it from the
 * parser. What must wait for later items (GPU times need calibration pairs
 * that come after them, operations need their log entries) is staged in TEMP
 * tables and resolved by finish(), so memory stays bounded by the number of
 * queues, fences and adapters, never by the number of events.
 */
#ifndef NF_ANALYZER_BUILDER_H
#define NF_ANALYZER_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <sqlite3.h>

#include "contract/errors.h"
#include "nftrace/events.h"
#include "contract/parser.h"
#include "contract/session.h"
#include "contract/timeline.h"

/* Defaults: how late a releasing signal may end after its wait (clock error). */
#define NF_TIMELINE_CAUSALITY_SLACK_NS 2000

struct nf_timeline_builder;

/*
 * Creates a builder writing into db (borrowed; must be empty). Begins one
 * transaction and creates the tables of schemas/timeline.sql and the TEMP
 * staging tables. info is copied (its strings too). Returns NULL on failure
 * with err filled (NF_ESQL, NF_ENOMEM).
 */
struct nf_timeline_builder *nf_timeline_builder_create(sqlite3 *db,
							const struct nf_session_info *info,
							struct nf_error *err);

/* Feeds one item, in the parser's order. Return 0, NF_ESQL or NF_ENOMEM. */
int nf_timeline_builder_feed_event(struct nf_timeline_builder *b, const struct nf_event *ev,
				   struct nf_error *err);
int nf_timeline_builder_feed_entry(struct nf_timeline_builder *b,
				   const struct nf_decoded_entry *entry, struct nf_error *err);
int nf_timeline_builder_feed_finding(struct nf_timeline_builder *b,
				     const struct nf_finding *finding, struct nf_error *err);

/*
 * Resolves what was staged (clock fit, operation matching, dependencies),
 * creates the indexes and views of schemas/timeline-views.sql and commits.
 * Returns 0, NF_ESQL, NF_ENOMEM or NF_ESTATE (called twice).
 */
int nf_timeline_builder_finish(struct nf_timeline_builder *b, struct nf_error *err);

/*
 * Offers the timeline to r (contract/session.h) during finish(), before the
 * operations are loaded, when the session is one whose other tables do not
 * depend on that load; else sets r->why_not. r (borrowed) may be NULL.
 */
void nf_timeline_builder_set_early(struct nf_timeline_builder *b, struct nf_early_reader *r);

/* Rolls back an unfinished build; NULL is a no-op. Does not close the db. */
void nf_timeline_builder_destroy(struct nf_timeline_builder *b);

/* CPU ticks to nanoseconds since the session start. */
int64_t nf_timeline_cpu_ns(uint64_t ticks, uint64_t start_ticks, uint64_t cpu_frequency);

/*
 * Clock model (clock.c). nf_clock_fit() reads the calibration pairs staged in
 * temp.t_cal(adapter, gpu, cpu_ns, freq, from_cmp), smooths them per adapter
 * with a local least-squares line over a sliding window of pairs whose size is
 * chosen by leave-one-out cross-validation (window 0 = choose), and writes
 * temp.t_fit(adapter, gpu, ns, freq), the calibrations rows (with residuals)
 * and the clock_fit rows. The fitted clock (struct nf_clock_fitted; not
 * nfence.h's nf_clock_model, the simulated GPU clock) then maps a GPU
 * timestamp to CPU ns by linear interpolation between successive smoothed
 * pairs, extrapolating with the nearest segment outside them.
 */
int nf_clock_fit(sqlite3 *db, uint32_t window, struct nf_error *err);

struct nf_clock_fitted;
struct nf_clock_fitted *nf_clock_fitted_create(sqlite3 *db, struct nf_error *err);
/* The same, holding the fit points in memory only when there are at most max_points. */
struct nf_clock_fitted *nf_clock_fitted_create_limit(sqlite3 *db, size_t max_points,
						    struct nf_error *err);
/* Sets *known (false: no calibration for that adapter) and *ns. 0 or NF_ESQL. */
int nf_clock_fitted_convert(struct nf_clock_fitted *m, uint32_t adapter, uint64_t gpu,
			    double *ns, bool *known, struct nf_error *err);
void nf_clock_fitted_destroy(struct nf_clock_fitted *m);
/*
 * True when the model holds every fit point in memory: conversions then use
 * no SQLite connection and may run on another thread than the connection's.
 */
bool nf_clock_fitted_detached(const struct nf_clock_fitted *m);
/*
 * A model over a detached model's fit points with a cache of its own, for
 * conversions on another thread while m converts too; destroyed before m.
 * NULL when m is not detached, or out of memory.
 */
struct nf_clock_fitted *nf_clock_fitted_share(const struct nf_clock_fitted *m);

#endif
