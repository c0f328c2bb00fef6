// Package availability holds the availability defaults that Apps, CacheInstances and
// DatabaseClusters share: their pods preferring one per node, and a PodDisruptionBudget
// that lets a node drain take one of them at a time. Each kind decides when it gets them
// (a highly available App, a cache with more than one replica, every database cluster);
// what they are is decided here, once.
package availability
