// Package jobstatus reads what a Kubernetes Job's status says about its run: pending,
// running, succeeded or failed, and why it failed. It is the one answer to "did this Job
// finish?" for the operator (the engine's one-shot Jobs, a Backup's history) and the
// kubectl plugin alike, so it imports nothing but the API types.
package jobstatus
