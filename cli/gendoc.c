/*
 * nftrace-gendoc: prints nftrace's manual pages and shell completions from
 * the command table (cli/nftrace.c and each command's options, arguments and
 * --help text in its cli/cmd_*.c), so that they cannot drift from what the
 * parser takes. Run by the build (cli/CMakeLists.txt); not installed.
 *
 *   nftrace-gendoc man1 OUTDIR DOCDIR VERSION DATE
 *       nftrace.1 and nftrace-COMMAND.1 for each command: the --help text,
 *       and the longer description and examples of DOCDIR/COMMAND.txt
 *       (DOCDIR/nftrace.txt for nftrace.1).
 *   nftrace-gendoc man5 OUT VERSION DATE FILE.sql...
 *       nftrace-timeline(5) from the schema files' comments.
 *   nftrace-gendoc bash OUT | zsh OUT
 *       the completion scripts.
 *   nftrace-gendoc list
 *       every command, then each of its options, for tests: "COMMAND --name
 *       [-x] [:ARG] [=VALUE...]" (short form, the value's name, the values).
 *
 * The text of --help descriptions, of cli/doc/NAME.txt and of SQL comments is
 * plain: paragraphs split by blank lines, "- " starts a list item (its
 * continuation lines indented), other indented lines are shown as they are
 * (examples, tables), a line in capitals starts a section (doc files only).
 * Exit 0, or 1 with one line on stderr.
 */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *prog = "nftrace-gendoc";

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* The page being written: into memory, tidied and written out by close_out. */
static char *out_buf;
static size_t out_len;

static FILE *open_out(const char *path)
{
	FILE *f = open_memstream(&out_buf, &out_len);

	if (!f)
		die("%s: %s", path, strerror(errno));
	return f;
}

/* Whether the line at p is the roff request req (".PP", ".SH"...). */
static bool is_request(const char *p, const char *req)
{
	size_t n = strlen(req);

	return !strncmp(p, req, n) && (p[n] == '\n' || p[n] == ' ' || p[n] == '\0');
}

/*
 * Writes the page to path, without the paragraph breaks roff ignores (and
 * mandoc warns about): .PP right after a heading, another .PP, or .TP.
 */
static void close_out(FILE *f, const char *path)
{
	FILE *o;
	bool drop_pp = false;

	if (ferror(f) | fclose(f))
		die("out of memory");
	if (!(o = fopen(path, "w")))
		die("%s: %s", path, strerror(errno));
	for (char *p = out_buf; *p;) {
		char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);

		if (!(drop_pp && is_request(p, ".PP")))
			fwrite(p, 1, n, o);
		drop_pp = is_request(p, ".SH") || is_request(p, ".SS") || is_request(p, ".PP") ||
			  (drop_pp && is_request(p, ".PP"));
		p += n;
	}
	free(out_buf);
	out_buf = NULL;
	if (ferror(o) | fclose(o))
		die("%s: write failed", path);
}

/* The whole file at path, NUL-terminated (free it); NULL when it does not exist. */
static char *slurp(const char *path, bool must)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f) {
		if (must || errno != ENOENT)
			die("%s: %s", path, strerror(errno));
		return NULL;
	}
	for (;;) {
		if (cap - n < 4096) {
			cap = cap ? cap * 2 : 65536;
			if (!(buf = realloc(buf, cap + 1)))
				die("out of memory");
		}
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	if (ferror(f))
		die("%s: read error", path);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* ---- roff ----------------------------------------------------------------------- */

/*
 * Writes n bytes of s as roff text: backslashes and hyphens escaped, a
 * leading '.' or '\'' kept from being a request, characters outside ASCII as
 * \[uXXXX].
 */
static void roff_text(FILE *f, const char *s, size_t n, bool line_start)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (line_start && (ch == '.' || ch == '\''))
			fputs("\\&", f);
		line_start = false;
		if (ch == '\\')
			fputs("\\e", f);
		else if (ch == '-')
			fputs("\\-", f);
		else if (ch >= 0x80) {
			unsigned cp = 0, more = ch >= 0xf0 ? 3 : ch >= 0xe0 ? 2 : ch >= 0xc0 ? 1 : 0;

			cp = ch & (more == 3 ? 0x07 : more == 2 ? 0x0f : 0x1f);
			for (unsigned k = 0; k < more && i + 1 < n; k++)
				cp = cp << 6 | ((unsigned char)s[++i] & 0x3f);
			fprintf(f, "\\[u%04X]", cp);
		} else
			fputc(ch, f);
	}
}

static void roff_str(FILE *f, const char *s)
{
	roff_text(f, s, strlen(s), false);
}

/* One line of text (no newline in it) as a roff line. */
static void roff_line(FILE *f, const char *s, size_t n)
{
	roff_text(f, s, n, true);
	fputc('\n', f);
}

/* Filled text: roff lines of at most about 72 bytes (roff joins them again), broken at spaces. */
static void roff_fill(FILE *f, const char *s, size_t n)
{
	while (n > 72) {
		size_t cut = 72;

		while (cut > 20 && s[cut] != ' ')
			cut--;
		if (s[cut] != ' ')
			break;
		roff_line(f, s, cut);
		s += cut + 1;
		n -= cut + 1;
	}
	roff_line(f, s, n);
}

