// Package ociimage assembles the OCI image of one of Mooring's static Go binaries without
// a container engine: an empty base, one layer holding the binary and the few files a
// non-root process expects (/etc/passwd, /etc/group, /tmp), a config that runs it as user
// 65532, and the org.opencontainers.image.* labels. Every timestamp comes from the caller
// (the commit time), file owners and modes are fixed and entries are sorted, so one input
// always gives one digest.
package ociimage
