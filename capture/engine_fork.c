/*
 * Fork detection: a runtime belongs to the process that created it. Its
 * events, its session and its engine threads are that process's; a process
 * forked from it that calls the runtime is refused with NF_ESTATE (its events
 * would interleave with the parent's in one session, or be lost).
 */
#include "engine_int.h"
#include "contract/errors.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

/* Forks counted in the child (pthread_atfork), so a runtime can tell it is
 * used by a process it does not belong to without a getpid() per call. */
static atomic_uint nf_fork_gen;
static pthread_once_t nf_fork_once = PTHREAD_ONCE_INIT;

static void fork_child(void)
{
	atomic_fetch_add_explicit(&nf_fork_gen, 1, memory_order_relaxed);
}

static void fork_register(void)
{
	pthread_atfork(NULL, NULL, fork_child);
}

void nf_fork_watch(struct nf_runtime *rt)
{
	pthread_once(&nf_fork_once, fork_register);
	rt->fork_gen = atomic_load_explicit(&nf_fork_gen, memory_order_relaxed);
	rt->pid = (int)getpid();
}

int nf_fork_check(const struct nf_runtime *rt, struct nf_error *err)
{
	static atomic_int told;
	char msg[200];

	if (!rt || rt->fork_gen == atomic_load_explicit(&nf_fork_gen, memory_order_relaxed))
		return 0;
	snprintf(msg, sizeof(msg),
		 "this runtime belongs to process %d; process %d, forked from it, must create its own (its events are refused)",
		 rt->pid, (int)getpid());
	if (rt->owner.forked && !atomic_exchange(&told, 1))
		rt->owner.forked(rt->owner.ctx, msg);
	return nf_error_set(err, NF_ESTATE, "%s", msg);
}
