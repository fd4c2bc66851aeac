/*
 * The one option parser of every command, and the dispatcher that runs a
 * command row: parse its options[] table, check its arguments, prepare what
 * its flags ask for (a timeline, tracefs), run it (cli.h).
 *
 * Syntax, the same for every command (getopt_long's, as git's parse-options):
 * --name VALUE, --name=VALUE, -x VALUE, -xVALUE, flags bundled (-hq), a long
 * name abbreviated while it is unambiguous, options anywhere among the
 * arguments, "--" ends the options, "-" alone is an argument.
 */
#include "cli.h"

#include "contract/analysis.h"
#include "contract/kernel.h"
#include "contract/session.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The options every command takes besides its table's. */
#define OPT_HELP (-2)
#define OPT_VERSION (-3)

#ifndef NF_VERSION
#define NF_VERSION "0.0.0"
#endif

static size_t n_options(const struct nf_cli_option *o)
{
	size_t n = 0;

	while (o && o[n].name)
		n++;
	return n;
}

/* Whether value is one of values ("a|b|c"). */
static bool one_of(const char *values, const char *value)
{
	size_t n = strlen(value);

	for (const char *p = values; p;) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);

		if (len == n && !strncmp(p, value, n))
			return true;
		p = bar ? bar + 1 : NULL;
	}
	return false;
}

/*
 * The option named by the long option text name (nlen bytes, no "--"):
 * its index, OPT_HELP, OPT_VERSION, or -1 (unknown; *ambiguous set when
 * several options begin with it).
 */
static int find_long(const struct nf_cli_option *opts, const char *name, size_t nlen, bool *ambiguous)
{
	static const char *const common[] = { "help", "version" };
	size_t n = n_options(opts);
	int found = -1, matches = 0;

	*ambiguous = false;
	for (size_t i = 0; i < n; i++)
		if (strlen(opts[i].name) == nlen && !strncmp(opts[i].name, name, nlen))
			return (int)i;
	for (int k = 0; k < 2; k++)
		if (strlen(common[k]) == nlen && !strncmp(common[k], name, nlen))
			return k ? OPT_VERSION : OPT_HELP;
	if (nlen == 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!strncmp(opts[i].name, name, nlen)) {
			found = (int)i;
			matches++;
		}
	for (int k = 0; k < 2; k++)
		if (!strncmp(common[k], name, nlen)) {
			found = k ? OPT_VERSION : OPT_HELP;
			matches++;
		}
	if (matches > 1) {
		*ambiguous = true;
		return -1;
	}
	return found;
}

/* The long options that begin with name (nlen bytes): "--from, --fence", into buf. */
static void candidates(const struct nf_cli_option *opts, const char *name, size_t nlen, char *buf, size_t len)
{
	static const struct nf_cli_option common[] = { { .name = "help" }, { .name = "version" }, { 0 } };
	size_t o = 0;

	buf[0] = '\0';
	for (int k = 0; k < 2; k++)
		for (const struct nf_cli_option *p = k ? common : opts; p->name && o < len; p++)
			if (!strncmp(p->name, name, nlen))
				o += (size_t)snprintf(buf + o, len - o, "%s--%s", o ? ", " : "", p->name);
}

static int find_short(const struct nf_cli_option *opts, char ch)
{
	size_t n = n_options(opts);

	if (ch == 'h')
		return OPT_HELP;
	for (size_t i = 0; i < n; i++)
		if (opts[i].short_name == ch)
			return (int)i;
	return -1;
}

