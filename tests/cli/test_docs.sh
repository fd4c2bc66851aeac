#!/usr/bin/env bash
# test_docs.sh BUILD_DIR: the man pages and shell completions the build
# generated from the command table (cli/gendoc.c) render cleanly and cover
# the table, so they cannot drift from what the parser takes:
#   - every page renders without a warning (groff -ww, mandoc -T lint, man -l);
#   - every command of the table (nftrace-gendoc list) has its page, is listed
#     in nftrace(1) and in both completions; every option of a command is in
#     its page, its --help, its case of the bash completion and its zsh
#     function, every --option VALUE it takes beside the option;
#   - every --option a command's usage lines name is one it takes;
#   - every table and column of schemas/*.sql is in nftrace-timeline(5);
#   - bash, with the completion loaded, completes commands, options, option
#     values and session directories (COMPREPLY for typed words).
# Prints what is wrong and exits 1.
set -uo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
doc=$build/doc
nf=$build/nftrace
gendoc=$build/nftrace-gendoc
bad=0
fail() { echo "test_docs: $*" >&2; bad=1; }
for t in groff mandoc man bash zsh; do
  command -v $t >/dev/null || { echo "test_docs: $t is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
done

pages=("$doc"/man1/*.1 "$doc"/man5/nftrace-timeline.5)
((${#pages[@]} >= 3)) || { fail "no pages under $doc"; exit 1; }
for p in "${pages[@]}"; do
  out=$(groff -ww -man -Tutf8 -z "$p" 2>&1) || fail "groff failed on $p"
  [[ -z $out ]] || fail "groff -ww on $p: $out"
  out=$(mandoc -T lint "$p" 2>&1)
  [[ -z $out ]] || fail "mandoc -T lint on $p: $out"
  out=$(MANWIDTH=80 man -l "$p" 2>&1 >/dev/null)
  [[ -z $out ]] || fail "man -l $p: $out"
  [[ $(MANWIDTH=80 man -l "$p" 2>/dev/null | wc -l) -gt 20 ]] || fail "man -l $p renders less than 20 lines"
done

bash_comp=$doc/completion/nftrace zsh_comp=$doc/completion/_nftrace
[[ -s $bash_comp && -s $zsh_comp ]] || { fail "completions missing under $doc/completion"; exit 1; }
bash -n "$bash_comp" || fail "$bash_comp: bash syntax error"
zsh -n "$zsh_comp" || fail "$zsh_comp: zsh syntax error"

list=$("$gendoc" list) || { fail "nftrace-gendoc list failed"; exit 1; }
commands=$(grep -v ' ' <<<"$list")
[[ $(wc -l <<<"$commands") -ge 8 ]] || fail "the table lists only $(wc -l <<<"$commands") commands"
# The bash completion's case for command $1 (from "    NAME)" to its ";;" at 8 spaces).
bash_case() { awk -v c="    $1)" '$0 == c { on = 1; next } on && /^        ;;$/ { exit } on' "$bash_comp"; }
zsh_func() { local f=${1//-/_}; awk -v c="_nftrace_$f()" '$0 == c { on = 1; next } on && /^}$/ { exit } on' "$zsh_comp"; }
for c in $commands; do
  page=$doc/man1/nftrace-$c.1
  [[ -f $page ]] || { fail "$c: no page nftrace-$c.1"; continue; }
  grep -q "^\\\\fBnftrace\\\\-${c//-/\\\\-}\\\\fR(1)\$" "$doc/man1/nftrace.1" || fail "$c is not listed in nftrace(1)"
  grep -q "^_nftrace_commands=\".*\\b$c\\b" "$bash_comp" || fail "$c is not in the bash completion's commands"
  grep -q "^        '$c:" "$zsh_comp" || fail "$c is not in the zsh completion's commands"
  [[ -n $(bash_case "$c") ]] || fail "$c has no case in the bash completion"
  [[ -n $(zsh_func "$c") ]] || fail "$c has no function in the zsh completion"
  help=$("$nf" "$c" --help) || fail "nftrace $c --help failed"
  # every --option of the usage lines is one the command takes
  usage=$(sed -n '1,/^$/p' <<<"$help")
  for o in $(grep -oE -- '--[a-z][a-z-]*' <<<"$usage" | sort -u); do
    grep -qx "$c $o.*" <<<"$(grep "^$c " <<<"$list" | cut -d' ' -f1,2)" ||
      [[ $o == --help || $o == --version ]] || fail "$c: its usage names $o, which it does not take"
  done
done
while read -r c o rest; do
  [[ -n $o ]] || continue
  page=$doc/man1/nftrace-$c.1
  name=${o#--}
  esc=$(sed 's/-/\\-/g' <<<"$name")
  grep -qF -- "\\fB\\-\\-$esc\\fR" "$page" || fail "$c $o is not in nftrace-$c.1"
  "$nf" "$c" --help | grep -qE -- "(^|[ ,])$o( |$)" || fail "$c $o is not in nftrace $c --help"
  bash_case "$c" | grep -qE -- "(^| |\"|\\|)$o( |\"|\\))" || fail "$c $o is not in the bash completion's $c case"
  zsh_func "$c" | grep -qE -- "(\\{|'|\\*|,)$o(=|\\[|\\})" || fail "$c $o is not in the zsh completion's $c function"
  takes_value=0
  [[ " $rest " == *" :"* ]] && takes_value=1
  for w in $rest; do
    case $w in
      =*) v=${w#=}
          bash_case "$c" | grep -E -- "(\\||^ *)$o\\)" | grep -qw -- "$v" || fail "$c $o: value $v is not completed by bash"
          zsh_func "$c" | grep -E -- "$o" | grep -qE -- "[( ]$v[ )]" || fail "$c $o: value $v is not completed by zsh"
          grep -qF -- "$(sed 's/-/\\-/g' <<<"$v")" "$page" || fail "$c $o: value $v is not in nftrace-$c.1" ;;
      -?) grep -qF -- "\\fB\\-${w#-}\\fR, \\fB\\-\\-$esc\\fR" "$page" || fail "$c $w is not in nftrace-$c.1"
          "$nf" "$c" --help | grep -qE -- "^  $w, $o" || fail "$c $w is not in nftrace $c --help"
          ((takes_value == 0)) || bash_case "$c" | grep -qE -- "^        $w\\|$o\\)" ||
            fail "$c $w is not in the bash completion's $c case" ;;
    esac
  done
done <<<"$list"

# nftrace-timeline(5): every table and view, and every column of every table.
man5=$doc/man5/nftrace-timeline.5
for sql in "$src"/schemas/timeline.sql "$src"/schemas/timeline-views.sql "$src"/schemas/analysis.sql; do
  for t in $(sed -nE 's/^CREATE (TABLE|VIEW) ([a-z_0-9]+).*/\2/p' "$sql"); do
    grep -qE "^\\.SS $t( \\(view\\))?\$" "$man5" || fail "nftrace-timeline(5) has no section for $t ($sql)"
  done
  while read -r col; do
    grep -qx ".B $col" "$man5" || fail "nftrace-timeline(5) lacks column $col ($sql)"
  done < <(awk '/^CREATE TABLE/ { on = 1; next } on && /^\)/ { on = 0 } on && /^  [a-z_]/ { print $1 }' "$sql" | sort -u)
done

# Behaviour: COMPREPLY of bash with the completion loaded, for typed words.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nftrace-test-docs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/out/nosession" "$tmp/outside"
"$nf" record -o "$tmp/out/s1" "$src/samples/log-buffer-example.nfs" >/dev/null || fail "record failed"
"$nf" record -o "$tmp/out/s2" "$src/samples/overrun.nfs" >/dev/null || fail "record failed"
touch "$tmp/a.nfs" "$tmp/b.txt" "$tmp/q.sql"
complete_words() { # the words typed, the last one being completed: prints COMPREPLY one per line, sorted
  (cd "$tmp" && bash --norc --noprofile -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1));
    _nftrace; printf "%s\n" "${COMPREPLY[@]}"' _ "$bash_comp" "$@" | sort | tr '\n' ' ' | sed 's/ $//')
}
expect() { # want, then the words
  local want=$1; shift
  local got
  got=$(complete_words "$@")
  [[ $got == "$want" ]] || fail "completing '$*': got '$got', want '$want'"
}
expect "report" nftrace rep
expect "check critical-path" nftrace c
expect "--format" nftrace export --fo
expect "--theme --thread --threads" nftrace report --th
expect "chrome-json perfetto" nftrace export out/s1 --format ""
expect "perfetto" nftrace export out/s1 --format = per
expect "dark light" nftrace report out/s1 -o x.png --theme ""
expect "lost queues stalls" nftrace query out/s1 --report ""
expect "out/s1 out/s2" nftrace report out/
expect "out/s1 out/s2" nftrace critical-path --json out/s
expect "outside" nftrace report outs
expect "a.nfs out outside" nftrace record -o x ""
expect "out outside q.sql" nftrace query -f ""
expect "$(tr '\n' ' ' <<<"$(sort <<<"$commands")" | sed 's/ $//')" nftrace help ""
expect "--help --version" nftrace --
got=$(complete_words nftrace record -o x -- bas)
[[ " $got " == *" bash "* ]] || fail "completing a program after 'record -o x --': got '$got'"

((bad == 0)) && echo "test_docs: ${#pages[@]} pages render cleanly; $(wc -l <<<"$commands") commands and $(grep -c ' ' <<<"$list") options in the pages, --help and completions"
exit $bad