/* Whether ch may stand unquoted in the completion scripts' words. */
static bool sh_safe(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       strchr("-_.|,:", ch);
}

/* The values "a|b|c" with sep between them, as roff text or as shell words. */
static void put_values(FILE *f, const char *values, const char *sep, bool roff)
{
	for (const char *p = values; *p; p++)
		if (*p == '|')
			fputs(sep, f);
		else if (roff)
			roff_text(f, p, 1, false);
		else if (sh_safe(*p))
			fputc(*p, f);
		else
			die("'%s': a character the completion scripts do not quote", values);
}

/* The plain text between text and end, as roff paragraphs, lists and literal blocks. */
static void roff_block(FILE *f, const char *text, const char *end)
{
	enum { NONE, PARA, ITEM, LITERAL } mode = NONE;
	bool gap = true;

	for (const char *p = text; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end, *t = p;
		size_t indent;

		while (t < e && *t == ' ')
			t++;
		indent = (size_t)(t - p);
		while (e > t && (e[-1] == ' ' || e[-1] == '\r'))
			e--;
		if (t == e) {
			if (mode == LITERAL)
				fputs(".fi\n.RE\n", f);
			if (mode == ITEM)
				fputs(".RE\n", f);
			mode = NONE;
			gap = true;
		} else if (indent == 0 && e - t >= 2 && t[0] == '-' && t[1] == ' ') {
			if (mode == LITERAL)
				fputs(".fi\n.RE\n", f);
			if (mode != ITEM)
				fputs(gap || mode == NONE ? ".PP\n.RS 2\n" : ".RS 2\n", f);
			fputs(".IP \\(bu 2\n", f);
			roff_fill(f, t + 2, (size_t)(e - t - 2));
			mode = ITEM;
			gap = false;
		} else if (indent > 0 && mode == ITEM) {
			roff_fill(f, t, (size_t)(e - t));
		} else if (indent > 0 && (mode == LITERAL || mode == NONE || mode == PARA)) {
			if (mode != LITERAL)
				fputs(mode == NONE ? ".PP\n.RS 4\n.nf\n" : ".RS 4\n.nf\n", f);
			/* keep the indentation past the first two columns */
			roff_line(f, p + (indent >= 2 ? 2 : indent), (size_t)(e - p - (indent >= 2 ? 2 : indent)));
			mode = LITERAL;
		} else {
			if (mode == LITERAL)
				fputs(".fi\n.RE\n", f);
			if (mode == ITEM)
				fputs(".RE\n", f);
			if (mode != PARA)
				fputs(".PP\n", f);
			roff_fill(f, t, (size_t)(e - t));
			mode = PARA;
			gap = false;
		}
		p = nl ? nl + 1 : end;
	}
	if (mode == LITERAL)
		fputs(".fi\n.RE\n", f);
	if (mode == ITEM)
		fputs(".RE\n", f);
}

static void roff_title(FILE *f, const char *name, int section, const char *version, const char *date)
{
	fputs(".TH ", f);
	for (const char *p = name; *p; p++)
		if (*p == '-')
			fputs("\\-", f);
		else
			fputc(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p, f);
	fprintf(f, " %d %s \"nftrace %s\" \"nftrace Manual\"\n", section, date, version);
	/* names like nftrace-timeline and fence_ops are not to be hyphenated */
	fputs(".nh\n.ad l\n", f);
}

/* ---- doc files: sections of plain text ------------------------------------------ */

/* The sections a doc file may hold, in the order the page shows them. */
static const char *const doc_sections[] = { "DESCRIPTION", "ENVIRONMENT", "FILES", "EXIT STATUS", "EXAMPLES",
					    "SEE ALSO" };
#define N_DOC_SECTIONS (sizeof(doc_sections) / sizeof(doc_sections[0]))

struct doc {
	char *text;
	const char *start[N_DOC_SECTIONS], *end[N_DOC_SECTIONS];
};

static bool is_heading(const char *p, const char *e)
{
	if (p == e || *p < 'A' || *p > 'Z')
		return false;
	for (; p < e; p++)
		if (!((*p >= 'A' && *p <= 'Z') || *p == ' '))
			return false;
	return true;
}

static void doc_read(struct doc *d, const char *path, bool must)
{
	int cur = -1;

	memset(d, 0, sizeof(*d));
	if (!(d->text = slurp(path, must)))
		return;
	for (char *p = d->text; *p;) {
		char *nl = strchr(p, '\n'), *e = nl ? nl : p + strlen(p);

		if (is_heading(p, e)) {
			size_t k;

			for (k = 0; k < N_DOC_SECTIONS; k++)
				if (strlen(doc_sections[k]) == (size_t)(e - p) && !strncmp(doc_sections[k], p, (size_t)(e - p)))
					break;
			if (k == N_DOC_SECTIONS)
				die("%s: unknown section '%.*s' (DESCRIPTION, ENVIRONMENT, FILES, EXIT STATUS, "
				    "EXAMPLES, SEE ALSO)", path, (int)(e - p), p);
			if (d->start[k])
				die("%s: section %s twice", path, doc_sections[k]);
			if (cur >= 0)
				d->end[cur] = p;
			cur = (int)k;
			d->start[k] = nl ? nl + 1 : e;
		} else if (cur < 0 && p != e) {
			die("%s: text before the first section heading (DESCRIPTION, ...)", path);
		}
		p = nl ? nl + 1 : e;
	}
	if (cur >= 0)
		d->end[cur] = d->text + strlen(d->text);
}

