// Package cache turns a CacheInstance into a memcached Deployment, a headless Service
// whose name resolves to every ready replica (clients hash keys across them), and, while
// there is more than one replica, pods that prefer one per node and a PodDisruptionBudget
// that lets voluntary disruptions (node drains) take only one replica at a time. builders.go has the desired objects as
// pure functions, status.go derives the CacheInstance's status from its Deployment (the
// rollout decisions are shared with App in package rollout), and handler.go plugs both
// into the engine.
package cache
