package install

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

// storedAPIVersion reads the object the API server stored at key straight from etcd
// (its v3 JSON gateway) and returns the apiVersion it is encoded in: what a storage
// version migration must change, and what no API read shows.
func storedAPIVersion(t *testing.T, key string) (string, error) {
	t.Helper()
	body, err := json.Marshal(map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(key))})
	if err != nil {
		return "", err
	}
	resp, err := http.Post(suite.Cluster.EtcdURL()+"/v3/kv/range", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("read %s from etcd: %w", key, err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out struct {
		Kvs []struct {
			Value []byte `json:"value"` // base64 in JSON, decoded by encoding/json
		} `json:"kvs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", fmt.Errorf("read %s from etcd: %w", key, err)
	}
	if len(out.Kvs) != 1 {
		return "", fmt.Errorf("etcd has %d values at %s, want 1", len(out.Kvs), key)
	}
	var obj struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(out.Kvs[0].Value, &obj); err != nil {
		return "", fmt.Errorf("%s holds no JSON object: %w", key, err)
	}
	return obj.APIVersion, nil
}