static int doc_index(const char *name)
{
	for (size_t k = 0; k < N_DOC_SECTIONS; k++)
		if (!strcmp(doc_sections[k], name))
			return (int)k;
	return -1;
}

static void doc_section(FILE *f, const struct doc *d, const char *name)
{
	int k = doc_index(name);

	if (d->start[k])
		roff_block(f, d->start[k], d->end[k]);
}

/* ---- man pages of the commands --------------------------------------------------- */

static const struct nf_cli_option common_options[] = {
	{ .name = "help", .short_name = 'h', .help = "show the usage and options" },
	{ .name = "version", .help = "show nftrace's version" },
	{ 0 },
};

static void man_option(FILE *f, const struct nf_cli_option *o)
{
	fputs(".TP\n", f);
	if (o->short_name)
		fprintf(f, "\\fB\\-%c\\fR, ", o->short_name);
	fputs("\\fB\\-\\-", f);
	roff_str(f, o->name);
	fputs("\\fR", f);
	if (o->arg) {
		fputs(" \\fI", f);
		roff_str(f, o->arg);
		fputs("\\fR", f);
	}
	fputc('\n', f);
	/* the help's lines are one sentence wrapped for the terminal: joined here */
	for (const char *p = o->help; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		roff_fill(f, p, n);
		p = nl ? nl + 1 : p + n;
	}
	/* the values, unless the help names them all */
	bool named = true;

	for (const char *p = o->values; p && *p; p += strcspn(p, "|") + (p[strcspn(p, "|")] == '|')) {
		char v[64];

		snprintf(v, sizeof(v), "%.*s", (int)strcspn(p, "|"), p);
		named = named && strstr(o->help, v);
	}
	if (o->values && !named) {
		fputs("(one of: ", f);
		put_values(f, o->values, ", ", true);
		fputs(")\n", f);
	}
	if (o->flags & NF_OPT_REQUIRED)
		fputs("(required)\n", f);
}

static void man_synopsis(FILE *f, const char *synopsis)
{
	fputs(".SH SYNOPSIS\n.nf\n", f);
	for (const char *p = synopsis; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (n > 8 && !strncmp(p, "nftrace ", 8)) {
			const char *sp = memchr(p + 8, ' ', n - 8);
			size_t head = sp ? (size_t)(sp - p) : n;

			fputs("\\fB", f);
			roff_text(f, p, head, true);
			fputs("\\fR", f);
			roff_text(f, p + head, n - head, false);
			fputc('\n', f);
		} else {
			roff_line(f, p, n);
		}
		p = nl ? nl + 1 : p + n;
	}
	fputs(".fi\n", f);
}

static void man_exit_status(FILE *f, const struct doc *d)
{
	fputs(".SH EXIT STATUS\n", f);
	if (d->start[doc_index("EXIT STATUS")]) {
		doc_section(f, d, "EXIT STATUS");
		return;
	}
	fputs(".TP\n.B 0\nsuccess\n"
	      ".TP\n.B 1\nthe work failed: one line on standard error names the file, the place\n"
	      "and what is wrong\n"
	      ".TP\n.B 2\nbad usage: one line on standard error says what is wrong\n", f);
}

/* SEE ALSO: nftrace(1) or the commands, nftrace-timeline(5), then the doc's "name(N)" references. */
static void man_see_also(FILE *f, const struct doc *d, const char *self, bool timeline)
{
	int k = doc_index("SEE ALSO");

	fputs(".SH SEE ALSO\n", f);
	if (strcmp(self, "nftrace"))
		fputs("\\fBnftrace\\fR(1)", f);
	else
		for (size_t i = 0; i < nf_n_commands; i++) {
			fputs(i ? ",\n\\fBnftrace\\-" : "\\fBnftrace\\-", f);
			roff_str(f, nf_commands[i].name);
			fputs("\\fR(1)", f);
		}
	if (timeline)
		fputs(",\n\\fBnftrace\\-timeline\\fR(5)", f);
	for (const char *p = d->start[k]; p && p < d->end[k];) {
		size_t n = strcspn(p, ", \n");
		const char *paren = memchr(p, '(', n);

		if (n && (!paren || paren == p || p[n - 1] != ')'))
			die("SEE ALSO: '%.*s' is not a name(section) reference", (int)n, p);
		if (n) {
			fputs(",\n\\fB", f);
			roff_text(f, p, (size_t)(paren - p), false);
			fputs("\\fR", f);
			roff_text(f, paren, (size_t)(p + n - paren), false);
		}
		p += n;
		p += p < d->end[k];
	}
	fputc('\n', f);
}

