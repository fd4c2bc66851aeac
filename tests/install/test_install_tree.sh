#!/usr/bin/env bash
# test_install_tree.sh BUILD_DIR SOURCE_DIR: `cmake --install` gives a working
# nftrace that needs neither the source nor the build tree.
#   - installs into a temporary prefix, then moves the prefix elsewhere;
#   - the install manifest holds bin/nftrace, a man page per command of the
#     table, nftrace(1), nftrace-timeline(5), the bash and zsh completions,
#     the schema documents, the samples and libnfence;
#   - runs the demo's commands (record a bundled sample, report PNG and HTML,
#     query, info, check, export, import a trace-cmd sample) with the
#     installed binary from an empty directory, with the source and build
#     trees hidden (a private mount namespace with empty tmpfs over them,
#     when this runs as root) and under strace: no path into either tree is
#     opened;
#   - man finds the installed pages by name (MANPATH), and the installed bash
#     completion completes.
# Prints what is wrong and exits 1.
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nftrace-test-install-tree.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_install_tree.sh: $*" >&2; exit 1; }
case $tmp in "$src"/* | "$build"/*) fail "TMPDIR ($tmp) is inside the source or build tree";; esac

# cmake --install writes BUILD/install_manifest.txt: one install at a time.
exec 9> "$build/.nftrace-install.lock"
flock 9
cmake --install "$build" --prefix "$tmp/stage" > "$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; fail "cmake --install failed"; }
sed "s|^$tmp/stage/||" "$build/install_manifest.txt" | sort > "$tmp/manifest"
flock -u 9
mkdir -p "$tmp/moved"
mv "$tmp/stage" "$tmp/moved/prefix"
p=$tmp/moved/prefix
[[ -x $p/bin/nftrace ]] || fail "no bin/nftrace in the installed tree"

# What the manifest must hold (man pages: one per command of the table).
want=(bin/nftrace share/man/man1/nftrace.1 share/man/man5/nftrace-timeline.5
  share/bash-completion/completions/nftrace share/zsh/vendor-completions/_nftrace
  share/doc/nftrace/timeline.sql share/doc/nftrace/timeline-views.sql share/doc/nftrace/analysis.sql
  share/doc/nftrace/events.md share/doc/nftrace/scenario.md share/doc/nftrace/dxgkrnl.md
  share/nftrace/samples/log-buffer-example.nfs share/nftrace/samples/nfence-sample.c
  share/nftrace/samples/kernel/drm-sched.dat include/nftrace/nfence.h)
for c in $("$build/nftrace-gendoc" list | grep -v ' '); do
  want+=("share/man/man1/nftrace-$c.1")
done
for w in "${want[@]}"; do
  grep -qx "$w" "$tmp/manifest" || fail "the install manifest lacks $w"
  [[ -s $p/$w ]] || fail "$w is empty or missing in the installed tree"
done
grep -qE '^lib.*/libnfence\.so\.0$' "$tmp/manifest" || fail "the install manifest lacks libnfence.so.0"
while read -r f; do
  [[ -e $p/$f || -L $p/$f ]] || fail "$f is in the manifest but not installed"
done < "$tmp/manifest"

# The demo, with the installed binary only, from an empty directory.
mkdir -p "$tmp/work"
cat > "$tmp/demo.sh" <<'EOF'
set -e
p=$1
nf=$p/bin/nftrace
s=$p/share/nftrace/samples
"$nf" --version
"$nf" record -o sess "$s/log-buffer-example.nfs"
"$nf" report sess -o sess.png
"$nf" report sess -o sess.html
"$nf" query --csv sess "select count(*) from fence_ops"
"$nf" info sess > info.txt
"$nf" check sess > check.txt
"$nf" export sess -o sess.pftrace --format perfetto
"$nf" import "$s/kernel/drm-sched.dat" -o kern
"$nf" report kern -o kern.svg
"$nf" critical-path kern > cp.txt
"$nf" help record > help.txt
EOF
hidden=no
# (LeakSanitizer cannot run under strace: a sanitizer build's leaks are the other tests' to find.)
run=(bash "$tmp/demo.sh" "$p")
if command -v strace > /dev/null && strace -f -qq -o /dev/null true 2> /dev/null; then
  run=(strace -f -qq -e trace=%file -o "$tmp/strace.log" "${run[@]}")
