/*
 * How a runtime ends, as include/nftrace/nfence.h states it: nf_runtime_finish
 * a second time returns NF_ESTATE and emits nothing (every later call too);
 * after a sink failure every call returns the sink's first error;
 * nf_runtime_close returns what nf_runtime_destroy drops (the runtime's error,
 * the recorded session's close error), and refuses in a forked child. Both
 * modes where the mode matters.
 */
#include "nf_test.h"

#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nftrace/nfence.h"

/* A sink that counts events and fails with NF_EIO from event fail_at on. */
struct counter {
	uint64_t n;
	uint64_t fail_at; /* 0: never */
};

static int count_emit(void *ctx, const struct nf_event *ev)
{
	struct counter *c = ctx;

	(void)ev;
	if (c->fail_at && c->n + 1 >= c->fail_at)
		return NF_EIO;
	c->n++;
	return 0;
}

struct rig {
	nf_runtime *rt;
	struct nf_error err;
	uint32_t adapter;
	nf_handle q0, q1, f;
};

static int rig_setup(struct rig *r)
{
	struct nf_adapter_desc desc;
	struct nf_fence_desc fd = { NF_FENCE_TYPE_DEFAULT, false, false, 0, 1 };
	int rc;

	nf_adapter_desc_init(&desc);
	desc.name = "end GPU";
	desc.vidsch_caps = NF_VIDSCH_NATIVE_GPU_FENCE;
	if ((rc = nf_adapter_create(r->rt, &desc, &r->adapter, &r->err)) ||
	    (rc = nf_hwqueue_create(r->rt, r->adapter, 0, 0, "q0", &r->q0, &r->err)) ||
	    (rc = nf_hwqueue_create(r->rt, r->adapter, 0, 1, "q1", &r->q1, &r->err)) ||
	    (rc = nf_fence_create(r->rt, r->adapter, &fd, &r->f, &r->err)))
		return rc;
	return 0;
}

static int rig_ops(struct rig *r, uint64_t n)
{
	int rc;

	for (uint64_t v = 1; v <= n; v++)
		if ((rc = nf_queue_signal(r->rt, r->q0, r->f, v, &r->err)) ||
		    (rc = nf_queue_wait(r->rt, r->q1, r->f, v, &r->err)) ||
		    (rc = nf_runtime_advance(r->rt, 10000, &r->err)))
			return rc;
	return 0;
}

static void rig_create(struct rig *r, struct counter *c, int mode)
{
	struct nf_runtime_config cfg;

	memset(r, 0, sizeof(*r));
	nf_runtime_config_init(&cfg);
	cfg.mode = mode ? NF_MODE_THREADED : NF_MODE_DETERMINISTIC;
	cfg.sink.ctx = c;
	cfg.sink.emit = count_emit;
	ck_assert_int_eq(nf_runtime_create(&cfg, &r->rt, &r->err), 0);
	ck_assert_msg(rig_setup(r) == 0, "setup: %s", r->err.msg);
}

START_TEST(finish_twice)
{
	struct counter c = { 0, 0 };
	struct rig r;
	int rc;

	rig_create(&r, &c, _i);
	ck_assert_msg(rig_ops(&r, 20) == 0, "ops: %s", r.err.msg);
	ck_assert_msg(nf_runtime_finish(r.rt, &r.err) == 0, "finish: %s", r.err.msg);
	uint64_t after_first = c.n;
	ck_assert_uint_gt(after_first, 0);

	nf_error_clear(&r.err);
	rc = nf_runtime_finish(r.rt, &r.err);
	ck_assert_int_eq(rc, NF_ESTATE);
	ck_assert_int_eq(r.err.code, NF_ESTATE);
	ck_assert_msg(strstr(r.err.msg, "already finished") != NULL, "%s", r.err.msg);
	ck_assert_uint_eq(c.n, after_first); /* the second call emitted nothing */

	/* Every later call that takes an error context refuses the same way. */
	nf_error_clear(&r.err);
	ck_assert_int_eq(nf_queue_signal(r.rt, r.q0, r.f, 100, &r.err), NF_ESTATE);
	nf_error_clear(&r.err);
	ck_assert_int_eq(nf_runtime_advance(r.rt, 1000, &r.err), NF_ESTATE);
	ck_assert_uint_eq(c.n, after_first);

	nf_error_clear(&r.err);
	ck_assert_msg(nf_runtime_close(r.rt, &r.err) == 0, "close: %s", r.err.msg);
}
END_TEST

