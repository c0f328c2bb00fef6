// Package docs holds no code: it is Mooring's documentation (README.md at the repository's
// root and the pages in this directory) and the tests that keep it true to the tree. Those
// tests are pure (no control plane, no network): every relative link of README.md and of the
// pages here names a file that exists, and a heading when it names one; every page is
// linked from README.md and has one line in the index, docs/README.md; and every
// `make <target>` they name is a target of the Makefile.
package docs
