/*
 * The native fence engine: the per-queue waits and signals log buffers. The
 * GPU's writes (with overruns and timestamp faults), the OS's reads and its
 * bookkeeping, recreated logs and the ground truth of each entry. Split out of
 * engine.c (issue #27).
 */
#include "engine_int.h"
#include "contract/errors.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "contract/capbuf.h"

/* ------------------------------------------------------------------ */
/* log buffers                                                         */

struct nf_log *nf_eng_queue_log(struct nf_queue *q, uint32_t type)
{
	return &q->logs[type == NF_LOG_WAITS ? 0 : 1];
}

int nf_eng_log_alloc(struct nf_log *lg, uint32_t type, uint32_t capacity)
{
	free(lg->entries);
	free(lg->truth);
	memset(lg, 0, sizeof(*lg));
	lg->type = type;
	lg->capacity = capacity;
	lg->entries = calloc(capacity, sizeof(*lg->entries));
	lg->truth = calloc(capacity, sizeof(*lg->truth));
	if (!lg->entries || !lg->truth)
		return NF_ENOMEM;
	lg->header.type = type;
	lg->header.number_of_entries = capacity;
	return 0;
}

int nf_eng_emit_set_log(struct nf_runtime *rt, struct nf_queue *q, struct nf_log *lg)
{
	struct nf_event ev;

	EV_INIT(ev, SET_LOG_BUFFER);
	ev.f[NFF_SET_LOG_BUFFER_adapter] = q->adapter;
	ev.f[NFF_SET_LOG_BUFFER_hwqueue] = q->handle;
	ev.f[NFF_SET_LOG_BUFFER_log_type] = lg->type;
	ev.f[NFF_SET_LOG_BUFFER_epoch] = lg->epoch;
	ev.f[NFF_SET_LOG_BUFFER_capacity] = lg->capacity;
	return nf_eng_emit(rt, &ev);
}

static int emit_truth_op(struct nf_runtime *rt, const struct nf_queue *q, uint32_t log_type,
			 uint32_t epoch, uint64_t seq, const struct nf_truth_slot *t, uint32_t fate)
{
	struct nf_event ev;

	(void)log_type;
	if (!rt->cfg.ground_truth) {
		/* What emit_at does with a truth event nobody asked for, without
		 * filling it first. */
		if (rt->err.code)
			return rt->err.code;
		STAT(rt, events_emitted);
		return 0;
	}
	EV_INIT(ev, TRUTH_OP);
	ev.f[NFF_TRUTH_OP_adapter] = q->adapter;
	ev.f[NFF_TRUTH_OP_hwqueue] = q->handle;
	ev.f[NFF_TRUTH_OP_op] = t->op;
	ev.f[NFF_TRUTH_OP_fence] = t->local;
	ev.f[NFF_TRUTH_OP_value] = t->value;
	ev.f[NFF_TRUTH_OP_queued_ns] = t->queued_ns;
	ev.f[NFF_TRUTH_OP_observed_ns] = t->observed_ns;
	ev.f[NFF_TRUTH_OP_end_ns] = t->end_ns;
	ev.f[NFF_TRUTH_OP_epoch] = epoch;
	ev.f[NFF_TRUTH_OP_seq] = seq;
	ev.f[NFF_TRUTH_OP_fate] = fate;
	ev.f[NFF_TRUTH_OP_ts_fault] = t->ts_fault;
	return nf_eng_emit(rt, &ev);
}

/*
 * The GPU writes a log entry: payload, then FirstFreeEntryIndex (and
 * WraparoundCount when it wraps). Overrun is permitted: an entry the OS never
 * read is overwritten, and the truth stream says so.
 *
 * Threaded mode: the queue's engine thread is the only writer; the OS reads
 * under the queue's log lock, which stands for the flush handshake the OS does
 * with DxgkDdiUpdateNativeFenceLogs before it reads a log.
 */
