// Package nodeimage builds, offline, the container images the local cluster's real node
// runs, and imports them into its containerd.
//
// No registry is reachable from the machines Mooring is developed on, but Debian's
// packages are (the apt mirror), and so are Go modules. An image is therefore either a
// Debian root filesystem made by mmdebstrap from the packages that provide the software
// an upstream image ships (Debian's memcached standing in for docker.io/library/memcached,
// for instance), or one static Go binary (the sandbox image). Each is written as a
// one-layer OCI image-layout tarball whose index names it, so that
// `ctr -n k8s.io images import` gives it the reference the cluster's pods use.
//
// Stand-ins are honest: same server, same major (and minor) version as their tag; a
// build fails when Debian's version no longer matches it, and every image says what it
// really is in its annotations and labels (org.opencontainers.image.description,
// org.opencontainers.image.version, dev.mooring.stand-in).
//
// Built archives are cached by a hash of their recipe (Spec.Key), so only the first
// start of a cluster pays for mmdebstrap.
package nodeimage
