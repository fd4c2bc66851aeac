/*
 * nftrace: the command table and main. Each command lives in its own
 * cli/cmd_*.c; main dispatches, and checks that stdout was written.
 */
#include "cli.h"

#include "nftrace/kernel.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>

#ifndef NF_VERSION
#define NF_VERSION "0.0.0"
#endif

static const struct nf_cmd nf_commands[] = {
	{ "record", cmd_record, "record a scenario or a program into a session directory",
	  "usage: nftrace record -o DIR [--seed N] [--mode deterministic|threaded] [--ground-truth] [--force]\n"
	  "                      [--kernel EVENTS] SCENARIO\n"
	  "       nftrace record -o DIR [options] -- PROGRAM [ARGS...]\n"
	  "\n"
	  "Runs SCENARIO (a scenario file, see schemas/scenario.md) through the native fence\n"
	  "runtime, or runs PROGRAM (which links libnfence), and writes a CTF 1.8 session to DIR.\n"
	  "\n"
	  "  -o, --output DIR   session directory to create\n"
	  "  --seed N           simulation seed (default: the scenario's, else 1)\n"
	  "  --mode MODE        deterministic (default) or threaded\n"
	  "  --ground-truth     also record the simulator's true times (truth stream)\n"
	  "  --force            replace an existing session in DIR\n"
	  "  --kernel EVENTS    also record Linux kernel events in a private tracefs instance while it\n"
	  "                     runs (root): comma-separated system or system:event, '?' after one makes\n"
	  "                     it optional; 'default' = dma_fence,gpu_scheduler?,sched:sched_switch,\n"
	  "                     sched:sched_wakeup. The session starts when tracing began.\n"
	  "\n"
	  "A killed recorder (even kill -9) leaves a session readable up to its last whole packet.\n"
	  "SIGINT/SIGTERM closes the session cleanly and exits 130; a full disk is a one-line error\n"
	  "naming the file, exit 1. A progress line shows on a terminal only.\n" },
	{ "report", cmd_report, "draw a GPUView-style timeline to PNG, SVG, PDF or interactive HTML",
	  "usage: nftrace report DIR -o FILE.{png,svg,pdf} [--from T] [--to T] [--queue Q]... [--fence F]...\n"
	  "                      [--width PX] [--theme light|dark] [--title TEXT] [--critical-path ID]\n"
	  "       nftrace report DIR -o FILE.html [--from T] [--to T] [--queue Q]... [--fence F]...\n"
	  "                      [--title TEXT] [--max-ops N]\n"
	  "\n"
	  "Draws one row per hardware queue: light pink waits, dark pink signals, each box from\n"
	  "when it was queued on the CPU to when the GPU completed it. Times accept units: 12.5ms.\n"
	  "Linux kernel sessions: GPU rings on top (jobs: submitted -> started shaded, started ->\n"
	  "finished solid), vblank lines, user markers on their thread's row; CPU rows for the\n"
	  "threads that submitted GPU work, waited on fences or wrote markers, by process:\n"
	  "  --threads all        a row for every thread that ran\n"
	  "  --thread NAME|TID    also this thread (repeatable)\n"
	  "  --process NAME|PID   also every thread of this process (repeatable)\n"
	  "--critical-path ID draws operation ID's critical path (see 'nftrace critical-path') over\n"
	  "the rows in blue, segment by segment (waits dashed), each joined to the next; without\n"
	  "--from/--to the window is the path's span with a margin.\n"
	  "FILE.html is one self-contained interactive page (wheel zoom, drag pan, hover details,\n"
	  "wait <-> signal highlighting, search); it holds the details of at most --max-ops\n"
	  "operations (default 100000) and summaries of the whole window, and names the --from/--to\n"
	  "to use for the rest.\n" },
	{ "query", cmd_query, "run SQL over a session's timeline",
	  "usage: nftrace query DIR [DIR...] [--csv|--json|--table] (\"SQL\" | -f FILE.sql)\n"
	  "       nftrace query --clickhouse URL [--database DB] [--csv|--json|--table] (\"SQL\" | -f FILE.sql)\n"
	  "       nftrace query DIR [--csv|--json|--table] --report stalls|queues|lost\n"
	  "\n"
	  "Builds the session's SQLite timeline (DIR/.timeline.db) on first use and runs SQL on it,\n"
	  "read-only. With several sessions they are attached as s1, s2, ... Tables: schemas/timeline.sql.\n"
	  "Reports: stalls (the 20 longest GPU wait stalls and the signal that ended each), queues\n"
	  "(per queue: operations, lost, time stalled in waits), lost (spans of lost log entries).\n"
	  "stall_blame (who made each queue wait: schemas/analysis.sql) is computed and kept in the\n"
	  "timeline the first time a query names it.\n"
	  "--clickhouse URL runs the SQL on a ClickHouse fleet store filled by 'nftrace push'\n"
	  "(database DB, default nftrace): --table is ClickHouse's PrettyCompactNoEscapes, --csv\n"
	  "CSVWithNames, --json JSONEachRow (one object per line, 64-bit integers as numbers); a\n"
	  "FORMAT clause in the SQL wins.\n" },
	{ "info", cmd_info, "show a session's facts, or the event schema",
	  "usage: nftrace info DIR [--json]\n"
	  "       nftrace info --events       (the event reference, as Markdown)\n" },
	{ "check", cmd_check, "check that a session's logs are whole: lost, zero, repeated, backwards entries",
	  "usage: nftrace check DIR [--json]\n"
	  "\n"
	  "Reads the session and replays the OS's log bookkeeping. Prints, per hardware queue and\n"
	  "log (waits, signals), the epochs, the entries read, the entries lost to overruns, the\n"
	  "zero, repeated and backwards end timestamps and the other findings, with where the\n"
	  "first of each kind was found; illegal findings are listed one by one (the first 50).\n"
	  "\n"
	  "Legal (exit 0): entries lost to an overrun (wraparound), zero end timestamps (an LDA\n"
	  "skipped write), repeated end timestamps, a log recreated at a new location (new epoch).\n"
	  "Illegal (exit 1): an end timestamp that goes backwards, an unknown fence handle, an\n"
	  "operation type that does not match the log, an index or capacity out of range, a\n"
	  "header that goes backwards or a read that does not match it; and a session that\n"
	  "cannot be read (truncated or corrupt stream, not a CTF trace): one line on stderr.\n"
	  "\n"
	  "Hangs and deadlocks (over the session's timeline, built when missing): GPU and CPU waits\n"
	  "still open at the end, each with its wait-for chain (the signals that could satisfy it\n"
	  "are queued behind which wait). Exit 1 with verdict deadlock: waits in a cycle, each\n"
	  "edge listed; verdict hang: a wait for a value no signal in the session reaches (never\n"
	  "signaled), or one blocked behind such waits. A signal that lowers a monitored fence's\n"
	  "value is illegal. A wait a queued signal can still satisfy (the session ended mid-frame)\n"
	  "is listed as pending and changes nothing. A session without its end of recording\n"
	  "(recorder killed, files cut) or whose streams belong to another recording: verdict\n"
	  "incomplete, exit 1. Verdicts, strongest first: illegal, incomplete, deadlock, hang,\n"
	  "legal_anomalies, whole.\n"
	  "\n"
	  "  --json   the same as one JSON object (verdict: whole, legal_anomalies, hang, deadlock,\n"
	  "           incomplete or illegal; hangs: counts per kind; hang_findings: each with its wait and edges)\n" },
	{ "import", cmd_import, "convert a trace-cmd file (trace.dat) or a Windows ETW capture (.etl) into a session",
	  "usage: nftrace import TRACE.DAT|CAPTURE.ETL -o DIR [--force]\n"
	  "\n"
	  "A Windows ETW capture (.etl: told by its content, or taken as one by its name; from xperf,\n"
	  "WPR or GPUView's log.cmd) is copied into DIR and read without the Windows API:\n"
	  "Microsoft-Windows-DxgKrnl contexts and hardware queues become queues, sync objects\n"
	  "fences, wait and signal queue packets fence_ops (tied wait <- signal in deps), CPU waits\n"
	  "cpu_waits, DMA packets dma_packets, VSyncs vsyncs, other events etw_events\n"
	  "(schemas/timeline.sql). Nothing is left behind when the capture cannot be read.\n"
	  "\n"
	  "Reads a trace-cmd file (versions 6 and 7, every buffer instance in it) with libtracecmd and\n"
	  "decodes its events with libtraceevent from the formats stored in the file. dma_fence events\n"
	  "become fences on per-timeline rows, waits and signals (fence_ops, deps), sched_switch CPU\n"
	  "thread rows (cpu_runs), other events raw rows (kernel_events), lost events anomalies.\n"
	  "The session's clock is the trace's clock in nanoseconds from its first event.\n"
	  "\n"
	  "  -o, --output DIR   session directory to create\n"
	  "  --force            replace an existing session in DIR\n" },
	{ "export", cmd_export, "write a session as a Perfetto trace or Chrome trace JSON",
	  "usage: nftrace export DIR -o FILE --format perfetto|chrome-json [--from T] [--to T]\n"
	  "                      [--queue Q]... [--fence F]...\n"
	  "\n"
	  "Writes the session's timeline for Perfetto UI (ui.perfetto.dev: Open trace file),\n"
	  "trace_processor or chrome://tracing: a process per adapter with a track per hardware\n"
	  "queue, a thread track per CPU thread, each GPU wait and signal a slice from queued to\n"
	  "end (the stall nested), CPU waits, a flow from each signal to each wait it released,\n"
	  "lost spans and anomalies as instants, lost entries per log as counters.\n"
	  "\n"
	  "  -o, --output FILE   file to write (replaced when complete)\n"
	  "  --format F          perfetto (protobuf) or chrome-json\n"
	  "  --from T, --to T    only what overlaps this window (units as in report: 12.5ms)\n"
	  "  --queue Q           only this hardware queue's operations (repeat for more)\n"
	  "  --fence F           only operations and CPU waits/signals on this fence (repeat)\n" },
	{ "critical-path", cmd_critical_path, "why an operation finished when it did: its chain of queues, fences, threads",
	  "usage: nftrace critical-path DIR [--op ID | --at TIME | --queue Q] [--json]\n"
	  "\n"
	  "Explains the latency (queued on the CPU to completed) of one operation: the last one to\n"
	  "finish (default), operation ID (fence_ops.id), the last to finish by TIME (12.5ms), or\n"
	  "the last to finish on hardware queue Q (handle or name). Walks back from its end: while\n"
	  "an operation waited, to the signal that released it (deps) and that signal's queue;\n"
	  "while a queue was busy with earlier work, to that work; when work waited for the CPU to\n"
	  "queue it, to the CPU thread (and the CPU waits it did). Prints the segments in time\n"
	  "order: on which queue or thread, doing what (waiting on fence F >= v, executing,\n"
	  "running until it queued the work), start, end and duration in ns; the durations add up\n"
	  "to the latency exactly.\n"
	  "\n"
	  "  --json   the same as one JSON object\n" },
	{ "push", cmd_push, "load sessions into a ClickHouse fleet store (many machines, many sessions)",
	  "usage: nftrace push DIR... --clickhouse URL [--database DB] [--batch-bytes N] [--streams K] [--quiet]\n"
	  "       nftrace push DIR... --cluster NAME --clickhouse URL1 --clickhouse URL2... [options]\n"
	  "\n"
	  "Loads each session's timeline (built when missing) into ClickHouse over its HTTP interface\n"
	  "(URL: http://host:8123, may carry ?user=..&password=..), in Native-format INSERTs of about\n"
	  "N bytes each (default 256 MiB), each streamed as it is encoded, over K connections at once\n"
	  "(default 2; each reads the timeline on a thread of its own; memory: about 6 MiB each).\n"
	  "Creates database DB (default nftrace) and the tables when missing:\n"
	  "every table of schemas/timeline.sql with a leading session column (MergeTree, one\n"
	  "partition per session, ordered by session and time) and `sessions` (one row per complete\n"
	  "session: host, source, tool_version, seed, rows, every meta pair). The session id is the\n"
	  "directory's name. Pushing a session again replaces it; a push that fails half-way leaves\n"
	  "the previous version, or no listing: a session's rows count only when it is in `sessions`.\n"
	  "Query with 'nftrace query --clickhouse URL \"SQL\"' or clickhouse-client.\n"
	  "--cluster NAME: the servers define cluster NAME (remote_servers); one --clickhouse URL per\n"
	  "shard, in shard order. Each shard gets <table>_local tables, each a Distributed <table>\n"
	  "over them (sharding key cityHash64(session)); a session goes whole to its shard.\n" },
	{ "help", cmd_help, "show help for nftrace or one command",
	  "usage: nftrace help [COMMAND]\n" },
};