int nf_eng_log_write(struct nf_runtime *rt, struct nf_queue *q, struct nf_log *lg,
		     const struct nf_cmd *c, uint64_t observed_ns, uint64_t end_ns)
{
	const struct nf_adapter *a = &rt->adapters[q->adapter];
	uint64_t *rng = rt->threaded ? &q->rng : &rt->rng;
	struct nf_truth_slot lost_truth;
	uint64_t lost_seq = 0;
	uint32_t fault = 0, epoch;
	bool lost = false;
	uint64_t end_ts = nf_eng_gpu_ticks(a, end_ns);

	nf_th_log_lock(rt, q);
	uint64_t seq = lg->written;
	/* FirstFreeEntryIndex is always written % capacity: no division */
	uint32_t slot = lg->header.first_free_entry_index;
	struct nf_log_entry *e = &lg->entries[slot];

	epoch = lg->epoch;
	if (seq >= lg->capacity && seq - lg->capacity >= lg->read_total) {
		/* Overwriting an entry the OS never read. */
		lost = true;
		lost_seq = seq - lg->capacity;
		lost_truth = lg->truth[slot];
		lg->lost++;
		STAT(rt, log_entries_lost);
	}
	if (a->desc.zero_ts_rate > 0 && nf_eng_rng_unit(rng) < a->desc.zero_ts_rate) {
		end_ts = 0; /* a linked adapter of the chain skipped the write */
		fault = 1;
	} else if (a->desc.repeat_ts_rate > 0 && lg->last_end_ts &&
		   nf_eng_rng_unit(rng) < a->desc.repeat_ts_rate) {
		end_ts = lg->last_end_ts;
		fault = 2;
	}
	if (end_ts)
		lg->last_end_ts = end_ts;
	memset(e, 0, sizeof(*e));
	e->fence_value = c->value;
	e->hnative_fence = c->local;
	if (lg->type == NF_LOG_WAITS) {
		e->operation_type = NF_LOG_OP_WAIT_UNBLOCKED;
		e->fence_observed_gpu_timestamp = fault == 1 ? 0 : nf_eng_gpu_ticks(a, observed_ns);
	} else {
		e->operation_type = NF_LOG_OP_SIGNAL_EXECUTED;
	}
	e->fence_end_gpu_timestamp = end_ts;
	struct nf_truth_slot *t = &lg->truth[slot];
	t->queued_ns = c->queued_ns;
	t->observed_ns = observed_ns;
	t->end_ns = end_ns;
	t->value = c->value;
	t->local = c->local;
	t->op = lg->type == NF_LOG_WAITS ? 1 : 0;
	t->ts_fault = fault;
	/* Increment FirstFreeEntryIndex, then a barrier (the interrupt check follows). */
	lg->written++;
	if (slot + 1 == lg->capacity) {
		lg->header.first_free_entry_index = 0;
		lg->header.wraparound_count++; /* (uint32_t)(written / capacity) */
	} else {
		lg->header.first_free_entry_index = slot + 1;
	}
	atomic_thread_fence(memory_order_release);
	nf_th_log_unlock(rt, q);
	STAT(rt, log_entries_written);
	if (!lost)
		return 0;
	nf_th_lock(rt);
	int rc = emit_truth_op(rt, q, lg->type, epoch, lost_seq, &lost_truth, 1);
	nf_th_unlock(rt);
	return rc;
}

int nf_eng_u32_cmp(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}

/*
 * Optimized interrupt bookkeeping: the OS read a signal entry of global fence
 * gi from q's log. Only fences with CPU waiters (a waiter registered later is
 * satisfied by the resample at registration if the value is already there) and
 * cross-adapter fences (their value goes to the other adapters) are kept. A
 * full list is sorted and deduplicated before it grows, so it stays
 * within twice the number of distinct fences.
 */
static int pend_add(struct nf_runtime *rt, struct nf_queue *q, uint32_t gi)
{
	if (q->n_pend && q->pend[q->n_pend - 1] == gi)
		return 0;
	if (q->n_pend == q->cap_pend) {
		if (q->n_pend >= 64) {
			uint32_t n = 0;

			qsort(q->pend, q->n_pend, sizeof(*q->pend), nf_eng_u32_cmp);
			for (uint32_t i = 0; i < q->n_pend; i++)
				if (!n || q->pend[n - 1] != q->pend[i])
					q->pend[n++] = q->pend[i];
			q->n_pend = n;
		}
		if ((q->n_pend == q->cap_pend || q->n_pend * 2 > q->cap_pend) &&
		    nf_eng_grow((void **)&q->pend, &q->cap_pend, q->cap_pend + 1, sizeof(*q->pend)))
			return nf_error_set(&rt->err, NF_ENOMEM, "out of memory (interrupt bookkeeping)");
	}
	q->pend[q->n_pend++] = gi;
	return 0;
}

