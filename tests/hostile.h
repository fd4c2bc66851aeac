/*
 * The hostile-string set: every kind of string a capture, a session, a
 * timeline, a server or the command line may hand nftrace, run through every
 * escaping helper (tests/core/test_escape.c) and every output format
 * (tests/cli/test_hostile.c, whose fixture session carries these as queue,
 * fence, thread, ring, marker and node names).
 */
#ifndef NF_TEST_HOSTILE_H
#define NF_TEST_HOSTILE_H

struct nf_hostile {
	const char *what;
	const char *s;
	int valid_utf8; /* the string is well-formed UTF-8 (a lossless helper keeps it whole) */
};

static const struct nf_hostile nf_hostile_set[] = {
	{ "C0 controls", "a\x01" "b\x1f" "c\x07", 1 },
	{ "ESC CSI", "\x1b[31mred\x1b[0m\x1b[2J", 1 },
	{ "ESC OSC title and link", "\x1b]0;pwned\x07\x1b]8;;http://x/\x1b\\link\x1b]8;;\x1b\\", 1 },
	{ "CR", "abc\rXYZ", 1 },
	{ "BS", "abc\b\b\bXYZ", 1 },
	{ "newline and tab", "two\nlines\tand a tab", 1 },
	{ "DEL", "a\x7f" "b", 1 },
	{ "C1 CSI", "\xc2\x9b" "31mC1\xc2\x9b" "0m", 1 },
	{ "C1 OSC", "\xc2\x9d" "0;t\xc2\x9c", 1 },
	{ "quotes and backticks", "\"double\" 'single' `tick` \\back\\", 1 },
	{ "script end", "</script><script>alert(1)</script>", 1 },
	{ "img onerror", "<img src=x onerror=alert(1)>", 1 },
	{ "comment end", "--><!--", 1 },
	{ "ampersand", "a&amp;b&#0;c", 1 },
	{ "U+2028 U+2029", "line\xe2\x80\xa8sep\xe2\x80\xa9para", 1 },
	{ "noncharacters U+FFFE U+FFFF", "x\xef\xbf\xbey\xef\xbf\xbfz", 1 },
	{ "noncharacters U+FDD0 U+FDEF", "\xef\xb7\x90-\xef\xb7\xaf", 1 },
	{ "noncharacter U+1FFFF", "\xf0\x9f\xbf\xbf!", 1 },
	{ "surrogates in UTF-8", "\xed\xa0\x80\xed\xbf\xbf", 0 },
	{ "overlong sequences", "\xc0\xaf\xe0\x80\xaf\xf0\x80\x80\xaf", 0 },
	{ "past U+10FFFF", "\xf4\x90\x80\x80\xf8\x88\x80\x80\x80", 0 },
	{ "invalid bytes", "\xff\xfe\x80", 0 },
	{ "truncated sequence", "ab\xe2\x82", 0 },
	{ "Latin-1", "caf\xe9 na\xefve", 0 },
	{ "shell metacharacters", "x;touch${IFS}PWNED;#$(id)`id`|&", 1 },
	{ "spaces and newline", "my dir\nname", 1 },
	{ "good UTF-8", "caf\xc3\xa9 \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80", 1 },
};

#define NF_HOSTILE_N (sizeof(nf_hostile_set) / sizeof(nf_hostile_set[0]))

#endif
