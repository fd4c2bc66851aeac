#!/usr/bin/env bash
# test_package.sh BUILD_DIR SOURCE_DIR: the Debian package (`cpack -G DEB`)
# installs on a fresh Debian 12 and works there.
#   - builds nftrace_VERSION_ARCH.deb from the build tree;
#   - its Depends name the Debian package of every library bin/nftrace and
#     libnfence.so.0 link (dpkg -S on what ldd resolves, here);
#   - its files (dpkg-deb -c) are exactly the install manifest of
#     `cmake --install` (paths under the prefix);
#   - a fresh bookworm root (debootstrap --variant=minbase from the mirror of
#     /etc/apt/sources.list*, kept as a tarball in BUILD/tests/install for the
#     next run): `apt-get install ./nftrace_*.deb` pulls the dependencies in,
#     then nftrace record, report (PNG, SVG), query and import run inside it,
#     `dpkg -L nftrace` lists the manifest, libnfence is in ld.so's cache, and
#     `apt-get purge` removes it all.
# When the mirror cannot be reached, the clean root is replaced by `dpkg -x`
# into an empty directory and the dependencies checked against this
# machine's packages (said on stdout). Needs root (chroot, mounts): exit 77,
# skipped, otherwise; also in sanitizer builds (the package of an ASan
# binary would need the sanitizer runtime in the root). About 2 minutes the
# first time (debootstrap), 30 s after.
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) sanitized=${3:-0}
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: test_package needs root (debootstrap, chroot, mount)"
  exit 77
fi
if [[ $sanitized != 0 ]]; then
  echo "SKIP: test_package runs on the release build (an ASan/TSan nftrace needs the sanitizer runtime)"
  exit 77
fi
for t in cpack dpkg-deb dpkg-shlibdeps; do
  command -v $t > /dev/null || { echo "test_package.sh: $t is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nftrace-test-package.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_package.sh: $*" >&2; exit 1; }
start=$SECONDS

# The package, and the manifest of an install of the same tree (BUILD/
# install_manifest.txt is written by every install, cpack's too: one at a time).
exec 9> "$build/.nftrace-install.lock"
flock 9
(cd "$build" && cpack -G DEB -B "$tmp/pkg") > "$tmp/cpack.log" 2>&1 ||
  { tail -20 "$tmp/cpack.log" >&2; fail "cpack -G DEB failed"; }
