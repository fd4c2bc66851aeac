/*
 * Tests for the scenario language (capture/scenario.c): parse errors carry the
 * exact "file:line:column:" of the offending word, a bad scenario records
 * nothing, and every sample under samples/ parses.
 */
#include "../../capture/scenario.h"
#include "nf_test.h"
#include "contract/record.h"

#include <dirent.h>
#include <sys/stat.h>

#define HDR "adapter A caps native\nadapter B caps native\nqueue Q adapter A\nfence F adapter A\nfence G adapter B\n"

struct bad_case {
	const char *what;
	const char *text;
	size_t len;          /* 0: strlen(text) */
	const char *prefix;  /* expected start of the message */
};

static const struct bad_case bad_cases[] = {
	{ "unknown statement", HDR "sgnal Q F 1\n", 0, "t.nfs:6:1: unknown statement" },
	{ "unknown adapter key", "adapter X caps native colour red\n", 0, "t.nfs:1:23: unknown adapter setting" },
	{ "unknown os key", "os tracing on speed 3\nadvance 1ms\n", 0, "t.nfs:1:15: unknown os setting" },
	{ "bad number", HDR "advance abc\n", 0, "t.nfs:6:9: expected a number" },
	{ "unknown unit", HDR "advance 5xs\n", 0, "t.nfs:6:9: unknown unit 'xs'" },
	{ "unit on a value", HDR "signal Q F 5ms\n", 0, "t.nfs:6:12: unknown unit 'ms'" },
	{ "undefined queue", HDR "signal Q9 F 1\n", 0, "t.nfs:6:8: unknown queue 'Q9'" },
	{ "undefined fence", HDR "wait Q H 1\n", 0, "t.nfs:6:8: unknown fence 'H'" },
	{ "fence on another adapter", HDR "signal Q G 1\n", 0, "t.nfs:6:10: fence 'G' is on adapter 'B'" },
	{ "unclosed repeat", HDR "advance 1us\nrepeat 3 {\nsignal Q F 1\n", 0,
	  "t.nfs:7:1: repeat opened here is never closed" },
	{ "stray brace", HDR "advance 1us\n  }\n", 0, "t.nfs:7:3: '}' without a matching repeat" },
	{ "object inside repeat", HDR "repeat 2 {\n  fence X adapter A\n}\n", 0,
	  "t.nfs:7:9: a fence cannot be defined inside repeat" },
	{ "NUL byte", HDR "advance 1us\nadv\0ance\n", sizeof(HDR "advance 1us\nadv\0ance\n") - 1,
	  "t.nfs:7:1: binary data (NUL byte)" },
	{ "empty file", "", 0, "t.nfs:1:1: empty scenario" },
	{ "only comments", "# nothing\n\n   # here\n", 0, "t.nfs:1:1: empty scenario" },
	{ "value overflow", HDR "signal Q F 18446744073709551615+1\n", 0, "t.nfs:6:12: expression" },
	{ "literal overflow", HDR "signal Q F 18446744073709551616\n", 0, "t.nfs:6:12: number" },
	{ "unknown loop variable", HDR "repeat 2 as $i {\n  signal Q F $j\n}\n", 0,
	  "t.nfs:7:14: unknown loop variable '$j'" },
	{ "control character", HDR "advance\x01 1us\n", 0, "t.nfs:6:8: unexpected character 0x01" },
	{ "wrong kind", HDR "signal F F 1\n", 0, "t.nfs:6:8: 'F' is a fence, not a queue" },
	{ "duplicate name", HDR "queue F adapter A\n", 0, "t.nfs:6:7: 'F' is already defined" },
	{ "missing arguments", HDR "wait Q F\n", 0, "t.nfs:6:9: missing arguments" },
	{ "fraction of a nanosecond", HDR "advance 1.5ns\n", 0, "t.nfs:6:9: '1.5ns' is not a whole number" },
	/* Tracing enlarges an explicit log size too (2 x 1048576 x 112 bytes a queue). */
	{ "tracing enlarges the logs past the bound",
	  "os tracing on tracing_log_entries 1048576\nadapter A caps native log_entries 8\n"
	  "queue Q1 adapter A\nqueue Q2 adapter A\nqueue Q3 adapter A\nqueue Q4 adapter A\n"
	  "queue Q5 adapter A\nadvance 1us\n", 0, "t.nfs:7:1: the log buffers of 5 queues" },
	{ "settings inside repeat", HDR "repeat 2 {\nos tracing on\n}\n", 0, "t.nfs:7:1: 'os' is not allowed inside repeat" },
};

