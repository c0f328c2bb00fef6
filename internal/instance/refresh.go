package instance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// refreshInterval is how often the manager looks at the mounted Secrets. The kubelet
// updates a Secret volume within about a minute of the change; reading a few small
// files every two seconds costs nothing next to that.
const refreshInterval = 2 * time.Second

// watchSecrets applies the mounted Secrets' changes to the running server, through the
// engine's Refresh, without a restart: a new certificate, a new application, admin or
// replication password. A failed Refresh is tried again at the next look.
func (m *manager) watchSecrets(ctx context.Context) {
	last := m.secretsDigest()
	t := time.NewTicker(refreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !m.configured.Load() {
			continue // AfterStart reads the Secrets as they are when it runs
		}
		d := m.secretsDigest()
		if d == last {
			continue
		}
		if err := m.engine.Refresh(ctx); err != nil {
			m.log.Printf("applying the changed Secrets: %v", err)
			m.st.update(func(s *Status) { s.Error = err.Error() })
			continue
		}
		last = d
		m.st.update(func(s *Status) { s.Error = "" })
		m.log.Printf("applied the changed Secrets")
	}
}

// secretsDigest is a digest of every mounted Secret's files: it changes when any of
// them does. The kubelet's own entries (..data and the timestamped directory) are
// skipped; the keys are read through them.
func (m *manager) secretsDigest() string {
	h := sha256.New()
	for _, dir := range []string{m.cfg.AdminSecretDir, m.cfg.AppSecretDir, m.cfg.ReplicationSecretDir, m.cfg.TLSDir, m.cfg.ClientCADir} {
		if dir == "" {
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "..") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				continue
			}
			h.Write([]byte(dir + "/" + e.Name() + "\x00"))
			h.Write(b)
			h.Write([]byte{0})
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
