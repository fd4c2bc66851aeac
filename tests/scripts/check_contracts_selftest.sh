#!/usr/bin/env bash
# check_contracts_selftest.sh SCRIPT: scripts/check-contracts.sh on headers
# made here. It passes a header whose functions each state their contract
# (codes named, a group sharing one comment, a pointer's owner, a bool's
# meaning, a multi-line prototype, a macro body with braces), and fails, naming
# the file, the line and the function, on each way of falling short.
set -u
script=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nftrace-test-contracts.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
bad=0
fail() { echo "FAIL: $*"; bad=1; }

cat > "$tmp/good.h" <<'EOT'
#ifndef GOOD_H
#define GOOD_H
#ifdef __cplusplus
extern "C" {
#endif
struct nf_x { int a; /* a field(with parens) */ };
#define NF_MACRO(n) \
	enum { NF_M_##n = 1 };

/* Opens it. Returns 0, NF_ENOENT or NF_ENOMEM. */
NF_API int nf_x_open(const char *path,
		     struct nf_x **out);
/* Reads and writes: return 0 or a negative code. */
int nf_x_read(struct nf_x *x);
int nf_x_write(struct nf_x *x);
/* The name; borrowed, valid until nf_x_close. */
const char *nf_x_name(const struct nf_x *x);
/* True when x is open. */
bool nf_x_is_open(const struct nf_x *x);
/* Frees x; NULL is a no-op. */
void nf_x_close(struct nf_x *x);
int nf_x_count(struct nf_x *x); /* returns how many, 0 when none */
#ifdef __cplusplus
}
#endif
#endif
EOT
out=$(bash "$script" "$tmp/good.h" 2>&1) || fail "a documented header rejected: $out"

expect() { # NAME LINE-PATTERN HEADER-TEXT
  printf '%s\n' "$3" > "$tmp/bad.h"
  out=$(bash "$script" "$tmp/bad.h" 2>&1) && { fail "$1 accepted"; return; }
  grep -q "$2" <<<"$out" || fail "$1 not named: $out"
}
expect "an int with no codes" "bad.h:2: nf_y_emit: returns int; the comment does not say" \
  $'/* Appends an event. */\nint nf_y_emit(int ev);'
expect "an int with no comment" "bad.h:3: nf_y_emit: no comment" \
  $'/* Returns 0. */\n\nint nf_y_emit(int ev);'
expect "a group member after a struct" "bad.h:4: nf_y_b: no comment" \
  $'/* a: returns 0 or NF_EIO. */\nint nf_y_a(void);\nstruct nf_s { int x; };\nint nf_y_b(void);'
expect "a pointer with no owner" "bad.h:2: nf_y_get: returns a pointer" \
  $'/* Gets the thing. */\nstruct nf_s *nf_y_get(void);'
expect "a bool with no meaning" "bad.h:2: nf_y_ok: returns bool" \
  $'/* Checks the thing. */\nbool nf_y_ok(void);'
expect "a void with no comment" "bad.h:2: nf_y_free: no comment" \
  $'int nf_y_a(void); /* returns 0 or NF_EIO */\nvoid nf_y_free(void *p);'
exit $bad
