/*
 * The deps rule (contract/deps.h, timeline/deps.c) in each of its modes, on
 * signals and waits made here with the answer worked out by hand.
 */
#include "nf_test.h"

#include "contract/deps.h"

struct got {
	int64_t wait, signal, cpu;
	bool late;
	int64_t late_id;
	const char *reason;
};

/* Runs the resolver over sigs and waits; the rows in *out (waits in (fence, value, id) order). */
static size_t run(enum nf_deps_mode mode, const struct nf_deps_signal *sigs, size_t ns,
		  const struct nf_deps_wait *waits, size_t nw, const int64_t (*init)[2], size_t ni, struct got *out)
{
	struct nf_error err;
	struct nf_deps *d;
	struct nf_deps_row r;
	size_t n = 0;
	int rc;

	nf_error_clear(&err);
	d = nf_deps_create(mode, NULL, 2000, &err);
	ck_assert_msg(d != NULL, "%s", err.msg);
	for (size_t i = 0; i < ni; i++)
		ck_assert_int_eq(nf_deps_initial(d, init[i][0], init[i][1], &err), 0);
	for (size_t i = 0; i < ns; i++)
		ck_assert_int_eq(nf_deps_signal(d, &sigs[i], &err), 0);
	for (size_t i = 0; i < nw; i++)
		ck_assert_int_eq(nf_deps_wait(d, &waits[i], &err), 0);
	ck_assert_int_eq(nf_deps_sort_begin(d, &err), 0);
	ck_assert_int_eq(nf_deps_sort_end(d, &err), 0);
	while ((rc = nf_deps_next(d, &r, &err)) == 1) {
		out[n].wait = r.wait_id;
		out[n].signal = r.signal_id;
		out[n].cpu = r.cpu_id;
		out[n].late = r.late;
		out[n].late_id = r.late_id;
		out[n].reason = r.reason;
		n++;
	}
	ck_assert_int_eq(rc, 0);
	nf_deps_destroy(d);
	return n;
}

#define GPU(f, v, e, i) { .fence = f, .value = v, .id = i, .end_known = true, .end = e }
#define CPU(f, v, e, i) { .fence = f, .value = v, .id = i, .cpu = true, .end_known = true, .end = e }
#define UNK(f, v, q, i) { .fence = f, .value = v, .id = i, .queued_known = true, .queued = q }
#define WAIT(i, f, v, e) { .id = i, .has_fence = true, .fence = f, .value = v, .end = e }

/* The first signal in end order to reach the value, within the slack; else an
 * unknown-end signal queued in time; else none and late; initial values. */
START_TEST(logged)
{
	const struct nf_deps_signal s[] = {
		GPU(1, 5, 1000, 10),   /* reaches 5 first */
		GPU(1, 3, 900, 11),    /* earlier, too small for 5 */
		GPU(1, 9, 1500, 12),
		CPU(1, 7, 1200, 1),    /* CPU signal reaching 7 before GPU 12 */
		GPU(2, 4, 50000, 20),  /* ends long after its waits */
		UNK(2, 4, 100, 21),    /* unknown end, queued in time */
		GPU(3, 4, 90000, 30),  /* ends too late, nothing else */
	};
	const struct nf_deps_wait w[] = {
		WAIT(100, 1, 3, 950), WAIT(101, 1, 5, 1001), WAIT(102, 1, 6, 2000),
		WAIT(103, 1, 9, 2500), WAIT(104, 1, 20, 3000), WAIT(105, 1, 2, 10),
		WAIT(106, 2, 4, 1000), WAIT(107, 3, 4, 1000), WAIT(108, 4, 1, 5),
		{ .id = 109, .has_fence = false },
	};
	const int64_t init[][2] = { { 1, 2 }, { 4, 1 } };
	struct got g[16];
	size_t n = run(NF_DEPS_LOGGED, s, 7, w, 10, init, 2, g);

	ck_assert_uint_eq(n, 10);
	/* by (has_fence, fence, value, id): 109 first */
	ck_assert_int_eq(g[0].wait, 109);
	ck_assert(!g[0].signal && !g[0].cpu);
	ck_assert_str_eq(g[0].reason, "unknown_fence");
	ck_assert_int_eq(g[1].wait, 105); /* initial value 2 reaches 2: none needed */
	ck_assert(!g[1].signal && !g[1].cpu && !g[1].late);
	ck_assert_str_eq(g[1].reason, "initial_value");
	ck_assert_ptr_null(g[2].reason);
	ck_assert_int_eq(g[2].wait, 100); /* 3: signal 11 (ends 900) */
	ck_assert_int_eq(g[2].signal, 11);
	ck_assert_int_eq(g[3].wait, 101); /* 5: signal 10 */
	ck_assert_int_eq(g[3].signal, 10);
	ck_assert_int_eq(g[4].wait, 102); /* 6: CPU signal 1 at 1200 (7), before GPU 12 at 1500 */
	ck_assert_int_eq(g[4].cpu, 1);
	ck_assert_int_eq(g[4].signal, 0);
	ck_assert_int_eq(g[5].wait, 103); /* 9: signal 12 */
	ck_assert_int_eq(g[5].signal, 12);
	ck_assert_int_eq(g[6].wait, 104); /* 20: nothing reaches it */
	ck_assert(!g[6].signal && !g[6].cpu && !g[6].late);
	ck_assert_str_eq(g[6].reason, "no_signal");
	ck_assert_int_eq(g[7].wait, 106); /* known releaser too late: the unknown-end one */
	ck_assert_int_eq(g[7].signal, 21);
	ck_assert(!g[7].late);
	ck_assert_int_eq(g[8].wait, 107); /* too late and no candidate: none, late */
	ck_assert(!g[8].signal && g[8].late);
	ck_assert_str_eq(g[8].reason, "causality");
	ck_assert_int_eq(g[8].late_id, 30);
	ck_assert_int_eq(g[9].wait, 108); /* initial value 1 of fence 4 */
	ck_assert(!g[9].signal && !g[9].late);
}
END_TEST

