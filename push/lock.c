/* push/: the per-session lock that serialises the swaps of two pushes (push_int.h). */
#include "push_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * The swap of two pushes of one session must not overlap: ClickHouse 18.16's
 * REPLACE PARTITION takes the block range it drops before it has cloned the
 * source's parts and commits them after, so two at once can each leave the
 * other's parts live (seen in CI: 7 rows of a table that has 4, with staged
 * tables of many parts). A lock table per session serialises the swaps:
 * CREATE TABLE succeeds for one caller only (the others get code 57, "already
 * exists") and the holder drops it when its swap is done. The lock of a push
 * killed during its swap is older than PUSH_LOCK_STALE_S, or than the
 * request timeout and a minute when that is longer (a swap is a few ALTERs of
 * hard links): a waiter renames it away (one rename wins), checks that it
 * renamed the holder it judged stale (else renames it back) and drops it. The
 * lock holds its push's token: a push drops only its own. A waiter pauses
 * before every retry (20 ms, doubling to 200 ms) and gives up
 * PUSH_LOCK_WAIT_S after a lock would have gone stale, whatever the server
 * answers (a rename that fails or is undone by another waiter included).
 */
#define PUSH_LOCK_STALE_S 120
#define PUSH_LOCK_WAIT_S 900

static int ch_code_is(const struct ch *c, const char *code)
{
	size_t l = strlen(code);

	return c->errbody.n > 6 + l && !memcmp(c->errbody.p, "Code: ", 6) && !memcmp(c->errbody.p + 6, code, l) &&
	       !isdigit((unsigned char)c->errbody.p[6 + l]);
}

/* The table named went away under the query: "doesn't exist" (60), or "is
 * dropped" (218) when another push's DROP TABLE ran while the query held it
 * (seen in CI: two pushes of one session, the waiter's SELECT of the holder
 * met the holder's DROP of its lock). Either way: the lock is free now. */
static int ch_gone(const struct ch *c)
{
	return ch_code_is(c, "60") || ch_code_is(c, "218");
}

/* The holder (a push's token) written in lock table `name`: "" when none. */
static int lock_holder(struct ch *c, const char *name, char *ans, size_t len, struct nf_error *err)
{
	char q[512];

	snprintf(q, sizeof(q), "SELECT any(holder) FROM `%s`.`%s` FORMAT TSV", c->db, name);
	return nf_push_ch_scalar(c, q, ans, len, err);
}

int nf_push_swap_lock(struct ch *c, const char *id, const char *tok, struct nf_error *err)
{
	char q[768], ans[64], lock[NF_PUSH_ID_MAX + 16], stale[NF_PUSH_ID_MAX + 48];
	struct timespec t0, now;
	unsigned nap_ms = 20;
	int rc;

	/* stale: older than any one request of the holder's swap may run (its
	 * timeout) and a margin; NFTRACE_PUSH_LOCK_STALE_S lets tests wait less */
	const char *env = getenv("NFTRACE_PUSH_LOCK_STALE_S");
	long stale_s = c->timeout_s + 60 > PUSH_LOCK_STALE_S ? c->timeout_s + 60 : PUSH_LOCK_STALE_S;
	long wait_s = PUSH_LOCK_WAIT_S;

	if (env && *env && strtol(env, NULL, 10) >= 0 && strtol(env, NULL, 10) <= 86400)
		stale_s = strtol(env, NULL, 10);
	/* NFTRACE_PUSH_LOCK_WAIT_S: the wait past staleness, for tests too */
	if ((env = getenv("NFTRACE_PUSH_LOCK_WAIT_S")) && *env && strtol(env, NULL, 10) >= 0 &&
	    strtol(env, NULL, 10) <= 86400)
		wait_s = strtol(env, NULL, 10);
	snprintf(lock, sizeof(lock), "_lock_%s", id);
	snprintf(stale, sizeof(stale), "_lock_%s_stale_%s", id, tok);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int attempt = 0;; attempt++) {
		/* Every retry, whatever sent us round (the lock held, a takeover that
		 * lost its rename or was renamed back, a stale lock dropped): the
		 * deadline first, then a pause, so no path spins on the server. */
		if (attempt) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec - t0.tv_sec > stale_s + wait_s)
				return nf_error_set(err, NF_ETIMEOUT, "%s: another push of session '%s' has held `%s` for "
						    "over %ld s", c->shown, id, lock, stale_s + wait_s);
			struct timespec nap = { (time_t)(nap_ms / 1000), (long)(nap_ms % 1000) * 1000000L };
			nanosleep(&nap, NULL);
			if (nap_ms < 200)
				nap_ms *= 2;
		}
		snprintf(q, sizeof(q), "CREATE TABLE `%s` (holder String) ENGINE = Memory", lock);
		if (!(rc = nf_push_ch_post(c, q, NULL, 0, 1, err))) {
			/* ours: say so, so that only we drop it (nf_push_swap_unlock) */
			snprintf(q, sizeof(q), "INSERT INTO `%s` (holder) VALUES ('%s')", lock, tok);
			if ((rc = nf_push_ch_post(c, q, NULL, 0, 1, err))) {
				struct nf_error e2;

				nf_error_clear(&e2);
				snprintf(q, sizeof(q), "DROP TABLE IF EXISTS `%s`", lock);
				nf_push_ch_post(c, q, NULL, 0, 1, &e2);
			}
			return rc;
		}
		if (!ch_code_is(c, "57") && !ch_code_is(c, "218"))
			return rc; /* 218: the holder's DROP still running: held a moment more */
		nf_error_clear(err);
		/* held: by a live push (wait), or by a killed one (take it away) */
		snprintf(q, sizeof(q), "SELECT (SELECT count() FROM system.tables WHERE database = '%s' AND name = '%s' "
			 "AND metadata_modification_time < now() - %ld), (SELECT any(holder) FROM `%s`.`%s`) FORMAT TSV",
			 c->db, lock, stale_s, c->db, lock);
		rc = nf_push_ch_scalar(c, q, ans, sizeof(ans), err);
		if (rc && !ch_gone(c))
			return rc;
		nf_error_clear(err);
		if (!rc && strtoull(ans, NULL, 10) > 0) {
			char was[64], now_h[64];
			const char *tab = strchr(ans, '\t');

			snprintf(was, sizeof(was), "%s", tab ? tab + 1 : "");
			snprintf(q, sizeof(q), "RENAME TABLE `%s` TO `%s`", lock, stale);
			if ((rc = nf_push_ch_post(c, q, NULL, 0, 1, err))) {
				if (!ch_gone(c))
					return rc;
				nf_error_clear(err); /* another waiter took it, or its holder dropped it: again */
				continue;
			}
			/* renamed what was judged stale, or a lock made since by someone else */
			if ((rc = lock_holder(c, stale, now_h, sizeof(now_h), err)))
				return rc;
			if (strcmp(now_h, was)) {
				snprintf(q, sizeof(q), "RENAME TABLE `%s` TO `%s`", stale, lock);
				if (!nf_push_ch_post(c, q, NULL, 0, 1, err))
					continue;
				nf_error_clear(err);
			}
			snprintf(q, sizeof(q), "DROP TABLE IF EXISTS `%s`", stale);
			if ((rc = nf_push_ch_post(c, q, NULL, 0, 1, err)))
				return rc;
			continue;
		}
	}
}

/* Drops the lock when it is still this push's (tok). */
void nf_push_swap_unlock(struct ch *c, const char *id, const char *tok)
{
	char q[512], lock[NF_PUSH_ID_MAX + 16], h[64];
	struct nf_error e2;

	nf_error_clear(&e2);
	snprintf(lock, sizeof(lock), "_lock_%s", id);
	if (lock_holder(c, lock, h, sizeof(h), &e2) || strcmp(h, tok))
		return;
	snprintf(q, sizeof(q), "DROP TABLE IF EXISTS `%s`", lock);
	nf_push_ch_post(c, q, NULL, 0, 1, &e2);
}