cmake --install "$build" --prefix "$tmp/stage" > "$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log" >&2; fail "cmake --install failed"; }
sed "s|^$tmp/stage/||" "$build/install_manifest.txt" | sort > "$tmp/manifest"
flock -u 9
debs=("$tmp"/pkg/nftrace_*.deb)
deb=${debs[0]}
[[ -f $deb ]] || fail "cpack wrote no nftrace_*.deb: $(ls "$tmp/pkg")"
version=$(sed -n 's/^project(nftrace VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[[ $(basename "$deb") == "nftrace_${version}_$(dpkg --print-architecture).deb" ]] ||
  fail "the package is named $(basename "$deb"), not nftrace_${version}_$(dpkg --print-architecture).deb"
[[ $(dpkg-deb -f "$deb" Package) == nftrace && $(dpkg-deb -f "$deb" Version) == "$version" ]] ||
  fail "control: Package $(dpkg-deb -f "$deb" Package), Version $(dpkg-deb -f "$deb" Version)"

# Depends: the package of each library the installed binaries link.
depends=$(dpkg-deb -f "$deb" Depends)
for bin in "$tmp/stage/bin/nftrace" "$tmp/stage"/lib*/libnfence.so.0; do
  [[ -e $bin ]] || fail "$bin is not installed"
  for lib in $(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    path=$(ldd "$bin" | awk -v l="$lib" '$1 == l { print $3 }')
    [[ $lib == ld-linux* ]] && continue
    [[ -n $path ]] || fail "ldd does not resolve $lib of $bin"
    pkg=$(dpkg -S "$(realpath "$path")" 2> /dev/null || dpkg -S "$path" 2> /dev/null) ||
      fail "no Debian package owns $path ($lib of $(basename "$bin"))"
    pkg=${pkg%%:*}
    [[ ", $depends," == *", $pkg "* || ", $depends," == *", $pkg,"* ]] ||
      fail "Depends lacks $pkg ($lib of $(basename "$bin")): $depends"
  done
done

# The package's files are the install manifest.
dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { sub(/^\.\/usr\//, "", $6); print $6 }' | sort > "$tmp/deb-files"
if ! diff "$tmp/manifest" "$tmp/deb-files" > "$tmp/diff"; then
  sed -n 's/^< /installed, not in the package: /p; s/^> /in the package, not installed: /p' "$tmp/diff" >&2
  fail "the package's files differ from the install manifest"
fi

# A fresh Debian 12 root.
mirror=$(sed -n 's/^URIs: *\([^ ]*debian\/*\)$/\1/p' /etc/apt/sources.list.d/*.sources 2> /dev/null | head -1)
[[ -n $mirror ]] || mirror=$(sed -n 's/^deb \(http[^ ]*\) bookworm .*/\1/p' /etc/apt/sources.list 2> /dev/null | head -1)
[[ -n $mirror ]] || mirror=http://deb.debian.org/debian
cache=$build/tests/install/bookworm-minbase.tar
root=$tmp/root
mkdir -p "$root"
if [[ ! -s $cache ]] && command -v debootstrap > /dev/null; then
  if timeout 900 debootstrap --variant=minbase bookworm "$tmp/boot" "$mirror" > "$tmp/debootstrap.log" 2>&1; then
    tar -C "$tmp/boot" -cf "$cache.tmp" . && mv "$cache.tmp" "$cache"
  else
    echo "test_package.sh: debootstrap from $mirror failed: $(tail -1 "$tmp/debootstrap.log")"
  fi
  rm -rf "$tmp/boot"
fi
in_root() { # runs a shell command in the root, with /proc, as root
  unshare --mount --propagation private sh -c 'mount -t proc proc "$1/proc" && chroot "$1" env -i \
    PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive sh -ec "$2"' \
    _ "$root" "$1"
}
if [[ -s $cache ]]; then
  tar -C "$root" -xf "$cache"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  cp "$deb" "$root/tmp/"
  in_root "apt-get update -qq && apt-get install -y -qq --no-install-recommends /tmp/$(basename "$deb")" \
    > "$tmp/apt.log" 2>&1 || { tail -20 "$tmp/apt.log" >&2; fail "apt-get install ./$(basename "$deb") failed in a fresh bookworm root"; }
  # every package Depends names is installed in the root
  for dep in $(tr ',' '\n' <<<"$depends" | sed 's/(.*//; s/|.*//' | tr -d ' '); do
    in_root "dpkg-query -W -f='\${Status}' $dep" 2> /dev/null | grep -q "install ok installed" ||
      fail "apt-get did not install $dep in the root"
  done
  in_root 'cd /tmp
    nftrace --version
    nftrace record -o s /usr/share/nftrace/samples/log-buffer-example.nfs
    nftrace report s -o s.png
    nftrace query --csv s "select count(*) from fence_ops"
    nftrace import /usr/share/nftrace/samples/kernel/drm-sched.dat -o k
    nftrace report k -o k.svg
    nftrace check s | tail -n 1
    ldconfig -p | grep -c libnfence.so.0' > "$tmp/run.out" 2>&1 ||
    { cat "$tmp/run.out" >&2; fail "nftrace failed in the fresh root"; }
  grep -q "^recorded s: 2 operations" "$tmp/run.out" && grep -qx 2 "$tmp/run.out" &&
    grep -q "^verdict: whole" "$tmp/run.out" && grep -qx 1 "$tmp/run.out" ||
    fail "in the fresh root: $(cat "$tmp/run.out")"
  [[ $(head -c 8 "$root/tmp/s.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "s.png is not a PNG"
  grep -q "<svg" "$root/tmp/k.svg" || fail "k.svg is not an SVG"
  # dpkg -L: the manifest's files (under /usr), plus the directories.
  in_root "dpkg -L nftrace" | sed -n 's|^/usr/||p' | while read -r f; do
    [[ -d $root/usr/$f && ! -L $root/usr/$f ]] || echo "$f"
  done | sort > "$tmp/dpkg-L"
  diff "$tmp/manifest" "$tmp/dpkg-L" > "$tmp/diff" ||
    { cat "$tmp/diff" >&2; fail "dpkg -L nftrace differs from the install manifest"; }
  in_root "apt-get purge -y -qq nftrace" > "$tmp/purge.log" 2>&1 || { cat "$tmp/purge.log" >&2; fail "apt-get purge failed"; }
  [[ ! -e $root/usr/bin/nftrace && ! -e $root/usr/share/man/man1/nftrace.1 ]] || fail "apt-get purge left files"
  echo "test_package: $(basename "$deb") installed with apt-get on a fresh bookworm root and ran there" \
    "(Depends: $depends); $(wc -l < "$tmp/manifest") files, as installed; $((SECONDS - start)) s"
  exit 0
fi

# No mirror: the package unpacked into an empty directory, its dependencies
# checked against this machine's installed packages, the binary run from it.
echo "test_package.sh: no fresh Debian root (the mirror $mirror could not be reached):" \
  "checking the unpacked package against this machine's packages instead"
dpkg-deb -x "$deb" "$root"
for dep in $(tr ',' '\n' <<<"$depends" | sed 's/(.*//; s/|.*//' | tr -d ' '); do
  dpkg-query -W -f='${Status}' "$dep" 2> /dev/null | grep -q "install ok installed" ||
    fail "Depends names $dep, which is not a package installed here"
done
(cd "$tmp" && env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="$root/usr/lib" "$root/usr/bin/nftrace" record -o s \
  "$root/usr/share/nftrace/samples/log-buffer-example.nfs" && env -i PATH=/usr/bin:/bin "$root/usr/bin/nftrace" \
  report s -o s.png) > "$tmp/run.out" 2>&1 || { cat "$tmp/run.out" >&2; fail "the unpacked nftrace failed"; }
[[ $(head -c 8 "$tmp/s.png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "s.png is not a PNG"
echo "test_package: $(basename "$deb") unpacked and run (Depends: $depends); $(wc -l < "$tmp/manifest") files, as installed"