START_TEST(failed_sink_is_sticky)
{
	struct counter c = { 0, 30 };
	struct rig r;
	int rc;

	rig_create(&r, &c, 0);
	rc = rig_ops(&r, 100);
	ck_assert_int_eq(rc, NF_EIO);
	/* The sink's first error, from every call after it, finish included. */
	nf_error_clear(&r.err);
	ck_assert_int_eq(nf_runtime_finish(r.rt, &r.err), NF_EIO);
	nf_error_clear(&r.err);
	ck_assert_int_eq(nf_runtime_finish(r.rt, &r.err), NF_EIO);
	ck_assert_int_eq(c.n, 29);
	nf_error_clear(&r.err);
	rc = nf_runtime_close(r.rt, &r.err);
	ck_assert_int_eq(rc, NF_EIO);
	ck_assert_msg(r.err.msg[0] != '\0', "close named no error");
}
END_TEST

START_TEST(close_null)
{
	struct nf_error err = { 0 };

	ck_assert_int_eq(nf_runtime_close(NULL, &err), 0);
	ck_assert_int_eq(err.code, 0);
	nf_runtime_destroy(NULL);
}
END_TEST

/* In a child: records n operations from the environment into dir, under a
 * file size limit of limit_kib (0: none), and exits with -nf_runtime_close's
 * code (0 when it returned 0); the close's message goes to msgfd. */
static void child_record(const char *dir, uint64_t n, rlim_t limit_kib, int msgfd)
{
	struct nf_runtime_config cfg;
	struct rig r;
	int rc;

	memset(&r, 0, sizeof(r));
	if (limit_kib) {
		struct rlimit rl = { limit_kib * 1024, limit_kib * 1024 };

		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
			_exit(100);
	}
	setenv("NFTRACE_RECORD_DIR", dir, 1);
	unsetenv("NFTRACE_STATUS_FD");
	nf_runtime_config_init(&cfg);
	if (nf_runtime_create_from_env(&cfg, &r.rt, &r.err) != 0 || rig_setup(&r) != 0)
		_exit(101);
	(void)rig_ops(&r, n); /* may fail once the limit is hit: close says so too */
	(void)nf_runtime_finish(r.rt, &r.err);
	nf_error_clear(&r.err);
	rc = nf_runtime_close(r.rt, &r.err);
	if (write(msgfd, r.err.msg, strlen(r.err.msg)) < 0)
		_exit(102);
	_exit(-rc);
}

static int run_child_record(const char *dir, uint64_t n, rlim_t limit_kib, char *msg, size_t len)
{
	int fds[2], st;
	ssize_t got;

	ck_assert_int_eq(pipe(fds), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		child_record(dir, n, limit_kib, fds[1]);
	}
	close(fds[1]);
	got = read(fds[0], msg, len - 1);
	msg[got > 0 ? got : 0] = '\0';
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st), "the recording child was killed by signal %d", WTERMSIG(st));
	ck_assert_msg(WEXITSTATUS(st) < 100, "the recording child could not start (%d)", WEXITSTATUS(st));
	return -WEXITSTATUS(st);
}

/* The session's close error (a file size limit: the packets cannot be
 * written) is nf_runtime_close's return value and message; without the limit
 * the same recording closes with 0. */
START_TEST(close_returns_the_session_close_error)
{
	char tmp[512], dir[700], msg[600];
	int rc;

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(dir, sizeof(dir), "%s/limited", tmp);
	rc = run_child_record(dir, 3000, 64, msg, sizeof(msg));
	ck_assert_msg(rc == NF_EIO, "close under a 64 KiB file size limit returned %d (%s)", rc, msg);
	ck_assert_msg(strstr(msg, "write") != NULL, "close's message does not say what failed: '%s'", msg);

	snprintf(dir, sizeof(dir), "%s/whole", tmp);
	rc = run_child_record(dir, 3000, 0, msg, sizeof(msg));
	ck_assert_msg(rc == 0, "close without a limit returned %d (%s)", rc, msg);
	nf_test_rmtree(tmp);
}
END_TEST

/* A forked child may not end its parent's runtime: close returns NF_ESTATE
 * there (and frees the child's copy), the parent's close still works. */
START_TEST(close_in_forked_child)
{
	struct counter c = { 0, 0 };
	struct rig r;
	int st;

	rig_create(&r, &c, _i);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct nf_error err = { 0 };
		int rc = nf_runtime_close(r.rt, &err);

		_exit(rc == NF_ESTATE && strstr(err.msg, "forked") ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child's close did not return NF_ESTATE");
	ck_assert_msg(rig_ops(&r, 5) == 0, "ops after the child: %s", r.err.msg);
	ck_assert_msg(nf_runtime_close(r.rt, &r.err) == 0, "close: %s", r.err.msg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("runtime_end");
	TCase *tc = tcase_create("end");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, finish_twice, 0, 2);
	tcase_add_test(tc, failed_sink_is_sticky);
	tcase_add_test(tc, close_null);
	tcase_add_test(tc, close_returns_the_session_close_error);
	tcase_add_loop_test(tc, close_in_forked_child, 0, 2);
	suite_add_tcase(s, tc);
	return nf_test_main(s);
}