static void man_command(const struct nf_command *row, const char *dir, const char *docdir, const char *version,
			const char *date)
{
	const struct nf_cli_cmd *cmd = row->cmd;
	char path[4096], name[128];
	struct doc d;
	FILE *f;

	snprintf(name, sizeof(name), "nftrace-%s", row->name);
	snprintf(path, sizeof(path), "%s/%s.txt", docdir, row->name);
	doc_read(&d, path, true);
	snprintf(path, sizeof(path), "%s/%s.1", dir, name);
	f = open_out(path);
	fprintf(f, ".\\\" Generated by nftrace-gendoc from the command table (cli/nftrace.c, cli/cmd_*.c)\n"
		   ".\\\" and cli/doc/%s.txt; do not edit.\n", row->name);
	roff_title(f, name, 1, version, date);
	fputs(".SH NAME\n", f);
	roff_str(f, name);
	fputs(" \\-\n", f);
	roff_fill(f, row->summary, strlen(row->summary));
	man_synopsis(f, cmd->synopsis);
	fputs(".SH DESCRIPTION\n", f);
	if (cmd->description)
		roff_block(f, cmd->description, cmd->description + strlen(cmd->description));
	doc_section(f, &d, "DESCRIPTION");
	if (row->flags & NF_CMD_TIMELINE)
		fputs(".PP\nThe session's timeline (\\fIDIR\\fR/.timeline.db, \\fBnftrace\\-timeline\\fR(5))\n"
		      "is built the first time a command needs it and rebuilt when the session's\nfiles change.\n", f);
	fputs(".SH OPTIONS\n", f);
	for (const struct nf_cli_option *o = cmd->options; o->name; o++)
		man_option(f, o);
	for (const struct nf_cli_option *o = common_options; o->name; o++)
		man_option(f, o);
	if (d.start[doc_index("ENVIRONMENT")]) {
		fputs(".SH ENVIRONMENT\n", f);
		doc_section(f, &d, "ENVIRONMENT");
	}
	if (d.start[doc_index("FILES")]) {
		fputs(".SH FILES\n", f);
		doc_section(f, &d, "FILES");
	}
	man_exit_status(f, &d);
	if (d.start[doc_index("EXAMPLES")]) {
		fputs(".SH EXAMPLES\n", f);
		doc_section(f, &d, "EXAMPLES");
	}
	man_see_also(f, &d, name, row->flags & NF_CMD_TIMELINE);
	close_out(f, path);
	free(d.text);
}

static void man_main(const char *dir, const char *docdir, const char *version, const char *date)
{
	char path[4096];
	struct doc d;
	FILE *f;

	snprintf(path, sizeof(path), "%s/nftrace.txt", docdir);
	doc_read(&d, path, true);
	snprintf(path, sizeof(path), "%s/nftrace.1", dir);
	f = open_out(path);
	fputs(".\\\" Generated by nftrace-gendoc from the command table (cli/nftrace.c) and cli/doc/nftrace.txt;"
	      " do not edit.\n", f);
	roff_title(f, "nftrace", 1, version, date);
	fputs(".SH NAME\nnftrace \\- capture and analyse GPU native fence logs\n", f);
	fputs(".SH SYNOPSIS\n.nf\n\\fBnftrace\\fR [\\-\\-version] [\\-\\-help] \\fICOMMAND\\fR [\\fIARGS\\fR]\n.fi\n", f);
	fputs(".SH DESCRIPTION\n", f);
	doc_section(f, &d, "DESCRIPTION");
	fputs(".SH COMMANDS\n", f);
	for (size_t i = 0; i < nf_n_commands; i++) {
		fputs(".TP\n\\fBnftrace\\-", f);
		roff_str(f, nf_commands[i].name);
		fputs("\\fR(1)\n", f);
		roff_fill(f, nf_commands[i].summary, strlen(nf_commands[i].summary));
	}
	fputs(".PP\nEvery command takes \\fB\\-h\\fR/\\fB\\-\\-help\\fR and \\fB\\-\\-version\\fR.\n"
	      "Options may come before or after the arguments, as \\fB\\-\\-name value\\fR or\n"
	      "\\fB\\-\\-name=value\\fR; a long name may be shortened while it is unambiguous;\n"
	      "\\fB\\-\\-\\fR ends the options.\n", f);
	if (d.start[doc_index("ENVIRONMENT")]) {
		fputs(".SH ENVIRONMENT\n", f);
		doc_section(f, &d, "ENVIRONMENT");
	}
	if (d.start[doc_index("FILES")]) {
		fputs(".SH FILES\n", f);
		doc_section(f, &d, "FILES");
	}
	man_exit_status(f, &d);
	if (d.start[doc_index("EXAMPLES")]) {
		fputs(".SH EXAMPLES\n", f);
		doc_section(f, &d, "EXAMPLES");
	}
	man_see_also(f, &d, "nftrace", true);
	close_out(f, path);
	free(d.text);
}

/* ---- nftrace-timeline(5) from the schema files ----------------------------------- */

/* Whether the line p..e (a comment's text, after "-- ") is a group title "---- Title ----". */
static bool sql_group_title(const char *p, const char *e, const char **ts, const char **te)
{
	if (e - p < 10 || strncmp(p, "---- ", 5) || strncmp(e - 5, " ----", 5))
		return false;
	*ts = p + 5;
	*te = e - 5;
	return true;
}

/* The comment lines from p (each "--", "-- text"), as plain text into a new buffer. */
static char *sql_comment_text(const char *p, const char *end, const char **after)
{
	size_t cap = (size_t)(end - p) + 1, n = 0;
	char *out = malloc(cap);

	if (!out)
		die("out of memory");
	while (p < end && !strncmp(p, "--", 2)) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end, *t = p + 2;

		if (t < e && *t == ' ')
			t++;
		memcpy(out + n, t, (size_t)(e - t));
		n += (size_t)(e - t);
		out[n++] = '\n';
		p = nl ? nl + 1 : end;
	}
	out[n] = '\0';
	*after = p;
	return out;
}