/* The smallest value at or above, its end no matter; a CPU signal when it came first. */
START_TEST(packets)
{
	const struct nf_deps_signal s[] = {
		GPU(1, 5, 5000, 10), GPU(1, 5, 4000, 11), GPU(1, 8, 100, 12),
		CPU(1, 6, 200, 1), CPU(1, 9, 9000, 2),
		UNK(1, 5, 0, 13), /* unknown end: never a candidate here */
		GPU(2, 5, 5000, 20), GPU(2, 5, 4000, 21), GPU(2, 8, 100, 22),
	};
	const struct nf_deps_wait w[] = {
		WAIT(100, 1, 4, 3000), WAIT(101, 1, 6, 3000), WAIT(102, 1, 8, 3000), WAIT(103, 1, 9, 3000),
		WAIT(104, 1, 10, 3000), WAIT(110, 2, 4, 3000),
	};
	struct got g[8];
	size_t n = run(NF_DEPS_PACKETS, s, 9, w, 6, NULL, 0, g);

	ck_assert_uint_eq(n, 6);
	/* 4: GPU candidate 11 (value 5, the earlier end of the two) ends at 4000,
	 * CPU candidate 1 (6) at 200: the CPU signal came first */
	ck_assert_int_eq(g[0].cpu, 1);
	ck_assert_int_eq(g[0].signal, 0);
	/* 6: GPU 12 (8) at 100 before CPU 1 (6) at 200 */
	ck_assert_int_eq(g[1].signal, 12);
	ck_assert_int_eq(g[1].cpu, 0);
	ck_assert_int_eq(g[2].signal, 12);
	/* 9: no GPU signal reaches it, CPU 2 does */
	ck_assert_int_eq(g[3].cpu, 2);
	ck_assert(!g[4].signal && !g[4].cpu);
	ck_assert_str_eq(g[4].reason, "no_signal");
	/* the smallest value (5, earliest end: 21), not the first to end (22, value 8, at 100) */
	ck_assert_int_eq(g[5].wait, 110);
	ck_assert_int_eq(g[5].signal, 21);
}
END_TEST

/* The signal of exactly the value, no later than the wait's end; else no row. */
START_TEST(one_shot)
{
	const struct nf_deps_signal s[] = { GPU(7, 1, 100, 10), GPU(7, 2, 300, 11), GPU(7, 4, 50, 12) };
	const struct nf_deps_wait w[] = {
		WAIT(100, 7, 1, 200), WAIT(101, 7, 2, 250), WAIT(102, 7, 3, 400), WAIT(103, 7, 4, 60),
	};
	struct got g[8];
	size_t n = run(NF_DEPS_ONE_SHOT, s, 3, w, 4, NULL, 0, g);

	ck_assert_uint_eq(n, 4); /* a row per wait */
	ck_assert_int_eq(g[0].wait, 100);
	ck_assert_int_eq(g[0].signal, 10);
	ck_assert_ptr_null(g[0].reason);
	/* 101: its signal at 300 after the wait ended at 250: timed out */
	ck_assert_int_eq(g[1].wait, 101);
	ck_assert_int_eq(g[1].signal, 0);
	ck_assert_str_eq(g[1].reason, "timeout");
	/* 102: seqno 3 never signaled (seqno 4 did: not its fence) */
	ck_assert_int_eq(g[2].wait, 102);
	ck_assert_int_eq(g[2].signal, 0);
	ck_assert_str_eq(g[2].reason, "no_signal");
	ck_assert_int_eq(g[3].wait, 103);
	ck_assert_int_eq(g[3].signal, 12);
	ck_assert_str_eq(nf_deps_one_shot_reason(10, true, 11), "timeout");
	ck_assert_str_eq(nf_deps_one_shot_reason(10, false, 0), "no_signal");
	ck_assert_ptr_null(nf_deps_one_shot_reason(10, true, 10));
	ck_assert(nf_deps_one_shot_released(true, 10, true, 10));
	ck_assert(!nf_deps_one_shot_released(true, 10, true, 11));
	ck_assert(!nf_deps_one_shot_released(false, 10, true, 1));
	ck_assert(!nf_deps_one_shot_released(true, 10, false, 1));
}
END_TEST

static Suite *deps_suite(void)
{
	Suite *s = suite_create("deps");
	TCase *tc = tcase_create("deps");

	tcase_add_test(tc, logged);
	tcase_add_test(tc, packets);
	tcase_add_test(tc, one_shot);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return nf_test_main(deps_suite());
}
