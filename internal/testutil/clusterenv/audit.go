package clusterenv

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mooringhq/mooring/internal/devenv"
)

// auditPolicy logs, at metadata level (no bodies, so no Secret data), every write request
// of the operator's ServiceAccount when it is received: an entry is on disk before the
// request is served (the log backend blocks by default), so once the operator has seen an
// answer, the write is in the log.
var auditPolicy = fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [ResponseStarted, ResponseComplete, Panic]
rules:
- level: Metadata
  users: ["system:serviceaccount:%s:%s"]
  verbs: [create, update, patch, delete, deletecollection]
- level: None
`, devenv.Namespace, devenv.ServiceAccount)

// auditArgs writes the policy into the state directory and returns the kube-apiserver
// flags that apply it. The log is not a *.log file: CheckNotForbidden reads those.
func (e *Env) auditArgs() ([]string, error) {
	policy := filepath.Join(e.StateDir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	e.auditLog = filepath.Join(e.StateDir, "operator-writes.audit.jsonl")
	return []string{"--audit-policy-file=" + policy, "--audit-log-path=" + e.auditLog, "--audit-log-mode=blocking"}, nil
}

// AuditMark is where the log of the operator's writes ends now; OperatorWrites(mark, ...)
// reads what was logged after it. It needs Options.AuditOperatorWrites.
func (e *Env) AuditMark() (int64, error) {
	if e.auditLog == "" {
		return 0, errors.New("the operator's writes are not audited: set Options.AuditOperatorWrites")
	}
	fi, err := os.Stat(e.auditLog)
	if errors.Is(err, fs.ErrNotExist) { // nothing written yet
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// OperatorWrites lists the write requests the operator's ServiceAccount sent for objects of
// namespace ns after mark, as "verb resource[/subresource] name". Unlike
// mooring_api_requests_total, which has no namespace label, it leaves out what the
// operator writes for other tests' objects.
func (e *Env) OperatorWrites(mark int64, ns string) ([]string, error) {
	if _, err := e.AuditMark(); err != nil {
		return nil, err
	}
	f, err := os.Open(e.auditLog)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(mark, io.SeekStart); err != nil {
		return nil, err
	}
	var writes []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			Verb      string `json:"verb"`
			ObjectRef *struct {
				Resource, Subresource, Namespace, Name string
			} `json:"objectRef"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("%s: %w", e.auditLog, err)
		}
		if ev.ObjectRef == nil || ev.ObjectRef.Namespace != ns {
			continue
		}
		r := ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			r += "/" + ev.ObjectRef.Subresource
		}
		writes = append(writes, fmt.Sprintf("%s %s %s", ev.Verb, r, ev.ObjectRef.Name))
	}
	return writes, sc.Err()
}