/* Records option i's value; a value outside its values is a usage error (2), else -1. */
static int take(struct nf_cli *c, int i, const char *value)
{
	const struct nf_cli_option *o = &c->command->cmd->options[i];

	if (o->values && !one_of(o->values, value)) {
		char what[64];
		size_t k = 0;

		if (!strchr(o->values, '|'))
			return nf_cli_usage_error(c->name, "--%s takes only '%s', not '%s'", o->name, o->values,
						  value);
		/* "--format: unknown format 'x' (one of perfetto|chrome-json)" */
		for (const char *a = o->arg ? o->arg : o->name; *a && k + 1 < sizeof(what); a++)
			what[k++] = (char)(*a >= 'A' && *a <= 'Z' ? *a - 'A' + 'a' : *a);
		what[k] = '\0';
		return nf_cli_usage_error(c->name, "--%s: unknown %s '%s' (one of %s)", o->name, what, value, o->values);
	}
	c->given[c->n_given].opt = i;
	c->given[c->n_given].value = value;
	c->n_given++;
	return -1;
}

static int common_option(struct nf_cli *c, int which)
{
	if (which == OPT_HELP) {
		nf_cli_print_help(stdout, c->command);
		return NF_EXIT_OK;
	}
	printf("nftrace %s\n", NF_VERSION);
	return NF_EXIT_OK;
}

/* Parses argv[1..] into c: -1 to go on, else the exit code (--help: 0; errors: 2). */
static int parse(struct nf_cli *c, int argc, char **argv)
{
	const struct nf_cli_option *opts = c->command->cmd->options;
	bool dashdash = false;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r;

		if (dashdash || a[0] != '-' || !a[1]) {
			c->args[c->n_args++] = argv[i];
			continue;
		}
		if (!strcmp(a, "--")) {
			if (c->command->flags & NF_CMD_PROGRAM) {
				c->program = argv + i + 1;
				c->n_program = argc - i - 1;
				return -1;
			}
			dashdash = true;
			continue;
		}
		if (a[1] == '-') {
			const char *name = a + 2, *eq = strchr(name, '=');
			size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
			bool ambiguous;
			int o = find_long(opts, name, nlen, &ambiguous);

			if (ambiguous) {
				char list[256];

				candidates(opts, name, nlen, list, sizeof(list));
				return nf_cli_usage_error(c->name, "ambiguous option '%s' (%s)", a, list);
			}
			if (o == -1)
				return nf_cli_usage_error(c->name, "unknown option '%s'", a);
			if (o < 0 || !opts[o].arg) {
				if (eq)
					return nf_cli_usage_error(c->name, "option '--%s' takes no value",
								  o == OPT_HELP ? "help" : o == OPT_VERSION ? "version"
										     : opts[o].name);
				if (o < 0)
					return common_option(c, o);
				r = take(c, o, "");
			} else if (eq) {
				r = take(c, o, eq + 1);
			} else if (i + 1 < argc) {
				r = take(c, o, argv[++i]);
			} else {
				return nf_cli_usage_error(c->name, "option '%s' needs a value", a);
			}
			if (r >= 0)
				return r;
			continue;
		}
		/* -x, -xVALUE, -x VALUE, -xy (flags together) */
		for (const char *p = a + 1; *p; p++) {
			int o = find_short(opts, *p);

			if (o == -1)
				return nf_cli_usage_error(c->name, "unknown option '-%c'", *p);
			if (o < 0)
				return common_option(c, o);
			if (!opts[o].arg) {
				if ((r = take(c, o, "")) >= 0)
					return r;
				continue;
			}
			if (p[1])
				r = take(c, o, p + 1);
			else if (i + 1 < argc)
				r = take(c, o, argv[++i]);
			else
				return nf_cli_usage_error(c->name, "option '-%c' needs a value", *p);
			if (r >= 0)
				return r;
			break;
		}
	}
	return -1;
}

/* The arguments' count and the required options: -1 to go on, else 2. */
static int check_args(struct nf_cli *c)
{
	const struct nf_cli_cmd *cmd = c->command->cmd;
	const struct nf_cli_option *opts = cmd->options;

	if (c->n_args < cmd->min_args)
		return nf_cli_usage_error(c->name, "missing %s", cmd->args);
	if (cmd->max_args >= 0 && c->n_args > cmd->max_args)
		return nf_cli_usage_error(c->name, "unexpected argument '%s'", c->args[cmd->max_args]);
	for (size_t i = 0; i < n_options(opts); i++)
		if ((opts[i].flags & NF_OPT_REQUIRED) && !nf_cli_has(c, (int)i)) {
			if (opts[i].short_name)
				return nf_cli_usage_error(c->name, "missing -%c %s", opts[i].short_name, opts[i].arg);
			return nf_cli_usage_error(c->name, "missing --%s %s", opts[i].name,
						  opts[i].values ? opts[i].values : opts[i].arg);
		}
	return -1;
}

