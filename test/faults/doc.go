// Package faults drives Mooring on its own local cluster through the failures it must
// survive: a missing webhook certificate Secret, kube-apiserver and etcd restarts, leader
// election handovers, an operator killed again and again while a fleet converges, an
// operator that is down, and one killed while a final snapshot runs. Each test measures
// what docs/reliability.md reports.
package faults
