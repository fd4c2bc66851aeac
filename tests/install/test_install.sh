#!/usr/bin/env bash
# test_install.sh sample|symbols BUILD_DIR SOURCE_DIR CC "EXTRA_CFLAGS"
#
# Installs the build tree into a temporary prefix (cmake --install --prefix)
# and checks what a program outside nftrace gets from it:
#   sample   the installed files (libnfence.so with its soname, the headers,
#            libnfence.pc, the CMake package); each installed header compiles
#            alone and includes nothing outside the installed tree;
#            samples/nfence-sample.c, copied out of the source tree, builds with
#            `pkg-config --cflags --libs libnfence` only, runs, and records a
#            session through NFTRACE_RECORD_DIR; it also builds with
#            find_package(nfence) and target nfence::nfence.
#   symbols  libnfence.so exports exactly the functions the installed headers
#            declare NF_API: none missing, nothing else (the CTF writer, the
#            session environment, core's helpers stay inside).
# EXTRA_CFLAGS are the sanitizer flags of the build (a program linking an
# ASan-built library must be built with them). Prints what is wrong, exits 1.
set -euo pipefail
mode=$1 build=$2 src=$3 cc=$4 extra=${5:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nftrace-test-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_install.sh $mode: $*" >&2; exit 1; }

prefix=$tmp/prefix
# cmake --install writes BUILD/install_manifest.txt, which other tests read: one at a time.
exec 9> "$build/.nftrace-install.lock"
flock 9
cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; fail "cmake --install $build failed"; }
flock -u 9
pc=$(find "$prefix" -name libnfence.pc -print -quit)
[[ -n $pc ]] || fail "no libnfence.pc under $prefix"
export PKG_CONFIG_PATH=$(dirname "$pc")
libdir=$(pkg-config --variable=libdir libnfence)
incdir=$(pkg-config --variable=includedir libnfence)
lib=$libdir/libnfence.so
[[ -f $lib ]] || fail "pkg-config's libdir $libdir holds no libnfence.so"
[[ $(realpath "$libdir") == "$(realpath "$prefix")"/* ]] || fail "libdir $libdir is outside the prefix"
headers=$(cd "$incdir" && find nftrace -name '*.h' | sort)

if [[ $mode == symbols ]]; then
  # Expected: every function the installed headers declare with NF_API
  # (comments and preprocessor lines left out).
  # shellcheck disable=SC2086
  (cd "$incdir" && cat $headers) | perl -0pe 's{/\*.*?\*/}{}gs' | grep -v '^[[:space:]]*#' | tr '\n' ' ' | grep -oE 'NF_API[^;{(]*\(' |
    sed -E 's/.*[^A-Za-z0-9_]([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*\($/\1/' | sort -u > "$tmp/api"
  nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVWiu]$/ { print $3 }' | sort -u > "$tmp/exported"
  n=$(wc -l < "$tmp/api")
  (( n >= 30 )) || fail "only $n NF_API functions found in the installed headers"
  grep -qx nf_runtime_create "$tmp/api" || fail "nf_runtime_create is not declared NF_API"
  if ! diff "$tmp/api" "$tmp/exported" > "$tmp/diff"; then
    sed -n 's/^< /declared NF_API but not exported: /p; s/^> /exported but not API: /p' "$tmp/diff" >&2
    fail "libnfence.so exports $(wc -l < "$tmp/exported") symbols, the headers declare $n"
  fi
  echo "libnfence.so exports exactly the $n NF_API functions"
  exit 0
fi
[[ $mode == sample ]] || fail "unknown mode"

# The library, its soname and the development link.
soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[[ $soname == libnfence.so.0 ]] || fail "soname is '$soname', not libnfence.so.0"
[[ -L $lib && -e $libdir/$soname ]] || fail "$libdir lacks the libnfence.so -> $soname links"
for h in nfence.h events.h error.h visibility.h events_ids.h; do
  [[ -f $incdir/nftrace/$h ]] || fail "nftrace/$h is not installed"
done
[[ -f $libdir/cmake/nfence/nfence-config.cmake && -f $libdir/cmake/nfence/nfenceTargets.cmake ]] ||
  fail "no CMake package under $libdir/cmake/nfence"

# Every quoted include of an installed header is in the installed tree, and
# each header compiles alone with pkg-config's flags (outside the source tree).
cd "$tmp"
for h in $headers; do
  while read -r name; do
    [[ -f $incdir/$name ]] || fail "$h includes \"$name\", which is not installed"
  done < <(sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1/p' "$incdir/$h")
  printf '#include <%s>\nint nf_install_probe;\n' "$h" > probe.c
  # shellcheck disable=SC2046
  $cc -std=c11 -Wall -Werror -fsyntax-only $(pkg-config --cflags libnfence) probe.c ||
    fail "$h does not compile alone against the installed tree"
done

# The sample, with pkg-config only.
cp "$src/samples/nfence-sample.c" "$tmp/"
# shellcheck disable=SC2046,SC2086
$cc -std=c11 -Wall -Werror $extra -o sample nfence-sample.c $(pkg-config --cflags --libs libnfence) \
  -Wl,-rpath,"$libdir" || fail "nfence-sample.c does not build with pkg-config --cflags --libs libnfence"
ldd ./sample | grep -q "libnfence.so.0 => $(realpath "$libdir")" ||
  ldd ./sample | grep -q "libnfence.so.0 => $libdir" || fail "the sample does not load the installed libnfence.so.0"
out=$(env -u NFTRACE_RECORD_DIR ./sample) || fail "the sample failed: $out"
[[ $out == "nfence-sample: 32 frames produced and consumed" ]] || fail "the sample said '$out'"
# Recording from inside the program (what `nftrace record -- PROGRAM` sets).
NFTRACE_RECORD_DIR=$tmp/session NFTRACE_SEED=7 ./sample > /dev/null || fail "the sample failed while recording"
[[ -s $tmp/session/metadata ]] || fail "the sample recorded no session (no $tmp/session/metadata)"
grep -q 'FenceSignalQueued\|HwQueueStart' "$tmp/session/metadata" || fail "the session's metadata names no events"
ls "$tmp/session" | grep -qv metadata || fail "the session holds no stream file"

# The same program through the CMake package.
mkdir -p pkg
cat > pkg/CMakeLists.txt <<EOT
cmake_minimum_required(VERSION 3.20)
project(nfence_consumer C)
find_package(nfence 0.1 REQUIRED CONFIG)
add_executable(sample ../nfence-sample.c)
target_link_libraries(sample PRIVATE nfence::nfence)
EOT
# shellcheck disable=SC2086
cmake -S pkg -B pkg/build -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_FLAGS="$extra" -DCMAKE_EXE_LINKER_FLAGS="$extra" > pkg.log 2>&1 &&
  cmake --build pkg/build >> pkg.log 2>&1 || { cat pkg.log >&2; fail "find_package(nfence) did not build the sample"; }
out=$(env -u NFTRACE_RECORD_DIR pkg/build/sample) || fail "the CMake-built sample failed: $out"
[[ $out == *"32 frames produced and consumed" ]] || fail "the CMake-built sample said '$out'"
echo "installed tree OK: $(cd "$prefix" && find . -type f -o -type l | wc -l) files; sample built with pkg-config and find_package, ran and recorded"