/* A column line of CREATE TABLE: "  name TYPE ..., -- comment". */
static void sql_column(FILE *f, const char *p, const char *e, const char *file, int line)
{
	const char *t = p, *name, *cm = NULL;
	size_t nlen;

	while (t < e && *t == ' ')
		t++;
	for (const char *q = t; q + 1 < e; q++)
		if (q[0] == '-' && q[1] == '-') {
			cm = q + 2;
			break;
		}
	if (t + 2 <= e && !strncmp(t, "--", 2)) { /* the comment of the column above, continued */
		while (cm && cm < e && *cm == ' ')
			cm++;
		roff_fill(f, cm, (size_t)(e - cm));
		return;
	}
	if (!strncmp(t, "PRIMARY KEY", 11)) {
		fputs(".TP 18\n.I primary key\n", f);
		const char *q = cm ? cm - 2 : e;
		while (q > t && (q[-1] == ' ' || q[-1] == ','))
			q--;
		roff_line(f, t + 11, (size_t)(q - t - 11));
		return;
	}
	name = t;
	while (t < e && (*t == '_' || (*t >= 'a' && *t <= 'z') || (*t >= 'A' && *t <= 'Z') || (*t >= '0' && *t <= '9')))
		t++;
	nlen = (size_t)(t - name);
	if (!nlen)
		die("%s:%d: cannot read this column line", file, line);
	fputs(".TP 18\n.B ", f);
	roff_text(f, name, nlen, false);
	fputc('\n', f);
	while (t < e && *t == ' ')
		t++;
	const char *ty = t, *tyend = cm ? cm - 2 : e;

	while (tyend > ty && (tyend[-1] == ' ' || tyend[-1] == ','))
		tyend--;
	if (tyend > ty) {
		fputs("\\fI", f);
		roff_text(f, ty, (size_t)(tyend - ty), false);
		fputs("\\fR", f);
		fputs(cm ? " \\(em\n" : "\n", f);
	}
	if (cm) {
		while (cm < e && *cm == ' ')
			cm++;
		roff_fill(f, cm, (size_t)(e - cm));
	}
}

/* One schema file: its leading comment, then its groups, tables, views and other statements. */
static void man5_file(FILE *f, const char *path, const char *label, bool first)
{
	char *sql = slurp(path, true);
	const char *p = sql, *end = sql + strlen(sql), *name = strrchr(path, '/');
	bool intro = true;
	int line = 1;

	name = name ? name + 1 : path;
	if (!first) {
		fputs(".SH ", f);
		roff_str(f, label);
		fputc('\n', f);
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end;

		if (p == e) {
			p = nl ? nl + 1 : end;
			line++;
			continue;
		}
		if (!strncmp(p, "--", 2)) {
			const char *after, *ts, *te, *body;
			char *text = sql_comment_text(p, end, &after);
			const char *tnl = strchr(text, '\n');

			for (const char *q = p; q < after; q++)
				line += *q == '\n';
			body = text;
			if (sql_group_title(text, tnl, &ts, &te)) {
				fputs(".SH ", f);
				for (const char *q = ts; q < te; q++)
					roff_text(f, q, 1, false);
				fputc('\n', f);
				body = tnl + 1;
				intro = false;
			}
			bool statement = after < end && !strncmp(after, "CREATE ", 7);

			if (statement) {
				/* its description: under its heading, written with the statement below */
				const char *se = memchr(after, '\n', (size_t)(end - after));
				const char *kind = after + 7, *nm;
				size_t klen, nmlen;

				se = se ? se : end;
				if (!strncmp(kind, "TABLE ", 6) || !strncmp(kind, "VIEW ", 5)) {
					if (intro && first) {
						fputs(".SH TABLES\n", f);
						intro = false;
					}
					klen = !strncmp(kind, "TABLE ", 6) ? 5 : 4;
					nm = kind + klen + 1;
					nmlen = strcspn(nm, " (\n");
					fputs(".SS ", f);
					roff_text(f, nm, nmlen, false);
					fputs(klen == 4 ? " (view)\n" : "\n", f);
				} else {
					/* an index or trigger: a heading of its own, like a table's */
					klen = strcspn(kind, " ");
					nm = kind + klen + 1;
					nmlen = strcspn(nm, " (\n");
					fputs(".SS ", f);
					roff_text(f, nm, nmlen, false);
					fputs(" (", f);
					for (size_t k = 0; k < klen; k++)
						fputc(kind[k] >= 'A' && kind[k] <= 'Z' ? kind[k] - 'A' + 'a' : kind[k], f);
					fputs(")\n", f);
				}
			}
			roff_block(f, body, body + strlen(body));
			free(text);
			p = after;
			continue;
		}
		if (!strncmp(p, "CREATE TABLE ", 13)) {
			/* the columns, up to the closing parenthesis */
			p = nl ? nl + 1 : end;
			line++;
			fputs(".PP\n.RS 2\n.PD 0\n", f);
			while (p < end && *p != ')') {
				const char *cnl = memchr(p, '\n', (size_t)(end - p)), *ce = cnl ? cnl : end;

				if (ce > p)
					sql_column(f, p, ce, name, line);
				p = cnl ? cnl + 1 : end;
				line++;
			}
			fputs(".PD\n.RE\n", f);
			continue;
		}
		/* any other statement line (a view's body, a trigger): not shown */
		p = nl ? nl + 1 : end;
		line++;
	}
	free(sql);
}

