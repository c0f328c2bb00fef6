package instance

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMemorySettings(t *testing.T) {
	const mi, gi = int64(1 << 20), int64(1 << 30)
	tests := map[string]struct {
		engine string
		limit  int64
		want   []string
	}{
		"postgresql without a limit keeps its defaults": {"postgresql", 0, nil},
		"postgresql 512Mi (the default limit)":          {"postgresql", 512 * mi, []string{"shared_buffers = 128MB", "effective_cache_size = 384MB"}},
		"postgresql 4Gi":                                {"postgresql", 4 * gi, []string{"shared_buffers = 1024MB", "effective_cache_size = 3072MB"}},
		"postgresql 1000M rounds down to MiB":           {"postgresql", 1000 * 1000 * 1000, []string{"shared_buffers = 238MB", "effective_cache_size = 715MB"}},
		"postgresql tiny limit floors at 16MB":          {"postgresql", 32 * mi, []string{"shared_buffers = 16MB", "effective_cache_size = 24MB"}},
		"mariadb without a limit: 64M":                  {"mariadb", 0, []string{"innodb_buffer_pool_size = 64M"}},
		"mariadb 512Mi: half":                           {"mariadb", 512 * mi, []string{"innodb_buffer_pool_size = 256M"}},
		"mariadb just under 2Gi: half":                  {"mariadb", 2*gi - mi, []string{"innodb_buffer_pool_size = 1023M"}},
		"mariadb 2Gi: 70%":                              {"mariadb", 2 * gi, []string{"innodb_buffer_pool_size = 1433M"}},
		"mariadb 4Gi: 70%":                              {"mariadb", 4 * gi, []string{"innodb_buffer_pool_size = 2867M"}},
		"mysql 8Gi: 70%":                                {"mysql", 8 * gi, []string{"innodb_buffer_pool_size = 5734M"}},
		"unknown engine":                                {"oracle", gi, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := MemorySettings(tc.engine, tc.limit); !slices.Equal(got, tc.want) {
				t.Errorf("MemorySettings(%s, %d) = %q, want %q", tc.engine, tc.limit, got, tc.want)
			}
		})
	}
}

// TestMemorySettingsWritten: the settings reach the files the servers read.
func TestMemorySettingsWritten(t *testing.T) {
	m := testMariaDB(t, "mariadb", 0)
	m.cfg.MemoryLimit = 1 << 30
	if conf := m.serverConf(); !strings.Contains(conf, "innodb_buffer_pool_size = 512M\n") || strings.Contains(conf, "innodb_buffer_pool_size = 64M") {
		t.Errorf("my.cnf with a 1Gi limit:\n%s\nwant innodb_buffer_pool_size = 512M and not 64M", conf)
	}

	root := t.TempDir()
	p := newPostgres(Config{Engine: "postgresql", Version: "18", Pod: "db-0", Port: 5432, DataDir: root, RunDir: filepath.Join(root, "run"), MemoryLimit: 1 << 30})
	if err := os.MkdirAll(p.pgdata(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.pgdata(), "postgresql.conf"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.Configure(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(p.pgdata(), pgConfFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"shared_buffers = 256MB\n", "effective_cache_size = 768MB\n"} {
		if !strings.Contains(string(b), w) {
			t.Errorf("%s with a 1Gi limit lacks %q:\n%s", pgConfFile, w, b)
		}
	}
}