START_TEST(test_parse_errors)
{
	const struct bad_case *c = &bad_cases[_i];
	struct nf_scenario *sc = (struct nf_scenario *)1;
	struct nf_error err;
	size_t len = c->len ? c->len : strlen(c->text);

	nf_error_clear(&err);
	int rc = nf_scenario_parse("t.nfs", c->text, len, &sc, &err);
	ck_assert_msg(rc == NF_EFORMAT, "%s: rc %d (%s)", c->what, rc, err.msg);
	ck_assert_ptr_null(sc);
	ck_assert_msg(strncmp(err.msg, c->prefix, strlen(c->prefix)) == 0, "%s: got '%s', want '%s...'",
		      c->what, err.msg, c->prefix);
}
END_TEST

START_TEST(test_parse_good)
{
	static const char text[] =
		"# a comment\n"
		"session seed 3 cpu_frequency 10MHz\n"
		"os tracing on log_read_interval 2ms\n"
		"adapter A caps native,optimized gpu_frequency 19.2MHz drift -12.5ppm jitter 100ns\n"
		"queue Q adapter A node 0 engine 1\n"
		"fence F adapter A shared initial 0xFFFFFFFF process 7\n"
		"repeat 3 as $i {\n"
		"  repeat $i+1 as $j {\n"
		"    signal Q F 0xFFFFFFFF+$i*10+$j+1   # trailing comment\n"
		"  }\n"
		"  advance 1.5us\n"
		"}\n"
		"cpu_wait F 1 timeout 1ms\n";
	struct nf_scenario *sc = NULL;
	struct nf_runtime_config cfg;
	struct nf_error err;

	nf_error_clear(&err);
	ck_assert_msg(nf_scenario_parse("good.nfs", text, sizeof(text) - 1, &sc, &err) == 0, "%s", err.msg);
	nf_runtime_config_init(&cfg);
	nf_scenario_apply_settings(sc, &cfg);
	ck_assert_uint_eq(cfg.seed, 3);
	ck_assert(cfg.tracing);
	ck_assert_uint_eq(cfg.log_read_interval_ns, 2000000);
	nf_scenario_destroy(sc);
}
END_TEST

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* A scenario with an error late in the file records nothing: it is parsed
 * before the session directory is created. */
START_TEST(test_error_records_nothing)
{
	char tmp[512], path[600], out[600], empty[600];
	struct nf_record_options o = { 0 };
	struct nf_record_result res;
	struct nf_error err;
	struct stat st;
	FILE *f;

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(path, sizeof(path), "%s/bad.nfs", tmp);
	snprintf(out, sizeof(out), "%s/session", tmp);
	snprintf(empty, sizeof(empty), "%s/empty", tmp);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(HDR "signal Q F 1\nadvance 1ms\nsignal Q F 2\nadvance 5qs\n", f);
	fclose(f);

	o.scenario = path;
	o.out_dir = out;
	nf_error_clear(&err);
	ck_assert_int_eq(nf_record_scenario(&o, &res, &err), NF_EFORMAT);
	ck_assert_msg(strstr(err.msg, "bad.nfs:9:9: unknown unit") != NULL, "%s", err.msg);
	ck_assert_msg(lstat(out, &st) != 0, "a session directory was created");

	/* An existing empty directory (allowed by nf_record_prepare_dir) stays empty. */
	ck_assert_int_eq(mkdir(empty, 0755), 0);
	o.out_dir = empty;
	nf_error_clear(&err);
	ck_assert_int_eq(nf_record_scenario(&o, &res, &err), NF_EFORMAT);
	ck_assert_int_eq(count_entries(empty), 0);
	nf_test_rmtree(tmp);
}
END_TEST


