#!/usr/bin/env bash
# check-signal-safe.sh OBJECT...: fails when an object file calls a function
# outside the async-signal-safe list below (signal-safety(7)).
#
# It guards capture/ctf_committer.c: the CTF writer's committer process runs
# in the child of a fork() from a program that may have other threads, where
# malloc, stdio or any lock can deadlock. The list holds what the committer
# needs, all of it async-signal-safe; add a name only if signal-safety(7)
# lists it (sync_file_range is a bare Linux system call). Symbols the
# compiler and the sanitizers insert (__asan_*, __ubsan_*, __tsan_*,
# __sanitizer_*, __stack_chk_fail, __errno_location) are allowed too.
set -euo pipefail
allowed=(read send write open open64 fcntl fcntl64 ftruncate ftruncate64 fsync close
	sigaction memset memcpy _exit sync_file_range __errno_location __stack_chk_fail)
declare -A ok
for s in "${allowed[@]}"; do ok[$s]=1; done
[ $# -gt 0 ] || { echo "usage: $0 OBJECT..." >&2; exit 2; }
bad=0
for obj in "$@"; do
	[ -f "$obj" ] || { echo "$obj: no such object file" >&2; exit 2; }
	# Undefined symbols (what the object calls), without symbol versions.
	while read -r sym; do
		sym=${sym%%@*}
		case "$sym" in
		__asan_* | __ubsan_* | __tsan_* | __sanitizer_* | __lsan_* | _GLOBAL_OFFSET_TABLE_) continue ;;
		esac
		if [ -z "${ok[$sym]:-}" ]; then
			echo "$obj: calls $sym, which is not async-signal-safe (or not on the list in $0)" >&2
			bad=1
		fi
	done < <(nm -u "$obj" | awk '{ print $NF }')
done
[ "$bad" = 0 ] && echo "check-signal-safe: $# object file(s) call only async-signal-safe functions"
exit "$bad"
