#!/usr/bin/env bash
# Builds a kubectl-mooring release archive (the binary and LICENSE) into dist/ for every
# platform of the krew manifest plugins/mooring.yaml, and writes the version, the download URLs and each
# archive's sha256 into the manifest.
# Archives are reproducible (-trimpath, fixed mtime and owner), so the same source and Go
# version give the same sha256.
set -euo pipefail
version=${VERSION:?set VERSION, e.g. VERSION=v0.1.0}
cd "$(dirname "$0")/.."
revision=$(git rev-parse HEAD 2>/dev/null || true)
manifest=plugins/mooring.yaml
rm -rf dist && mkdir -p dist
sed -i -e "s/^  version: .*/  version: ${version}/" \
	-e "s#releases/download/[^/]*/#releases/download/${version}/#" "$manifest"
# The platforms are the manifest's archives: .../kubectl-mooring_<os>_<arch>.tar.gz
for platform in $(sed -n 's#.*/kubectl-mooring_\([a-z0-9]*\)_\([a-z0-9]*\)\.tar\.gz$#\1/\2#p' "$manifest"); do
	os=${platform%/*} arch=${platform#*/}
	dir=dist/${os}_${arch}
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath \
		-ldflags "-s -w -X github.com/mooringhq/mooring/internal/version.Version=${version} -X github.com/mooringhq/mooring/internal/version.Revision=${revision}" \
		-o "$dir/kubectl-mooring" ./cmd/kubectl-mooring
	# krew-index wants the license in the archive; the manifest's files: install both.
	cp LICENSE "$dir/LICENSE"
	archive=dist/kubectl-mooring_${os}_${arch}.tar.gz
	tar -C "$dir" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - kubectl-mooring LICENSE | gzip -n >"$archive"
	sum=$(sha256sum "$archive" | cut -d' ' -f1)
	# The sha256 line follows the archive's uri line in the manifest.
	sed -i "/kubectl-mooring_${os}_${arch}.tar.gz/{n;s/sha256: .*/sha256: ${sum}/}" "$manifest"
	echo "$archive $sum"
done