static void man_timeline(const char *out, const char *version, const char *date, int n, char **files)
{
	FILE *f = open_out(out);

	fputs(".\\\" Generated by nftrace-gendoc from the comments of schemas/timeline.sql, timeline-views.sql\n"
	      ".\\\" and analysis.sql; do not edit.\n", f);
	roff_title(f, "nftrace-timeline", 5, version, date);
	fputs(".SH NAME\nnftrace\\-timeline \\- the SQLite timeline of an nftrace session\n"
	      "(\\fIDIR\\fR/.timeline.db)\n"
	      ".SH SYNOPSIS\n.nf\n\\fBnftrace query\\fR \\fIDIR\\fR \\(dqselect ... from fence_ops\\(dq\n"
	      "\\fBsqlite3\\fR \\fIDIR\\fR/.timeline.db\n.fi\n.SH DESCRIPTION\n", f);
	for (int i = 0; i < n; i++) {
		const char *base = strrchr(files[i], '/');

		base = base ? base + 1 : files[i];
		man5_file(f, files[i], !strcmp(base, "timeline-views.sql") ? "INDEXES AND VIEWS"
				       : !strcmp(base, "analysis.sql") ? "ANALYSIS TABLES" : base, i == 0);
	}
	fputs(".SH SEE ALSO\n\\fBnftrace\\fR(1), \\fBnftrace\\-query\\fR(1), \\fBsqlite3\\fR(1)\n", f);
	close_out(f, out);
}

/* ---- bash completion ------------------------------------------------------------- */

/* s as a word inside double quotes of a shell script (the table's words need no quoting: checked). */
static void sh_word(FILE *f, const char *s)
{
	for (const char *p = s; *p; p++) {
		if (!sh_safe(*p))
			die("'%s': a character the completion scripts do not quote", s);
		fputc(*p, f);
	}
}

/* The bash words that complete a value of kind k (the value being $cur). */
static void bash_complete(FILE *f, enum nf_cli_complete k, const char *exts, const char *values)
{
	if (values) {
		fputs("COMPREPLY=($(compgen -W \"", f);
		put_values(f, values, " ", false);
		fputs("\" -- \"$cur\"))", f);
		return;
	}
	switch (k) {
	case NF_COMPLETE_NONE: fputs(":", f); break;
	case NF_COMPLETE_FILE:
		fputs("_nftrace_files \"$cur\" \"", f);
		if (exts)
			sh_word(f, exts);
		fputs("\"", f);
		break;
	case NF_COMPLETE_DIR: fputs("_nftrace_dirs \"$cur\"", f); break;
	case NF_COMPLETE_SESSION: fputs("_nftrace_sessions \"$cur\"", f); break;
	case NF_COMPLETE_COMMAND: fputs("COMPREPLY=($(compgen -W \"$_nftrace_commands\" -- \"$cur\"))", f); break;
	case NF_COMPLETE_PROGRAM: fputs("COMPREPLY=($(compgen -c -- \"$cur\"))", f); break;
	}
}