#define N_COMMANDS (sizeof(nf_commands) / sizeof(nf_commands[0]))

const struct nf_cmd *nf_cli_find(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (!strcmp(nf_commands[i].name, name))
			return &nf_commands[i];
	return NULL;
}

int nf_cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "nftrace %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see 'nftrace %s --help')\n", cmd);
	return NF_EXIT_USAGE;
}

int nf_cli_fail(const char *cmd, const struct nf_error *err)
{
	/* One line whatever the message holds (SQLite quotes bad tokens, newlines
	 * included; babeltrace2 quotes file contents): control bytes become '?'. */
	fprintf(stderr, "nftrace %s: ", cmd);
	/* A failed write to stdout (a full disk, a closed pipe) is what to report. */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fputs("cannot write to standard output\n", stderr);
		return NF_EXIT_FAIL;
	}
	for (const char *m = err->msg[0] ? err->msg : nf_strerror(err->code); *m;) {
		int n = nf_text_control_len(m); /* C0, DEL and UTF-8 C1 controls */

		fputc(n ? '?' : *m, stderr);
		m += n ? n : 1;
	}
	fputc('\n', stderr);
	return NF_EXIT_FAIL;
}

static void print_main_usage(FILE *f)
{
	fprintf(f, "usage: nftrace [--version] [--help] COMMAND [ARGS]\n\n"
		   "nftrace captures and analyses GPU native fence logs (WDDM 3.2).\n\nCommands:\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(f, "   %-13s %s\n", nf_commands[i].name, nf_commands[i].summary);
	fprintf(f, "\nRun 'nftrace COMMAND --help' for a command's options.\n");
}

int nf_cli_common_option(const char *cmd, const char *arg)
{
	if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
		const struct nf_cmd *c = nf_cli_find(cmd);
		fputs(c ? c->usage : "", stdout);
		return NF_EXIT_OK;
	}
	if (!strcmp(arg, "--version")) {
		printf("nftrace %s\n", NF_VERSION);
		return NF_EXIT_OK;
	}
	return -1;
}

