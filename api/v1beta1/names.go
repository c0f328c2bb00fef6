package v1beta1

// MaxNameLength is the longest DatabaseCluster name whose children are all valid: the
// StatefulSet controller labels every pod with controller-revision-hash
// "<name>-<hash of up to 10 characters>", a label value of at most 63 characters. The
// name is also the primary Service's name and "<name>-headless" the headless Service's,
// both DNS-1035 labels. internal/controller/limits_test.go proves the limit.
const MaxNameLength = 52
