// Package release builds Mooring's images the way a release ships them and checks them
// the way a user can: each binary compiled statically for each platform with its version
// and commit linked in (internal/version), an OCI image index per image (internal/ociimage),
// and, attached to it as OCI 1.1 referrers in the same layout and written beside it:
//
//   - per platform image, an SPDX 2.3 JSON SBOM of the Go modules the binary links, read
//     from the binary's own build information (what `go version -m` prints);
//   - per index, an in-toto Statement v1 with a SLSA provenance v1 predicate (the
//     package, version and revision built; the commit and each Go module with its go.sum
//     h1: hash as resolved dependencies), signed as a DSSE envelope with the release's
//     ed25519 or ECDSA P-256 key.
//
// Verify checks a layout against the release's public key: the signature, that the
// statement's subjects are exactly the index and its image manifests, and that each SBOM
// lists the modules of the binary inside its image at the versions that binary was built with.
package release
