/*
 * A program that links libnfence and misbehaves in the ways that once lost
 * data or crashed the recorder,
 * for `nftrace record -- nf_hostile_prog MODE [N]` in test_reliability:
 *   ops N           N GPU operations, then finish and destroy (exit 0)
 *   async-pending   a cpu_wait_async still pending when the runtime is destroyed
 *   fork N          forks after creating its runtime; both processes record N/2
 *   sleep [N]       records N operations (1), prints "ready" on stdout and sleeps
 *                   until a signal ends it
 *   exit127         records a little, then exits with status 127
 *   advance-max     nf_runtime_advance(2^64-1 ns): waits until a signal ends it
 *   c1-names        a queue whose name holds UTF-8 C1 controls (U+009B CSI,
 *                   U+009D OSC), then N operations
 *   hostile-names   a second adapter and a queue per string of the hostile set
 *                   (tests/hostile.h) named by them, each signalling and
 *                   waiting on the fence (test_hostile's fixture)
 * Exit status: 0, or 1 with the library's error on stderr.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nftrace/nfence.h"
#include "hostile.h"

struct prog {
	nf_runtime *rt;
	struct nf_error err;
	uint32_t adapter;
	nf_handle q0, q1, f;
};

static int setup(struct prog *p)
{
	struct nf_adapter_desc desc;
	struct nf_fence_desc fd = { NF_FENCE_TYPE_DEFAULT, false, false, 0, 1 };
	int rc;

	nf_adapter_desc_init(&desc);
	desc.name = "hostile GPU";
	desc.vidsch_caps = NF_VIDSCH_NATIVE_GPU_FENCE;
	if ((rc = nf_adapter_create(p->rt, &desc, &p->adapter, &p->err)) ||
	    (rc = nf_hwqueue_create(p->rt, p->adapter, 0, 0, "q0", &p->q0, &p->err)) ||
	    (rc = nf_hwqueue_create(p->rt, p->adapter, 0, 1, "q1", &p->q1, &p->err)) ||
	    (rc = nf_fence_create(p->rt, p->adapter, &fd, &p->f, &p->err)))
		return rc;
	return 0;
}

/* n signal/wait pairs on the fence, values from v0. */
static int ops(struct prog *p, uint64_t v0, uint64_t n)
{
	int rc;

	for (uint64_t v = v0; v < v0 + n; v++)
		if ((rc = nf_queue_signal(p->rt, p->q0, p->f, v, &p->err)) ||
		    (rc = nf_queue_wait(p->rt, p->q1, p->f, v, &p->err)) ||
		    (rc = nf_runtime_advance(p->rt, 10000, &p->err)))
			return rc;
	return 0;
}

static void on_signal(int sig)
{
	(void)sig;
}

int main(int argc, char **argv)
{
	struct nf_runtime_config cfg;
	struct prog p;
	const char *mode = argc > 1 ? argv[1] : "ops";
	uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 100;
	int rc;

	memset(&p, 0, sizeof(p));
	nf_runtime_config_init(&cfg);
	rc = nf_runtime_create_from_env(&cfg, &p.rt, &p.err);
	if (!rc)
		rc = setup(&p);
	if (!rc && !strcmp(mode, "ops")) {
		rc = ops(&p, 1, n);
		if (!rc)
			rc = nf_runtime_finish(p.rt, &p.err);
	} else if (!rc && !strcmp(mode, "async-pending")) {
		nf_handle ev;

		rc = nf_cpu_wait_async(p.rt, p.f, 1000, &ev, &p.err);
		if (!rc)
			rc = ops(&p, 1, 3);
	} else if (!rc && !strcmp(mode, "fork")) {
		pid_t pid = fork();

		if (pid < 0)
			return 2;
		rc = ops(&p, pid == 0 ? 1 : n, n / 2);
		if (!rc)
			rc = nf_runtime_finish(p.rt, &p.err);
		if (pid == 0) {
			nf_runtime_destroy(p.rt);
			if (rc)
				fprintf(stderr, "child: %s\n", p.err.msg);
			_exit(rc ? 1 : 0);
		}
		int st;
		waitpid(pid, &st, 0);
		if (!rc && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
			rc = NF_EIO, snprintf(p.err.msg, sizeof(p.err.msg), "the child failed");
	} else if (!rc && !strcmp(mode, "sleep")) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
		rc = ops(&p, 1, argc > 2 ? n : 1);
		printf("ready\n");
		fflush(stdout);
		pause(); /* a signal ends the wait: then close the session cleanly */
		if (!rc)
			rc = nf_runtime_finish(p.rt, &p.err);
		nf_runtime_destroy(p.rt);
		return 0;
	} else if (!rc && !strcmp(mode, "c1-names")) {
		nf_handle q;

		rc = nf_hwqueue_create(p.rt, p.adapter, 0, 2, "C1\xc2\x9b" "31mred\xc2\x9d" "0;title\x07", &q,
				       &p.err);
		if (!rc)
			rc = nf_queue_signal(p.rt, q, p.f, 1, &p.err);
		if (!rc)
			rc = ops(&p, 2, n);
		if (!rc)
			rc = nf_runtime_finish(p.rt, &p.err);
	} else if (!rc && !strcmp(mode, "hostile-names")) {
		struct nf_adapter_desc desc;
		uint32_t a2;

		nf_adapter_desc_init(&desc);
		desc.name = nf_hostile_set[1].s; /* ESC CSI */
		desc.vidsch_caps = NF_VIDSCH_NATIVE_GPU_FENCE;
		rc = nf_adapter_create(p.rt, &desc, &a2, &p.err);
		for (size_t i = 0; !rc && i < NF_HOSTILE_N; i++) {
			nf_handle q;

			rc = nf_hwqueue_create(p.rt, p.adapter, (uint32_t)(1 + i % 4), (uint32_t)(i / 4),
					       nf_hostile_set[i].s, &q, &p.err);
			if (!rc)
				rc = nf_queue_signal(p.rt, q, p.f, 2 * i + 1, &p.err);
			if (!rc)
				rc = nf_queue_wait(p.rt, p.q1, p.f, 2 * i + 1, &p.err);
			if (!rc)
				rc = nf_queue_wait(p.rt, q, p.f, 2 * i + 2, &p.err);
			if (!rc)
				rc = nf_queue_signal(p.rt, p.q0, p.f, 2 * i + 2, &p.err);
			if (!rc)
				rc = nf_runtime_advance(p.rt, 20000, &p.err);
		}
		if (!rc)
			rc = nf_runtime_finish(p.rt, &p.err);
	} else if (!rc && !strcmp(mode, "advance-max")) {
		rc = nf_runtime_advance(p.rt, UINT64_MAX, &p.err);
	} else if (!rc && !strcmp(mode, "exit127")) {
		rc = ops(&p, 1, 2);
		nf_runtime_destroy(p.rt);
		return 127;
	}
	nf_runtime_destroy(p.rt);
	if (rc) {
		fprintf(stderr, "nf_hostile_prog: %s (%s)\n", p.err.msg, nf_strerror(rc));
		return 1;
	}
	return 0;
}
