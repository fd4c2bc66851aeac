/*
 * bench/engine: GPU signal operations per second through the native fence
 * engine with logging on (every signal writes its 48-byte log entry; the OS
 * reads the logs and every event goes to an in-memory sink), and the limit of
 * writing the same 48-byte entries to memory in a plain loop, in one run.
 *
 *   nfb_engine deterministic|threaded|limit SIGNALS
 *
 * Prints "signals SECONDS EVENTS LOST" on stdout (LOST: log entries the OS did
 * not read in time). CPU time of the process is what the deterministic engine
 * is measured by (one core); wall time for threaded mode (several threads).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nftrace/events.h"
#include "nftrace/nfence.h"

/* The in-memory sink: each event's id, timestamp and fields appended to a
 * 64 MiB buffer that wraps (what a recorder's packet buffer costs, no disk). */
struct mem_sink {
	uint8_t *buf;
	size_t len, cap;
	uint64_t events;
};

static int mem_emit(void *ctx, const struct nf_event *ev)
{
	struct mem_sink *m = ctx;
	uint32_t nf = nf_event_desc(ev->id)->n_fields;
	size_t need = 12 + (size_t)nf * 8;

	if (m->len + need > m->cap)
		m->len = 0;
	memcpy(m->buf + m->len, &ev->id, 4);
	memcpy(m->buf + m->len + 4, &ev->ts, 8);
	memcpy(m->buf + m->len + 12, ev->f, (size_t)nf * 8);
	m->len += need;
	m->events++;
	return 0;
}

static double now_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The limit: the same 48-byte entries, written in a plain loop into a log of
 * the same size, header bumped after each, nothing else. */
static void run_limit(uint64_t n)
{
	enum { CAP = 4096 };
	static struct nf_log_entry ring[CAP];
	struct nf_log_header hdr = { 0 };
	double t0 = now_s(CLOCK_PROCESS_CPUTIME_ID);

	for (uint64_t i = 0; i < n; i++) {
		struct nf_log_entry *e = &ring[i % CAP];
		e->fence_value = i + 1;
		e->hnative_fence = 0x40000100u;
		e->operation_type = NF_LOG_OP_SIGNAL_EXECUTED;
		e->reserved0 = 0;
		e->fence_observed_gpu_timestamp = 0;
		e->reserved1 = 0;
		e->fence_end_gpu_timestamp = 1000000 + i * 4;
		hdr.first_free_entry_index = (uint32_t)((i + 1) % CAP);
		hdr.wraparound_count = (uint32_t)((i + 1) / CAP);
		__asm__ volatile("" : : "r"(e), "r"(&hdr) : "memory");
	}
	double t = now_s(CLOCK_PROCESS_CPUTIME_ID) - t0;
	printf("signals %.6f 0 0\n", t);
}

#define CHECK(call)                                                            \
	do {                                                                   \
		if ((call) != 0) {                                             \
			fprintf(stderr, "nfb_engine: %s: %s\n", #call, err.msg); \
			return 1;                                              \
		}                                                              \
	} while (0)

int main(int argc, char **argv)
{
	struct nf_error err = { 0 };
	struct nf_runtime_config cfg;
	struct nf_adapter_desc d;
	struct mem_sink m = { 0 };
	nf_runtime *rt = NULL;
	uint32_t a;
	nf_handle q, f;

	if (argc != 3) {
		fprintf(stderr, "usage: nfb_engine deterministic|threaded|limit SIGNALS\n");
		return 2;
	}
	uint64_t n = strtoull(argv[2], NULL, 10);
	if (!strcmp(argv[1], "limit")) {
		run_limit(n);
		return 0;
	}
	bool threaded = !strcmp(argv[1], "threaded");
	m.cap = 64u << 20;
	m.buf = malloc(m.cap);
	if (!m.buf)
		return 1;
	nf_runtime_config_init(&cfg);
	cfg.mode = threaded ? NF_MODE_THREADED : NF_MODE_DETERMINISTIC;
	cfg.tracing = true;                 /* 4096-entry logs */
	cfg.tracing_log_entries = 4096;
	cfg.log_read_interval_ns = 100000;  /* the OS reads every 100 us */
	cfg.sink.ctx = &m;
	cfg.sink.emit = mem_emit;
	CHECK(nf_runtime_create(&cfg, &rt, &err));
	nf_adapter_desc_init(&d);
	CHECK(nf_adapter_create(rt, &d, &a, &err));
	CHECK(nf_hwqueue_create(rt, a, 0, 0, "Q", &q, &err));
	struct nf_fence_desc fd = { NF_FENCE_TYPE_DEFAULT, false, false, 0, 100 };
	CHECK(nf_fence_create(rt, a, &fd, &f, &err));

	double w0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
	const uint64_t batch = 256;
	for (uint64_t v = 1; v <= n; v += batch) {
		uint64_t end = v + batch - 1 < n ? v + batch - 1 : n;
		for (uint64_t x = v; x <= end; x++)
			CHECK(nf_queue_signal(rt, q, f, x, &err));
		if (!threaded) /* let the GPU run through the batch in virtual time */
			CHECK(nf_runtime_advance(rt, (end - v + 1) * d.signal_cost_ns, &err));
	}
	CHECK(nf_runtime_finish(rt, &err));
	double w = now_s(CLOCK_MONOTONIC) - w0, c = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
	struct nf_runtime_stats st;
	nf_runtime_get_stats(rt, &st);
	if (st.signals_executed != n || st.log_entries_written != n) {
		fprintf(stderr, "nfb_engine: %llu signals executed, %llu entries written, want %llu\n",
			(unsigned long long)st.signals_executed,
			(unsigned long long)st.log_entries_written, (unsigned long long)n);
		return 1;
	}
	printf("signals %.6f %llu %llu\n", threaded ? w : c, (unsigned long long)m.events,
	       (unsigned long long)st.log_entries_lost);
	nf_runtime_destroy(rt);
	free(m.buf);
	return 0;
}