/* The OS's fence-type capabilities are scenario settings
 * (off by default, as in 24H2); an INTRA_GPU fence without
 * support_intra_gpu_fence_type stops the run at its line. */
START_TEST(test_os_fence_type_settings)
{
	static const char on[] = "os support_intra_gpu_fence_type on support_optimized_default_fence_type true\n"
				 "adapter A caps native\nfence F adapter A type intra_gpu\nadvance 1us\n";
	static const char off[] = "adapter A caps native\nqueue Q adapter A\nfence F adapter A type intra_gpu\nadvance 1us\n";
	char tmp[512], path[600], out[600];
	struct nf_record_options o = { 0 };
	struct nf_record_result res;
	struct nf_scenario *sc = NULL;
	struct nf_runtime_config cfg;
	struct nf_error err;
	FILE *f;

	nf_error_clear(&err);
	ck_assert_msg(nf_scenario_parse("on.nfs", on, sizeof(on) - 1, &sc, &err) == 0, "%s", err.msg);
	nf_runtime_config_init(&cfg);
	ck_assert(!cfg.os_support_intra_gpu_fence_type);
	ck_assert(!cfg.os_support_optimized_default_fence_type);
	nf_scenario_apply_settings(sc, &cfg);
	ck_assert(cfg.os_support_intra_gpu_fence_type);
	ck_assert(cfg.os_support_optimized_default_fence_type);
	nf_scenario_destroy(sc);

	nf_test_tmpdir(tmp, sizeof(tmp));
	snprintf(path, sizeof(path), "%s/off.nfs", tmp);
	snprintf(out, sizeof(out), "%s/session", tmp);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(off, f);
	fclose(f);
	o.scenario = path;
	o.out_dir = out;
	nf_error_clear(&err);
	ck_assert_int_eq(nf_record_scenario(&o, &res, &err), NF_EINVAL);
	ck_assert_msg(strstr(err.msg, "off.nfs:3: ") && strstr(err.msg, "SupportIntraGpuFenceType"),
		      "%s", err.msg);
	nf_test_rmtree(tmp);
}
END_TEST

/* Every sample scenario parses. */
START_TEST(test_samples_parse)
{
	char dir[4096], path[8192];
	DIR *d;
	struct dirent *de;
	int n = 0;

	nf_test_source_path(dir, sizeof(dir), "samples");
	d = opendir(dir);
	ck_assert_msg(d != NULL, "cannot open %s", dir);
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		struct nf_scenario *sc = NULL;
		struct nf_error err;

		if (len < 5 || strcmp(de->d_name + len - 4, ".nfs"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		nf_error_clear(&err);
		ck_assert_msg(nf_scenario_load(path, &sc, &err) == 0, "%s", err.msg);
		nf_scenario_destroy(sc);
		n++;
	}
	closedir(d);
	ck_assert_int_ge(n, 14);
}
END_TEST

static Suite *scenario_suite(void)
{
	Suite *s = suite_create("scenario");
	TCase *tc = tcase_create("parse");

	tcase_add_loop_test(tc, test_parse_errors, 0, (int)(sizeof(bad_cases) / sizeof(bad_cases[0])));
	tcase_add_test(tc, test_parse_good);
	tcase_add_test(tc, test_error_records_nothing);
	tcase_add_test(tc, test_samples_parse);
	tcase_add_test(tc, test_os_fence_type_settings);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return nf_test_main(scenario_suite());
}
