/*
 * nf_diff_run: brings both timelines up to date, reads the two sessions at
 * once (A on the calling thread, B on a second one: each reader has its own
 * read-only connection and touches nothing the other does), then compares
 * them and, when asked, aligns their operations.
 */
#include "diff_int.h"

#include "contract/frames.h"
#include "contract/session.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void nf_diff_options_init(struct nf_diff_options *o)
{
	memset(o, 0, sizeof(*o));
	o->alpha = 0.01;
	o->min_effect = 0.05;
	o->min_effect_ns = 100;
}

static void *read_session(void *arg)
{
	struct dd_session *s = arg;

	nf_error_clear(&s->err);
	s->rc = dd_session_read(s, &s->err);
	if (!s->rc)
		s->rc = dd_session_paths(s, &s->err);
	return NULL;
}

/* Makes sure err's message says which session it is about. */
static int about(int rc, const char *dir, struct nf_error *err)
{
	size_t n = strlen(dir);

	if (rc && (strncmp(err->msg, dir, n) || err->msg[n] != ':'))
		nf_error_prefix(err, "%s", dir);
	return rc;
}

int nf_diff_run(const char *a, const char *b, const struct nf_diff_options *opts, struct nf_diff **out,
		struct nf_error *err)
{
	struct nf_diff *d;
	pthread_t th;
	int rc;

	*out = NULL;
	if (!(opts->alpha > 0 && opts->alpha < 0.5) || !(opts->min_effect >= 0) || opts->min_effect_ns < 0 ||
	    opts->ops_min_ns < 0)
		return nf_error_set(err, NF_EINVAL, "bad diff options (alpha in (0, 0.5), effects and ops_min >= 0)");
	if (!(d = calloc(1, sizeof(*d))))
		return nf_error_set(err, NF_ENOMEM, "out of memory");
	d->opts = *opts;
	for (int k = 0; k < 2; k++) {
		struct dd_session *s = &d->s[k];

		s->dir = k ? b : a;
		s->want_ops = opts->ops;
		/* the timeline with its frames (the frame series): computed once, kept */
		if ((rc = about(nf_frames_ensure(s->dir, NULL, s->db, sizeof(s->db), err), s->dir, err)))
			goto out_fail;
	}
	if (pthread_create(&th, NULL, read_session, &d->s[1])) {
		read_session(&d->s[1]); /* no second thread: one after the other */
		read_session(&d->s[0]);
	} else {
		read_session(&d->s[0]);
		pthread_join(th, NULL);
	}
	for (int k = 0; k < 2; k++)
		if (d->s[k].rc) {
			rc = d->s[k].rc;
			nf_error_set(err, rc, "%s", d->s[k].err.msg);
			about(rc, d->s[k].dir, err);
			goto out_fail;
		}
	if ((rc = dd_compare(d, err)) || (opts->ops && (rc = dd_align(d, err))))
		goto out_fail;
	for (int k = 0; k < 2; k++) {
		d->info[k].dir = d->s[k].dir;
		d->info[k].source = d->s[k].source;
		d->info[k].seed = d->s[k].seed;
		d->info[k].mode = d->s[k].mode;
		d->info[k].duration_ns = d->s[k].duration_ns;
		d->info[k].ops = d->s[k].ops;
	}
	*out = d;
	return 0;
out_fail:
	nf_diff_destroy(d);
	return rc;
}

void nf_diff_destroy(struct nf_diff *d)
{
	if (!d)
		return;
	for (int k = 0; k < 2; k++)
		dd_session_free(&d->s[k]);
	for (size_t i = 0; i < d->n_owned; i++)
		free(d->owned[i]);
	free(d->owned);
	free(d->rows);
	free(d->appeared);
	free(d->disappeared);
	free(d->cp);
	free(d->ops);
	free(d);
}

size_t nf_diff_rows(const struct nf_diff *d, const struct nf_diff_row **rows)
{
	*rows = d->rows;
	return d->n_rows;
}

const struct nf_diff_session *nf_diff_session(const struct nf_diff *d, int which)
{
	return which == 0 || which == 1 ? &d->info[which] : NULL;
}

size_t nf_diff_ops(const struct nf_diff *d, const struct nf_diff_op **ops, int64_t *matched, int64_t *only_a,
		   int64_t *only_b)
{
	*ops = d->ops;
	if (matched)
		*matched = d->matched;
	if (only_a)
		*only_a = d->only_a;
	if (only_b)
		*only_b = d->only_b;
	return d->n_ops;
}