/* A path for a temporary timeline under $TMPDIR (or /tmp): 0, or -1. */
static int temp_timeline(char *db, size_t len)
{
	const char *base = getenv("TMPDIR");
	int fd;

	if ((size_t)snprintf(db, len, "%s/nftrace-timeline-XXXXXX", base && *base ? base : "/tmp") >= len)
		return -1;
	fd = mkstemp(db);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

/* NF_CMD_TIMELINE: the timeline of each session, into c->db: 0, or the exit code. */
static int ensure_timelines(struct nf_cli *c)
{
	struct nf_error err;

	nf_error_clear(&err);
	c->db = calloc(c->n_sessions ? c->n_sessions : 1, sizeof(*c->db));
	c->db_temp = calloc(c->n_sessions ? c->n_sessions : 1, sizeof(*c->db_temp));
	if (!c->db || !c->db_temp) {
		nf_error_set(&err, NF_ENOMEM, "out of memory");
		return nf_cli_fail(c->name, &err);
	}
	for (size_t i = 0; i < c->n_sessions; i++) {
		const char *dir = c->sessions[i];
		int rc = c->blame ? nf_analysis_ensure_blame(dir, c->db[i], sizeof(c->db[i]), &err)
				  : nf_timeline_ensure(dir, c->db[i], sizeof(c->db[i]), &err);

		/* A session that cannot be written (read-only media, another
		 * user's): a timeline of its own in a temporary file. */
		if (rc == NF_EIO && (c->command->flags & NF_CMD_TIMELINE_TEMP) && !c->blame &&
		    temp_timeline(c->db[i], sizeof(c->db[i])) == 0) {
			nf_error_clear(&err);
			c->db_temp[i] = true;
			rc = nf_timeline_build(dir, c->db[i], &err);
		}
		if (rc)
			return nf_cli_fail(c->name, &err);
	}
	return 0;
}

int nf_cli_dispatch(const struct nf_command *row, int argc, char **argv)
{
	const struct nf_cli_cmd *cmd = row->cmd;
	struct nf_cli c;
	bool prepared = false;
	int rc;

	memset(&c, 0, sizeof(c));
	c.command = row;
	c.name = row->name;
	c.given = calloc((size_t)argc + 1, sizeof(*c.given));
	c.args = calloc((size_t)argc + 1, sizeof(*c.args));
	c.state = calloc(1, cmd->state_size ? cmd->state_size : 1);
	if (!c.given || !c.args || !c.state) {
		fprintf(stderr, "nftrace %s: out of memory\n", row->name);
		rc = NF_EXIT_FAIL;
		goto out;
	}
	if ((rc = parse(&c, argc, argv)) >= 0 || (rc = check_args(&c)) >= 0)
		goto out;
	/* Kernel tracing left running by a killed `record --kernel` (its
	 * tracefs instance outlives it) stops at the next nftrace command. */
	if (nf_kernel_tracefs_find(c.tracefs_buf, sizeof(c.tracefs_buf)) == 0) {
		nf_kernel_remove_stale_instances(c.tracefs_buf);
		if (row->flags & NF_CMD_TRACEFS)
			c.tracefs = c.tracefs_buf;
	}
	c.sessions = c.args;
	c.n_sessions = c.n_args ? 1 : 0;
	prepared = true;
	if (cmd->prepare && (rc = cmd->prepare(&c)) != 0)
		goto out;
	if ((row->flags & NF_CMD_TIMELINE) && (rc = ensure_timelines(&c)) != 0)
		goto out;
	rc = cmd->run(&c);
out:
	if (prepared && cmd->finish)
		cmd->finish(&c);
	for (size_t i = 0; c.db_temp && i < c.n_sessions; i++)
		if (c.db_temp[i])
			unlink(c.db[i]);
	free(c.db);
	free(c.db_temp);
	free(c.state);
	free(c.args);
	free(c.given);
	return rc;
}

/* ---- reading the parsed options ---------------------------------------------- */

const char *nf_cli_get(const struct nf_cli *c, int opt)
{
	for (int i = c->n_given - 1; i >= 0; i--)
		if (c->given[i].opt == opt)
			return c->given[i].value;
	return NULL;
}

bool nf_cli_has(const struct nf_cli *c, int opt)
{
	return nf_cli_get(c, opt) != NULL;
}

int nf_cli_count(const struct nf_cli *c, int opt)
{
	int n = 0;

	for (int i = 0; i < c->n_given; i++)
		n += c->given[i].opt == opt;
	return n;
}

const char *nf_cli_next(const struct nf_cli *c, int opt, int *pos)
{
	while (*pos < c->n_given) {
		const struct nf_cli_given *g = &c->given[(*pos)++];

		if (g->opt == opt)
			return g->value;
	}
	return NULL;
}

int nf_cli_int(const struct nf_cli *c, int opt, long long min, long long max, long long *out)
{
	const char *v = nf_cli_get(c, opt);
	char *end;
	long long x;

	if (!v)
		return 0;
	errno = 0;
	x = strtoll(v, &end, 10);
	if (errno || *end || !*v || x < min || x > max)
		return nf_cli_usage_error(c->name, "--%s must be between %lld and %lld, not '%s'",
					  c->command->cmd->options[opt].name, min, max, v);
	*out = x;
	return 0;
}

/* ---- help ------------------------------------------------------------------- */

void nf_cli_option_label(const struct nf_cli_option *o, char *buf, size_t len)
{
	if (o->short_name)
		snprintf(buf, len, "-%c, --%s%s%s", o->short_name, o->name, o->arg ? " " : "", o->arg ? o->arg : "");
	else
		snprintf(buf, len, "    --%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
}

/* Prints text with each line after the first indented by indent columns. */
static void print_indented(FILE *f, const char *text, int indent)
{
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		int n = nl ? (int)(nl - p) : (int)strlen(p);

		fprintf(f, "%*s%.*s\n", p == text ? 0 : indent, "", n, p);
		p = nl ? nl + 1 : p + n;
	}
}

void nf_cli_print_help(FILE *f, const struct nf_command *row)
{
	static const struct nf_cli_option common[] = {
		{ .name = "help", .short_name = 'h', .help = "show this help" },
		{ .name = "version", .help = "show nftrace's version" },
	};
	const struct nf_cli_cmd *cmd = row->cmd;
	const struct nf_cli_option *opts = cmd->options;
	size_t n = n_options(opts);
	char label[128];
	int width = 0;

	for (const char *p = cmd->synopsis; *p;) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);

		fprintf(f, "%s%.*s\n", p == cmd->synopsis ? "usage: " : "       ", len, p);
		p = nl ? nl + 1 : p + len;
	}
	if (cmd->description && *cmd->description)
		fprintf(f, "\n%s", cmd->description);
	for (size_t i = 0; i < n + 2; i++) {
		nf_cli_option_label(i < n ? &opts[i] : &common[i - n], label, sizeof(label));
		if ((int)strlen(label) > width && strlen(label) <= 26)
			width = (int)strlen(label);
	}
	fputs("\nOptions:\n", f);
	for (size_t i = 0; i < n + 2; i++) {
		const struct nf_cli_option *o = i < n ? &opts[i] : &common[i - n];

		nf_cli_option_label(o, label, sizeof(label));
		if ((int)strlen(label) > width)
			fprintf(f, "  %s\n  %*s  ", label, width, "");
		else
			fprintf(f, "  %-*s  ", width, label);
		print_indented(f, o->help, width + 4);
	}
}