int cmd_help(int argc, char **argv)
{
	if (argc > 1) {
		int r = nf_cli_common_option("help", argv[1]);
		if (r >= 0)
			return r;
		const struct nf_cmd *c = nf_cli_find(argv[1]);
		if (!c)
			return nf_cli_usage_error("help", "unknown command '%s'", argv[1]);
		fputs(c->usage, stdout);
		return NF_EXIT_OK;
	}
	print_main_usage(stdout);
	return NF_EXIT_OK;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc < 2) {
		print_main_usage(stderr);
		return NF_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("nftrace %s\n", NF_VERSION);
		return NF_EXIT_OK;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		print_main_usage(stdout);
		return NF_EXIT_OK;
	}
	const struct nf_cmd *c = nf_cli_find(argv[1]);
	if (!c) {
		fprintf(stderr, "nftrace: '%s' is not a command (see 'nftrace --help')\n", argv[1]);
		return NF_EXIT_USAGE;
	}
	/* Kernel tracing left running by a killed `record --kernel` (its
	 * tracefs instance outlives it) stops at the next nftrace command. */
	nf_kernel_remove_stale_instances(NULL);
	/* A file size limit (ulimit -f) is a write error with a message, not a
	 * silent SIGXFSZ death that leaves a partial output. Not for record: the
	 * program it runs would inherit the ignored signal (the CTF writer's
	 * committer ignores it on its own). */
	if (strcmp(c->name, "record") != 0)
		signal(SIGXFSZ, SIG_IGN);
	rc = c->fn(argc - 1, argv + 1);
	/* Output that could not be written is a failure (git.c does the same). */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		if (rc == NF_EXIT_OK) /* else nf_cli_fail said it already: one line */
			fprintf(stderr, "nftrace %s: cannot write to standard output\n", c->name);
		return NF_EXIT_FAIL;
	}
	return rc;
}