/*
 * The OS reads a log (after DxgkDdiUpdateNativeFenceLogs flushed it): read the
 * header word, compare with the cached one, walk the new entries, and flag an
 * overrun when WraparoundCount moved past what it could read. The entries are
 * copied under the log lock and emitted after it.
 * Returns the number of entries lost in *lost_out.
 */
static int log_read(struct nf_runtime *rt, struct nf_queue *q, struct nf_log *lg,
		    uint64_t *lost_out)
{
	uint64_t start, lost = 0, total, header;
	uint32_t n, epoch, capacity, type;
	struct nf_event ev;
	int rc;

	if (lost_out)
		*lost_out = 0;
	nf_th_log_lock(rt, q);
	total = (uint64_t)lg->header.wraparound_count * lg->capacity +
		lg->header.first_free_entry_index;
	start = lg->read_total;
	if (total == lg->read_total) {
		nf_th_log_unlock(rt, q);
		return 0;
	}
	if (total - start > lg->capacity) {
		lost = total - start - lg->capacity;
		start = total - lg->capacity;
	}
	n = (uint32_t)(total - start);
	if (n > rt->scratch_cap) {
		uint32_t cap = rt->scratch_cap;
		void *t = rt->scratch_truth;
		if (nf_eng_grow((void **)&rt->scratch_entries, &rt->scratch_cap, n, sizeof(struct nf_log_entry)) ||
		    nf_eng_grow(&t, &cap, n, sizeof(struct nf_truth_slot))) {
			nf_th_log_unlock(rt, q);
			return nf_error_set(&rt->err, NF_ENOMEM, "out of memory (log read)");
		}
		rt->scratch_truth = t;
	}
	bool want_truth = rt->cfg.ground_truth;
	/* An optimized interrupt wakes the waiters of the fences the OS read
	 * signals of: note them (only on such adapters, only signals). */
	bool want_fences = lg->type == NF_LOG_SIGNALS && rt->adapters[q->adapter].optimized;
	uint32_t last_fence = 0;
	int prc = 0;
	uint32_t slot = (uint32_t)(start % lg->capacity);
	/* Deterministic, and the entries do not wrap: the event points at the log
	 * itself (nothing writes it before the event is emitted), no copy. */
	const struct nf_log_entry *entries =
		!rt->threaded && slot + (uint64_t)n <= lg->capacity ? &lg->entries[slot] : NULL;
	for (uint32_t i = 0; i < n; i++, slot = slot + 1 == lg->capacity ? 0 : slot + 1) {
		const struct nf_log_entry *e = &lg->entries[slot];

		if (!entries)
			rt->scratch_entries[i] = *e;
		if (want_truth)
			rt->scratch_truth[i] = lg->truth[slot];
		if (want_fences && e->hnative_fence != last_fence && !prc) {
			uint32_t li;

			last_fence = e->hnative_fence;
			/* An unknown handle names no fence; an overrun covers it. */
			if (!nf_eng_handle_lookup(rt, e->hnative_fence, NF_OBJ_LOCAL_FENCE, &li) &&
			    (rt->globals[rt->locals[li].global].waiters ||
			     rt->globals[rt->locals[li].global].cross_adapter))
				prc = pend_add(rt, q, rt->locals[li].global);
		}
		/* What the reader sees, in its own terms (ground truth counts). */
		if (e->fence_end_gpu_timestamp == 0) {
			lg->zero_read++;
		} else {
			if (e->fence_end_gpu_timestamp == lg->last_read_ts)
				lg->repeated_read++;
			lg->last_read_ts = e->fence_end_gpu_timestamp;
		}
	}
	header = (uint64_t)lg->header.first_free_entry_index |
		 ((uint64_t)lg->header.wraparound_count << 32);
	epoch = lg->epoch;
	capacity = lg->capacity;
	type = lg->type;
	lg->read_total = total;
	nf_th_log_unlock(rt, q);
	if (prc)
		return prc;

	EV_INIT(ev, LOG_READ);
	ev.f[NFF_LOG_READ_adapter] = q->adapter;
	ev.f[NFF_LOG_READ_hwqueue] = q->handle;
	ev.f[NFF_LOG_READ_log_type] = type;
	ev.f[NFF_LOG_READ_epoch] = epoch;
	ev.f[NFF_LOG_READ_header] = header;
	ev.f[NFF_LOG_READ_capacity] = capacity;
	ev.f[NFF_LOG_READ_first_slot] = start % capacity;
	ev.f[NFF_LOG_READ_entry_count] = n;
	ev.entries = entries ? entries : rt->scratch_entries;
	rc = nf_eng_emit(rt, &ev);
	if (rc)
		return rc;
	if (lost) {
		EV_INIT(ev, LOG_OVERRUN);
		ev.f[NFF_LOG_OVERRUN_adapter] = q->adapter;
		ev.f[NFF_LOG_OVERRUN_hwqueue] = q->handle;
		ev.f[NFF_LOG_OVERRUN_log_type] = type;
		ev.f[NFF_LOG_OVERRUN_epoch] = epoch;
		ev.f[NFF_LOG_OVERRUN_lost] = lost;
		rc = nf_eng_emit(rt, &ev);
		if (rc)
			return rc;
	}
	for (uint32_t i = 0; i < n; i++) {
		rc = emit_truth_op(rt, q, type, epoch, start + i, &rt->scratch_truth[i], 0);
		if (rc)
			return rc;
	}
	STAT(rt, log_reads);
	if (lost_out)
		*lost_out = lost;
	return 0;
}

