/*
 * Crash containment for babeltrace2: 2.0.4 aborts or crashes on some crafted
 * traces, so a trace the graph will read is first read whole by a child
 * process (the same probe and run as reader.c would do, without callbacks).
 * Only when the child finished does the graph run in the caller's process.
 * A child killed by a signal, or still reading after a bound proportional to
 * the trace's size, is one NF_EFORMAT error; its memory is capped.
 */
#define _GNU_SOURCE /* close_range, pipe2 */
#include "reader_int.h"
#include "contract/errors.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- containment: babeltrace2 reads the trace in a child first ----------- */

/*
 * How long the child may read: 60 s, plus 1 s per MiB of the trace's files
 * (babeltrace2 reads about 100 MiB/s here, so this is a hang, not a slow
 * machine). NFTRACE_BT_TIMEOUT=SECONDS sets it.
 */
#define NF_BT_TIMEOUT_MIN_MS 60000.0
#define NF_BT_TIMEOUT_MS_PER_MIB 1000.0

/* The child's memory may grow by this much: babeltrace2 sizes an
 * array from a sequence length before reading it, and a foreign trace is not
 * pre-scanned. The graph runs here only after the child read within it. */
#define NF_BT_CHILD_MEM_MAX (4ull << 30)

static double child_timeout_ms(const char *dir)
{
	const char *v = getenv("NFTRACE_BT_TIMEOUT");
	double bytes = 0;
	struct dirent *de;
	DIR *d;

	if (v && *v) {
		char *end;
		double s = strtod(v, &end);

		if (*end == '\0' && s >= 0 && s < 1e9)
			return s * 1000.0;
	}
	d = opendir(dir);
	while (d && (de = readdir(d)) != NULL) {
		struct stat st;

		if (de->d_name[0] != '.' && fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			bytes += (double)st.st_size;
	}
	if (d)
		closedir(d);
	return NF_BT_TIMEOUT_MIN_MS + bytes / (1024.0 * 1024.0) * NF_BT_TIMEOUT_MS_PER_MIB;
}

static const char *signal_name(int sig, char *buf, size_t len)
{
	static const struct { int sig; const char *name; } names[] = {
		{ SIGSEGV, "SIGSEGV" }, { SIGABRT, "SIGABRT" }, { SIGBUS, "SIGBUS" },
		{ SIGFPE, "SIGFPE" }, { SIGILL, "SIGILL" }, { SIGTRAP, "SIGTRAP" },
		{ SIGKILL, "SIGKILL" }, { SIGSYS, "SIGSYS" }, { SIGXCPU, "SIGXCPU" },
		{ SIGXFSZ, "SIGXFSZ" }, { SIGTERM, "SIGTERM" }, { SIGINT, "SIGINT" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].sig == sig)
			return names[i].name;
	snprintf(buf, len, "signal %d", sig);
	return buf;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/*
 * Caps what the child may add to its private writable memory (RLIMIT_DATA:
 * brk and private mappings, Linux 4.7 on) at NF_BT_CHILD_MEM_MAX over what it
 * has now, which includes a sanitizer's shadow; the address space would not
 * do, a sanitizer's allocator maps inside a range it reserved at start.
 */
static void child_limit_memory(void)
{
	char buf[4096], *at;
	unsigned long long kb = 0;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	struct rlimit rl;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	at = strstr(buf, "\nVmData:");
	if (!at || sscanf(at + 8, "%llu", &kb) != 1 || getrlimit(RLIMIT_DATA, &rl) != 0)
		return;
	unsigned long long want = kb * 1024ull + NF_BT_CHILD_MEM_MAX;
	if (rl.rlim_max != RLIM_INFINITY && want > rl.rlim_max)
		want = rl.rlim_max;
	if (rl.rlim_cur == RLIM_INFINITY || want < rl.rlim_cur) {
		rl.rlim_cur = (rlim_t)want;
		setrlimit(RLIMIT_DATA, &rl);
	}
}

/* What the child reports through its pipe: the outcome of its read. */
struct nf_bt_verdict {
	int code;
	char msg[NF_ERROR_MSG_MAX];
};

/*
 * The child: the same probe and whole read as this process would do, without
 * callbacks; writes its verdict and _exits (no atexit handlers, no stdio
 * flush). Its crash signals are the default ones (a crash handler installed
 * by a sanitizer or fuzzer would otherwise turn the crash into an exit), it
 * leaves no core file, dies with its parent, and reads and writes nothing
 * but /dev/null and its pipe.
 */
static _Noreturn void child_read(struct nf_parser *p, int wfd, pid_t parent)
{
	static const int crash_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS };
	struct rlimit no_core = { 0, 0 };
	struct sigaction dfl;
	struct nf_bt_verdict v;
	struct nf_error e;
	sigset_t none;
	int null;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	if (wfd <= STDERR_FILENO && (wfd = fcntl(wfd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1)) < 0)
		_exit(2);
	setrlimit(RLIMIT_CORE, &no_core);
	child_limit_memory();
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	for (size_t i = 0; i < sizeof(crash_sigs) / sizeof(crash_sigs[0]); i++)
		sigaction(crash_sigs[i], &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		if (null > STDERR_FILENO)
			close(null);
	}
	/* Descriptors of the caller (a lock, a socket, a pipe someone reads to
	 * its end) are not held open by the child. */
	if (wfd > 3)
		close_range(3, (unsigned)wfd - 1, 0);
	close_range((unsigned)wfd + 1, ~0u, 0);

	nf_error_clear(&e);
	v.code = nf_parser_probe(p, &e);
	if (!v.code)
		v.code = nf_parser_run(p, NULL, &e);
	snprintf(v.msg, sizeof(v.msg), "%s", v.code ? e.msg : "");
	if (write(wfd, &v, sizeof(v)) != (ssize_t)sizeof(v))
		_exit(2);
	_exit(0);
}

/*
 * Reads the trace in a child first (see the top of the file). Returns 0 when
 * the child read it whole (the graph then runs here), the child's own error
 * when babeltrace2 refused the trace (the same one this process would get),
 * NF_EFORMAT when the child crashed or ran out of time, NF_EIO when it could
 * not be started.
 */
int nf_bt_contained(struct nf_parser *p, struct nf_error *err)
{
	struct nf_bt_verdict v;
	double timeout = child_timeout_ms(p->dir), deadline = now_ms() + timeout;
	size_t got = 0;
	bool timed_out = false;
	int wait_errno = 0;
	pid_t parent = getpid(), pid;
	int fds[2], st = 0;
	char sig[32];

	if (pipe2(fds, O_CLOEXEC) != 0)
		return nf_error_set(err, NF_EIO, "%s: cannot start babeltrace2's trial read: %s", p->dir,
				    strerror(errno));
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(fds[0]);
		close(fds[1]);
		return nf_error_set(err, NF_EIO, "%s: cannot start babeltrace2's trial read: %s", p->dir,
				    strerror(e));
	}
	if (pid == 0) {
		close(fds[0]);
		child_read(p, fds[1], parent);
	}
	close(fds[1]);
	/* The verdict, or end of file when the child is gone. */
	for (;;) {
		double left = deadline - now_ms();
		struct pollfd pf = { fds[0], POLLIN, 0 };
		ssize_t n;
		int r;

		if (left <= 0) {
			timed_out = true;
			break;
		}
		r = poll(&pf, 1, left > 1e9 ? 1000000000 : (int)left + 1);
		if (r < 0 && errno != EINTR) {
			wait_errno = errno;
			break;
		}
		if (r <= 0)
			continue;
		n = read(fds[0], (char *)&v + got, sizeof(v) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fds[0]);
	if (timed_out || wait_errno)
		kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (timed_out)
		return nf_error_set(err, NF_EFORMAT,
				    "%s: babeltrace2 did not finish reading this trace in %g s (stopped; "
				    "NFTRACE_BT_TIMEOUT sets the bound): not a trace nftrace can read",
				    p->dir, timeout / 1000.0);
	if (wait_errno)
		return nf_error_set(err, NF_EIO, "%s: waiting for babeltrace2's trial read: %s", p->dir,
				    strerror(wait_errno));
	if (got == sizeof(v)) {
		v.msg[sizeof(v.msg) - 1] = '\0';
		if (v.code == 0)
			return 0;
		if (!v.msg[0])
			return nf_error_set(err, v.code, "%s: babeltrace2 cannot read this trace (%s)",
					    p->dir, nf_strerror(v.code));
		return nf_error_set(err, v.code, "%s", v.msg);
	}
	if (WIFSIGNALED(st))
		return nf_error_set(err, NF_EFORMAT,
				    "%s: babeltrace2 crashed (%s) reading this trace (or needed more than %llu "
				    "GiB of memory): not a trace nftrace can read", p->dir,
				    signal_name(WTERMSIG(st), sig, sizeof(sig)), NF_BT_CHILD_MEM_MAX >> 30);
	/* Exited without a verdict: a sanitizer's or libc's own report of a crash
	 * or of memory it could not get. */
	return nf_error_set(err, NF_EFORMAT,
			    "%s: babeltrace2 crashed (exit %d) reading this trace (or needed more than %llu "
			    "GiB of memory): not a trace nftrace can read", p->dir,
			    WIFEXITED(st) ? WEXITSTATUS(st) : -1, NF_BT_CHILD_MEM_MAX >> 30);
}
