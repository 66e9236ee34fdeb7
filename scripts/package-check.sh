#!/usr/bin/env bash
# Install the Debian package in a brand-new Debian 12 root (nothing but the minimal base, no build
# tree, no source) and run the README's main command with the installed binary, so a run-time
# dependency the package does not declare fails here. Used by .ci/run; needs root.
#
#   bash scripts/package-check.sh build/fuse-advise_*.deb [COMMAND]
#
# COMMAND (default: the main job on zoo:convnet-tiny, then `trace` finding its CUPTI library
# through the binary's own location, then the man page and completion being where they belong)
# runs in /tmp of that root after `apt-get install ./PACKAGE`. The root comes from
# ../shared/tools/fresh-debian-check.sh, handed a throw-away git repository that holds only the
# package (it clones a repository into the root; FRESH_CACHE is passed through).
set -euo pipefail
deb=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
cmd=${2:-'fuse-advise run zoo:convnet-tiny --iters 3 --out out && test -s out/report.html && test -s out/graph.svg \
  && fuse-advise trace -- true && test -s /usr/share/man/man1/fuse-advise.1 \
  && test -s /usr/share/bash-completion/completions/fuse-advise && fuse-advise --version'}
repo=$(mktemp -d /tmp/fa-package-check.XXXXXX)
trap 'rm -rf "$repo"' EXIT
cp "$deb" "$repo/"
git -C "$repo" init -q && git -C "$repo" add . \
  && git -C "$repo" -c user.name=ci -c user.email=ci@invalid commit -q -m package
REPO=$repo bash "$here/../shared/tools/fresh-debian-check.sh" \
  "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ./$(basename "$deb") >/dev/null \
   && cd /tmp && $cmd"