int nf_eng_queue_read_logs(struct nf_runtime *rt, struct nf_queue *q, uint64_t *lost)
{
	uint64_t l1 = 0, l2 = 0;
	int rc;

	if (!q->native)
		return 0;
	rc = log_read(rt, q, &q->logs[0], &l1);
	if (!rc)
		rc = log_read(rt, q, &q->logs[1], &l2);
	if (lost)
		*lost += l1 + l2;
	return rc;
}

int nf_eng_emit_truth_log(struct nf_runtime *rt, struct nf_queue *q, struct nf_log *lg)
{
	struct nf_event ev;

	EV_INIT(ev, TRUTH_LOG);
	ev.f[NFF_TRUTH_LOG_adapter] = q->adapter;
	ev.f[NFF_TRUTH_LOG_hwqueue] = q->handle;
	nf_th_log_lock(rt, q);
	ev.f[NFF_TRUTH_LOG_log_type] = lg->type;
	ev.f[NFF_TRUTH_LOG_epoch] = lg->epoch;
	ev.f[NFF_TRUTH_LOG_written] = lg->written;
	ev.f[NFF_TRUTH_LOG_lost] = lg->lost;
	ev.f[NFF_TRUTH_LOG_zero_ts] = lg->zero_read;
	ev.f[NFF_TRUTH_LOG_repeated_ts] = lg->repeated_read;
	nf_th_log_unlock(rt, q);
	return nf_eng_emit(rt, &ev);
}

/* The OS destroys a queue's logs and recreates them at a new location. It reads
 * what is there first, so recreation loses nothing. */

int nf_eng_queue_recreate_logs(struct nf_runtime *rt, struct nf_queue *q)
{
	uint64_t lost = 0;
	int rc = nf_eng_queue_read_logs(rt, q, &lost);

	if (!rc)
		rc = nf_eng_overrun_fallback(rt, q->adapter, lost);

	for (int i = 0; i < 2 && !rc; i++) {
		struct nf_log *lg = &q->logs[i];
		uint32_t epoch = lg->epoch + 1, type = lg->type, cap = lg->capacity;

		rc = nf_eng_emit_truth_log(rt, q, lg);
		if (rc)
			break;
		if (nf_eng_log_alloc(lg, type, cap))
			return nf_error_set(&rt->err, NF_ENOMEM, "out of memory (log buffer)");
		lg->epoch = epoch;
		rc = nf_eng_emit_set_log(rt, q, lg);
	}
	return rc;
}

int nf_eng_recreate_logs(struct nf_runtime *rt, struct nf_queue *q)
{
	return q->alive && q->native ? nf_eng_queue_recreate_logs(rt, q) : 0;
}
