/*
 * nfence-sample: a small program that links the native fence runtime.
 * One adapter, a producer and a consumer queue sharing a fence: the producer
 * signals each frame, the consumer GPU-waits for it and signals back, and the
 * CPU waits for the last frame. Run it under `nftrace record -o DIR --
 * build/nfence-sample` to record it (nf_runtime_create_from_env).
 */
#include <stdio.h>
#include <stdlib.h>

#include "nftrace/nfence.h"

#define FRAMES 32u

static int run(nf_runtime *rt, struct nf_error *err)
{
	struct nf_adapter_desc desc;
	struct nf_fence_desc fd = { NF_FENCE_TYPE_DEFAULT, false, false, 0, 1 };
	uint32_t adapter;
	nf_handle producer, consumer, frame, done;
	int rc;

	nf_adapter_desc_init(&desc);
	desc.name = "sample GPU";
	desc.vidsch_caps = NF_VIDSCH_NATIVE_GPU_FENCE |
			   NF_VIDSCH_OPTIMIZED_NATIVE_FENCE_SIGNALED_INTERRUPT;
	if ((rc = nf_adapter_create(rt, &desc, &adapter, err)) ||
	    (rc = nf_hwqueue_create(rt, adapter, 0, 0, "producer", &producer, err)) ||
	    (rc = nf_hwqueue_create(rt, adapter, 0, 1, "consumer", &consumer, err)) ||
	    (rc = nf_fence_create(rt, adapter, &fd, &frame, err)) ||
	    (rc = nf_fence_create(rt, adapter, &fd, &done, err)))
		return rc;
	for (uint64_t v = 1; v <= FRAMES; v++) {
		/* Producer: render frame v once the consumer released frame v - 2. */
		if (v > 2 && (rc = nf_queue_wait(rt, producer, done, v - 2, err)))
			return rc;
		if ((rc = nf_queue_work(rt, producer, 150000, err)) ||
		    (rc = nf_queue_signal(rt, producer, frame, v, err)))
			return rc;
		/* Consumer: wait for frame v, use it, release it. */
		if ((rc = nf_queue_wait(rt, consumer, frame, v, err)) ||
		    (rc = nf_queue_work(rt, consumer, 100000, err)) ||
		    (rc = nf_queue_signal(rt, consumer, done, v, err)))
			return rc;
		if ((rc = nf_runtime_advance(rt, 50000, err)))
			return rc;
	}
	/* The CPU waits for the consumer to finish the last frame. */
	if ((rc = nf_cpu_wait(rt, done, FRAMES, 1000000000ull, err)))
		return rc;
	return nf_runtime_finish(rt, err);
}

int main(void)
{
	struct nf_runtime_config cfg;
	struct nf_error err = { 0 };
	nf_runtime *rt = NULL;
	int rc;

	nf_runtime_config_init(&cfg);
	rc = nf_runtime_create_from_env(&cfg, &rt, &err);
	if (!rc)
		rc = run(rt, &err);
	/* Close, not destroy: a recording that could not be written (disk
	 * full) is an error of this program too. */
	int close_rc = nf_runtime_close(rt, rc ? NULL : &err);
	if (!rc)
		rc = close_rc;
	if (rc) {
		fprintf(stderr, "nfence-sample: %s (%s)\n", err.msg, nf_strerror(rc));
		return EXIT_FAILURE;
	}
	printf("nfence-sample: %u frames produced and consumed\n", FRAMES);
	return EXIT_SUCCESS;
}
