// Package ociimage assembles the OCI image of one of Mooring's static Go binaries without
// a container engine: an empty base, one layer holding the binary and the few files a
// non-root process expects (/etc/passwd, /etc/group, /tmp, and the CA bundle
// /etc/ssl/certs/ca-certificates.crt: Mozilla's roots from the pinned Go module
// golang.org/x/crypto/x509roots/fallback, named in the label
// dev.mooring.image.ca-certificates), a config that runs it as user 65532, and the
// org.opencontainers.image.* labels. Every timestamp comes from the caller (the commit
// time), file owners and modes are fixed and entries are sorted, so one input always
// gives one digest.
//
// WriteLayout writes an OCI image layout every user can read (files 0644, directories
// 0755); AttachReferrer adds OCI 1.1 referrers (an SBOM, a signed provenance) to it.
package ociimage