static void gen_bash(const char *out)
{
	FILE *f = open_out(out);

	fputs("# bash completion for nftrace: commands, options, option values and session\n"
	      "# directories. Generated by nftrace-gendoc from the command table (cli/nftrace.c,\n"
	      "# cli/cmd_*.c); do not edit.\n\n", f);
	fputs("_nftrace_commands=\"", f);
	for (size_t i = 0; i < nf_n_commands; i++) {
		fputs(i ? " " : "", f);
		sh_word(f, nf_commands[i].name);
	}
	fputs("\"\n\n", f);
	fputs("# Directories whose name begins with $1; when some of them are sessions (they hold\n"
	      "# metadata, or capture.etl) only those, else all (to go down into).\n"
	      "_nftrace_sessions()\n{\n"
	      "    local d\n    local -a dirs=() sessions=()\n"
	      "    while IFS= read -r d; do\n"
	      "        dirs+=(\"$d\")\n"
	      "        [[ -f $d/metadata || -f $d/capture.etl ]] && sessions+=(\"$d\")\n"
	      "    done < <(compgen -d -- \"$1\")\n"
	      "    if ((${#sessions[@]})); then COMPREPLY=(\"${sessions[@]}\"); else COMPREPLY=(\"${dirs[@]}\"); fi\n"
	      "    compopt -o filenames 2>/dev/null\n}\n\n"
	      "_nftrace_dirs()\n{\n"
	      "    local d\n    COMPREPLY=()\n"
	      "    while IFS= read -r d; do COMPREPLY+=(\"$d\"); done < <(compgen -d -- \"$1\")\n"
	      "    compopt -o filenames 2>/dev/null\n}\n\n"
	      "# Files whose name begins with $1 and whose extension is one of $2 (\"a|b\"; empty:\n"
	      "# any), and directories.\n"
	      "_nftrace_files()\n{\n"
	      "    local x\n    COMPREPLY=()\n"
	      "    while IFS= read -r x; do\n"
	      "        if [[ -d $x || -z $2 || \"|$2|\" == *\"|${x##*.}|\"* ]]; then COMPREPLY+=(\"$x\"); fi\n"
	      "    done < <(compgen -f -- \"$1\")\n"
	      "    compopt -o filenames 2>/dev/null\n}\n\n", f);
	fputs("_nftrace()\n{\n"
	      "    local cur=${COMP_WORDS[COMP_CWORD]} prev= i cmd= at=0\n"
	      "    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD-1]}\n"
	      "    # --name=value: bash splits the word at '='\n"
	      "    if [[ $cur == = ]]; then\n        cur=\n"
	      "    elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then\n"
	      "        prev=${COMP_WORDS[COMP_CWORD-2]}\n    fi\n"
	      "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
	      "        if [[ ${COMP_WORDS[i]} != -* ]]; then cmd=${COMP_WORDS[i]}; at=$i; break; fi\n"
	      "    done\n"
	      "    if [[ -z $cmd ]]; then\n"
	      "        COMPREPLY=($(compgen -W \"$_nftrace_commands --help --version\" -- \"$cur\"))\n"
	      "        return\n    fi\n"
	      "    case $cmd in\n", f);
	for (size_t i = 0; i < nf_n_commands; i++) {
		const struct nf_command *row = &nf_commands[i];
		const struct nf_cli_cmd *cmd = row->cmd;

		fputs("    ", f);
		sh_word(f, row->name);
		fputs(")\n", f);
		if (row->flags & NF_CMD_PROGRAM)
			fputs("        # after --: a program, then its arguments\n"
			      "        for ((i = at + 1; i < COMP_CWORD; i++)); do\n"
			      "            if [[ ${COMP_WORDS[i]} == -- ]]; then\n"
			      "                if ((i == COMP_CWORD - 1)); then COMPREPLY=($(compgen -c -- \"$cur\"));\n"
			      "                else _nftrace_files \"$cur\" \"\"; fi\n"
			      "                return\n            fi\n        done\n", f);
		fputs("        case $prev in\n", f);
		for (const struct nf_cli_option *o = cmd->options; o->name; o++) {
			if (!o->arg)
				continue;
			fputs("        ", f);
			if (o->short_name)
				fprintf(f, "-%c|", o->short_name);
			fputs("--", f);
			sh_word(f, o->name);
			fputs(") ", f);
			bash_complete(f, o->complete, o->exts, o->values);
			fputs("; return ;;\n", f);
		}
		fputs("        esac\n        if [[ $cur == -* ]]; then\n            COMPREPLY=($(compgen -W \"", f);
		for (const struct nf_cli_option *o = cmd->options; o->name; o++) {
			fputs("--", f);
			sh_word(f, o->name);
			fputc(' ', f);
		}
		fputs("--help --version\" -- \"$cur\"))\n            return\n        fi\n        ", f);
		if (cmd->max_args == 0)
			fputs(":", f);
		else
			bash_complete(f, cmd->args_complete, cmd->args_exts, NULL);
		fputs("\n        ;;\n", f);
	}
	fputs("    esac\n}\ncomplete -F _nftrace nftrace\n", f);
	close_out(f, out);
}

/* ---- zsh completion --------------------------------------------------------------- */

/*
 * text on one line inside single quotes: a description in _arguments'
 * brackets (bracket escaped) or a _describe entry (colon escaped).
 */
static void zsh_desc(FILE *f, const char *text, bool brackets)
{
	for (const char *p = text; *p; p++) {
		if (*p == '\'')
			fputs("'\\''", f);
		else if (*p == '\n')
			fputc(' ', f);
		else if (*p == '\\' || (brackets ? *p == '[' || *p == ']' : *p == ':'))
			fprintf(f, "\\%c", *p);
		else
			fputc(*p, f);
	}
}

static void zsh_action(FILE *f, enum nf_cli_complete k, const char *exts, const char *values)
{
	if (values) {
		fputs("(", f);
		put_values(f, values, " ", false);
		fputs(")", f);
		return;
	}
	switch (k) {
	case NF_COMPLETE_NONE: fputs(" ", f); break;
	case NF_COMPLETE_FILE:
		if (exts) {
			fputs("_files -g \"*.(", f);
			sh_word(f, exts);
			fputs(")\"", f);
		} else {
			fputs("_files", f);
		}
		break;
	case NF_COMPLETE_DIR:
	case NF_COMPLETE_SESSION: fputs("_files -/", f); break;
	case NF_COMPLETE_COMMAND: fputs("_nftrace_commands", f); break;
	case NF_COMPLETE_PROGRAM: fputs("_command_names -e", f); break;
	}
}

