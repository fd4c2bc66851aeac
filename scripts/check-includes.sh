#!/usr/bin/env bash
# check-includes.sh [SOURCE_DIR]: the include graph between modules follows the
# pipeline. Every #include of every .c/.h in a module folder (and in
# include/nftrace/) is resolved to the module that owns the included file; a
# module may include its own files and those of lower stages only. Because the
# stages form one order, no edge going up also means no cycle between modules.
# Prints one line per offending include ("FILE:LINE: includes X (module M,
# stage above module N)") and exits 1; exits 0 when the graph is clean.
# Two more rules: no importer includes another (importers/ctf, importers/kernel,
# importers/etw ... are sub-modules; only the table in importers/*.c names
# them all), and the readers (READERS) include, of the modules below them,
# core and the timeline's read side (READ_SIDE) only: never the writer, an
# importer, a format reader or the engine.
# Header tiers: include/nftrace/ holds the installed headers (libnfence's),
# include/contract/ the contracts between modules, each owned by one module
# (CONTRACT); a module's private headers sit in its folder (*_int.h).
# With --graph first, also prints the module edges found ("FROM -> TO").
# Run by ctest as check_includes (and check_includes_selftest on a small tree).
set -euo pipefail
graph=0
if [[ ${1:-} == --graph ]]; then graph=1; shift; fi
cd "${1:-$(dirname "$0")/..}"

# The stage order, lowest first: the one place it is stated.
STAGES="core capture parser kernel etl timeline importers analysis frames viewer html export diff push cli"
# Modules that read timelines and must stay blind to where the data came from.
READERS="viewer html export"
# What of the modules below them readers may include (besides core).
READ_SIDE="include/contract/timeline.h"
# Top-level folders that are not modules (their files are not checked).
NON_MODULES="bench docs include samples schemas scripts tests"
# The module each installed header (include/nftrace/) belongs to.
declare -A PUBLIC=(
  [error.h]=core [events.h]=core [visibility.h]=core [nfence.h]=capture
)
# The module each contract header (include/contract/) belongs to.
declare -A CONTRACT=(
  [errors.h]=core [ctf_meta.h]=core [outfile.h]=core [sessiondir.h]=core
  [anomaly_kinds.h]=core [capbuf.h]=core [text.h]=core [util_hash.h]=core
  [escape.h]=core [sattime.h]=core [infile.h]=core
  [ctf.h]=capture [record.h]=capture
  [parser.h]=parser [kernel.h]=kernel [etl.h]=etl
  [timeline.h]=timeline [timeline_writer.h]=timeline [spill.h]=timeline [deps.h]=timeline
  [session.h]=importers
  [analysis.h]=analysis [frames.h]=frames [render.h]=viewer [html.h]=html [export.h]=export [diff.h]=diff [push.h]=push
)
# Folders other modules may include private headers from (CMake exports them):
# none; nfcapture keeps capture/ private.
EXPORTED_DIRS=""

declare -A RANK=()
i=0
for m in $STAGES; do RANK[$m]=$i; i=$((i + 1)); done

fail=0
edges=()
problem() { echo "$1"; fail=1; }

# Every folder holding C sources is a module with a stage, or a known non-module.
for d in */; do
  d=${d%/}
  [[ -n "${RANK[$d]:-}" ]] && continue
  [[ " $NON_MODULES " == *" $d "* ]] && continue
  [[ -f $d/CMakeCache.txt ]] && continue   # a build tree (build-asan/, build-ci/ ...)
  if find "$d" -name '*.[ch]' -print -quit | grep -q .; then
    problem "$d/: C sources in a folder that is neither a stage in STAGES nor in NON_MODULES ($0)"
  fi
done

# owner PATH: the module a repository-relative path belongs to ('' when none).
owner() {
  local p=$1
  case $p in
    include/nftrace/*)
      local h=${p#include/nftrace/}
      echo "${PUBLIC[$h]:-?}"
      return ;;
    include/contract/*)
      local h=${p#include/contract/}
      echo "${CONTRACT[$h]:-?}"
      return ;;
  esac
  local top=${p%%/*}
  echo "${RANK[$top]:+$top}"
}

# importer PATH: the importer sub-module (importers/NAME) a path is in, or ''.
importer() {
  case $1 in
    importers/*/*) local r=${1#importers/}; echo "importers/${r%%/*}" ;;
    *) echo "" ;;
  esac
}

# resolve FROM_DIR NAME: the repository path an include names ('' when it is
# not in the tree: a system or generated header).
resolve() {
  local dir=$1 name=$2 p d
  p=$(realpath -m --relative-to=. "$dir/$name")
  [[ -f $p ]] && { echo "$p"; return; }
  for d in include $EXPORTED_DIRS; do
    p=$(realpath -m --relative-to=. "$d/$name")
    [[ -f $p ]] && { echo "$p"; return; }
  done
  echo ""
}

files=$(for m in $STAGES; do [[ -d $m ]] && find "$m" -name '*.[ch]'; done
        for d in include/nftrace include/contract; do [[ -d $d ]] && find "$d" -name '*.h'; done)
for f in $files; do
  from=$(owner "$f")
  if [[ $from == "?" ]]; then
    problem "$f: public header with no module in PUBLIC or CONTRACT ($0)"
    continue
  fi
  while IFS=: read -r line name; do
    target=$(resolve "$(dirname "$f")" "$name")
    [[ -z $target ]] && continue
    to=$(owner "$target")
    [[ -z $to || $to == "?" ]] && continue
    if [[ $to == "$from" ]]; then
      fi_=$(importer "$f"); ti_=$(importer "$target")
      if [[ -n $fi_ && -n $ti_ && $fi_ != "$ti_" ]]; then
        problem "$f:$line: includes $name ($target): importer $fi_ includes importer $ti_ (no importer includes another)"
      fi
      continue
    fi
    edges+=("$from -> $to")
    if (( RANK[$to] > RANK[$from] )); then
      problem "$f:$line: includes $name ($target, module $to, stage above module $from)"
    elif [[ " $READERS " == *" $from "* && $to != core && " $READ_SIDE " != *" $target "* &&
            " $READERS " != *" $to "* ]]; then
      problem "$f:$line: includes $name ($target, module $to): a reader includes only core and the timeline's read side ($READ_SIDE)"
    fi
  done < <(grep -n -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<][^">]+[">]' "$f" |
           sed -E 's/^([0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]*["<]([^">]+)[">].*/\1:\2/')
done

if (( graph )) && (( ${#edges[@]} )); then
  printf '%s\n' "${edges[@]}" | sort | uniq -c | sort -k2
fi
exit $fail