else
  echo "test_install_tree.sh: strace cannot trace here; the opened paths are not checked"
fi
if [[ $(id -u) == 0 ]] && unshare --mount --propagation private true 2> /dev/null; then
  # The trees hidden: empty tmpfs over them, in a mount namespace of our own.
  hidden=yes
  (cd "$tmp/work" && env -i PATH=/usr/bin:/bin HOME="$tmp" LANG=C.UTF-8 ASAN_OPTIONS=detect_leaks=0 \
    unshare --mount --propagation private sh -c \
      'mount -t tmpfs nftrace-hidden "$2" && mount -t tmpfs nftrace-hidden "$1" && shift 2 && exec "$@"' \
      _ "$src" "$build" "${run[@]}") > "$tmp/demo.out" 2> "$tmp/demo.err" ||
    { cat "$tmp/demo.err" >&2; fail "the demo failed with the installed nftrace (source and build trees hidden)"; }
else
  echo "test_install_tree.sh: not root: the source and build trees stay visible (strace checks they are not read)"
  (cd "$tmp/work" && env -i PATH=/usr/bin:/bin HOME="$tmp" LANG=C.UTF-8 ASAN_OPTIONS=detect_leaks=0 "${run[@]}") \
    > "$tmp/demo.out" 2> "$tmp/demo.err" || { cat "$tmp/demo.err" >&2; fail "the demo failed with the installed nftrace"; }
fi
w=$tmp/work
grep -q "^nftrace " "$tmp/demo.out" || fail "nftrace --version printed no version: $(head -2 "$tmp/demo.out")"
grep -q "^recorded sess: 2 operations" "$tmp/demo.out" || fail "record said: $(grep recorded "$tmp/demo.out")"
grep -qx 2 "$tmp/demo.out" || fail "query did not count the 2 operations: $(cat "$tmp/demo.out")"
[[ $(head -c 8 "$w/sess.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "sess.png is not a PNG"
(($(stat -c %s "$w/sess.png") > 10000)) || fail "sess.png is only $(stat -c %s "$w/sess.png") bytes"
grep -q "<svg" "$w/kern.svg" && grep -q "gfx" "$w/kern.svg" || fail "kern.svg lacks the imported GPU ring"
grep -q "</html>" "$w/sess.html" || fail "sess.html is not a whole page"
[[ -s $w/sess.pftrace ]] || fail "the export wrote nothing"
grep -q "verdict: whole" "$w/check.txt" || fail "check: $(tail -1 "$w/check.txt")"
grep -q "^critical path of job" "$w/cp.txt" || fail "critical-path: $(head -1 "$w/cp.txt")"
grep -q "^usage: nftrace record" "$w/help.txt" || fail "help record: $(head -1 "$w/help.txt")"
if [[ -f $tmp/strace.log ]]; then
  # strace prints the paths as opened (relative ones from the work directory).
  if grep -F -e "\"$src/" -e "\"$src\"" -e "\"$build/" -e "\"$build\"" "$tmp/strace.log" > "$tmp/leaks"; then
    head -5 "$tmp/leaks" >&2
    fail "the installed nftrace opened paths in the source or build tree"
  fi
  grep -q "log-buffer-example.nfs" "$tmp/strace.log" || fail "strace saw no file being opened (the check would pass for nothing)"
fi

# man finds the pages by name; the completion completes.
out=$(MANPATH=$p/share/man MANWIDTH=80 man nftrace-record 2>&1) || fail "man nftrace-record: $out"
grep -q "record a scenario or a program" <<<"$out" || fail "man nftrace-record shows: $(head -3 <<<"$out")"
out=$(MANPATH=$p/share/man MANWIDTH=80 man 5 nftrace-timeline 2>&1) || fail "man 5 nftrace-timeline: $out"
grep -q "fence_ops" <<<"$out" || fail "man 5 nftrace-timeline lacks fence_ops"
out=$(bash --norc --noprofile -c 'source "$1"; COMP_WORDS=(nftrace rep); COMP_CWORD=1; _nftrace; echo "${COMPREPLY[*]}"' \
  _ "$p/share/bash-completion/completions/nftrace")
[[ $out == report ]] || fail "the installed bash completion completes 'nftrace rep' to '$out'"
echo "installed tree OK: $(wc -l < "$tmp/manifest") files; the demo ran from $p with the source and build trees hidden: $hidden"
