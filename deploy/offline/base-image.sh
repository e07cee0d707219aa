#!/bin/sh
# Make the base image of the offline deployment, local/bookworm, from Debian's packages
# alone (no container registry): debootstrap a minimal Debian 12 and import it.
#   deploy/offline/base-image.sh [DEBIAN_MIRROR]      (as root; needs debootstrap and docker)
# A network that re-signs TLS: its CA certificates in /usr/local/share/ca-certificates/ are
# copied into the image, so that pip reaches PyPI from inside the builds.
set -eu
mirror=${1:-http://deb.debian.org/debian}
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase \
  --include=python3,python3-venv,python3-pip,nginx,ca-certificates,curl,procps,passwd,iproute2 \
  bookworm "$root" "$mirror"
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  chroot "$root" update-ca-certificates
fi
tar -C "$root" -c . | docker import - local/bookworm
docker run --rm local/bookworm python3 --version