static void gen_zsh(const char *out)
{
	FILE *f = open_out(out);

	fputs("#compdef nftrace\n# zsh completion for nftrace. Generated by nftrace-gendoc from the command\n"
	      "# table (cli/nftrace.c, cli/cmd_*.c); do not edit.\n\n"
	      "_nftrace_commands()\n{\n    local -a cmds\n    cmds=(\n", f);
	for (size_t i = 0; i < nf_n_commands; i++) {
		fputs("        '", f);
		sh_word(f, nf_commands[i].name);
		fputc(':', f);
		zsh_desc(f, nf_commands[i].summary, false);
		fputs("'\n", f);
	}
	fputs("    )\n    _describe -t commands 'nftrace command' cmds\n}\n\n", f);
	for (size_t i = 0; i < nf_n_commands; i++) {
		const struct nf_command *row = &nf_commands[i];
		const struct nf_cli_cmd *cmd = row->cmd;

		fputs("_nftrace_", f);
		for (const char *p = row->name; *p; p++)
			fputc(*p == '-' ? '_' : *p, f);
		fputs("()\n{\n    _arguments -S \\\n", f);
		for (const struct nf_cli_option *o = cmd->options; o->name; o++) {
			bool rep = o->flags & NF_OPT_REPEAT;

			fputs("        ", f);
			if (o->short_name) {
				fprintf(f, "%s'(-%c --", rep ? "'*'" : "", o->short_name);
				sh_word(f, o->name);
				fprintf(f, ")'{-%c%s,--", o->short_name, o->arg ? "+" : "");
				sh_word(f, o->name);
				fprintf(f, "%s}'[", o->arg ? "=" : "");
			} else {
				fprintf(f, "'%s--", rep ? "*" : "");
				sh_word(f, o->name);
				fprintf(f, "%s[", o->arg ? "=" : "");
			}
			zsh_desc(f, o->help, true);
			fputs("]", f);
			if (o->arg) {
				fputc(':', f);
				zsh_desc(f, o->arg, false);
				fputc(':', f);
				zsh_action(f, o->complete, o->exts, o->values);
			}
			fputs("' \\\n", f);
		}
		fputs("        '(- *)'{-h,--help}'[show the usage and options]' \\\n"
		      "        '(- *)--version[show nftrace'\\''s version]'", f);
		if (cmd->max_args != 0) {
			fputs(" \\\n        '", f);
			fputs(cmd->max_args == 1 ? "1:" : "*:", f);
			zsh_desc(f, cmd->args, false);
			fputc(':', f);
			zsh_action(f, cmd->args_complete, cmd->args_exts, NULL);
			fputc('\'', f);
		}
		fputs("\n}\n\n", f);
	}
	fputs("_nftrace()\n{\n    local curcontext=$curcontext state line\n    typeset -A opt_args\n"
	      "    _arguments -C \\\n        '(- *)'{-h,--help}'[show the commands]' \\\n"
	      "        '(- *)--version[show nftrace'\\''s version]' \\\n"
	      "        '1:command:_nftrace_commands' \\\n        '*::argument:->args'\n"
	      "    case $state in\n    args)\n        case $words[1] in\n", f);
	for (size_t i = 0; i < nf_n_commands; i++) {
		fputs("        ", f);
		sh_word(f, nf_commands[i].name);
		fputs(") _nftrace_", f);
		for (const char *p = nf_commands[i].name; *p; p++)
			fputc(*p == '-' ? '_' : *p, f);
		fputs(" ;;\n", f);
	}
	fputs("        esac\n        ;;\n    esac\n}\n\n_nftrace \"$@\"\n", f);
	close_out(f, out);
}

/* ---- list ------------------------------------------------------------------------ */

static void list(void)
{
	for (size_t i = 0; i < nf_n_commands; i++) {
		const struct nf_cli_cmd *cmd = nf_commands[i].cmd;

		printf("%s\n", nf_commands[i].name);
		for (const struct nf_cli_option *o = cmd->options; o->name; o++) {
			printf("%s --%s", nf_commands[i].name, o->name);
			if (o->short_name)
				printf(" -%c", o->short_name);
			if (o->arg)
				printf(" :%s", o->arg);
			for (const char *p = o->values; p && *p; p++)
				if (p == o->values || p[-1] == '|')
					printf(" =%.*s", (int)strcspn(p, "|"), p);
			putchar('\n');
		}
	}
}

/* Every DOCDIR/NAME.txt is nftrace.txt or a command's (the build makes a page of each). */
static void check_docdir(const char *docdir)
{
	DIR *d = opendir(docdir);
	struct dirent *de;

	if (!d)
		die("%s: %s", docdir, strerror(errno));
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		char name[256];

		if (n < 5 || strcmp(de->d_name + n - 4, ".txt"))
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(n - 4), de->d_name);
		if (strcmp(name, "nftrace") && !nf_cli_find(name))
			die("%s/%s: no command '%s' in the table (cli/nftrace.c)", docdir, de->d_name, name);
	}
	closedir(d);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "list")) {
		list();
		return 0;
	}
	if (argc == 6 && !strcmp(argv[1], "man1")) {
		check_docdir(argv[3]);
		man_main(argv[2], argv[3], argv[4], argv[5]);
		for (size_t i = 0; i < nf_n_commands; i++)
			man_command(&nf_commands[i], argv[2], argv[3], argv[4], argv[5]);
		return 0;
	}
	if (argc >= 6 && !strcmp(argv[1], "man5")) {
		man_timeline(argv[2], argv[3], argv[4], argc - 5, argv + 5);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "bash")) {
		gen_bash(argv[2]);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "zsh")) {
		gen_zsh(argv[2]);
		return 0;
	}
	fprintf(stderr, "usage: %s man1 OUTDIR DOCDIR VERSION DATE | man5 OUT VERSION DATE FILE.sql... | "
			"bash OUT | zsh OUT | list\n", prog);
	return 2;
}
