package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestCheckSessionLifetime(t *testing.T) {
	tests := map[string]struct {
		maxLifetime, refreshTTL time.Duration
		wantErr                 bool
	}{
		"the defaults":             {maxLifetime: 7 * 24 * time.Hour, refreshTTL: 24 * time.Hour},
		"equal to the refresh ttl": {maxLifetime: time.Hour, refreshTTL: time.Hour},
		"shorter than the refresh": {maxLifetime: time.Hour, refreshTTL: 24 * time.Hour, wantErr: true},
		"zero":                     {refreshTTL: 24 * time.Hour, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := checkSessionLifetime(tc.maxLifetime, tc.refreshTTL)
			if (err != nil) != tc.wantErr {
				t.Fatalf("want an error: %v, got %v", tc.wantErr, err)
			}
			if err != nil && !strings.Contains(err.Error(), "--session-max-lifetime") {
				t.Fatalf("the error must name the flag: %v", err)
			}
		})
	}
}

// TestSecureCookiesByDefault: the portal runs behind a TLS-terminating Ingress, so its
// UI cookies are Secure unless --secure-cookies=false says browsers use plain HTTP.
func TestSecureCookiesByDefault(t *testing.T) {
	for args, want := range map[string]bool{"": true, "--secure-cookies=false": false, "--secure-cookies": true} {
		var o options
		fs := flag.NewFlagSet("mooring-portal", flag.ContinueOnError)
		o.register(fs, "mooring-portal")
		if err := fs.Parse(strings.Fields(args)); err != nil {
			t.Fatal(err)
		}
		if o.cfg.SecureCookies != want {
			t.Errorf("flags %q: SecureCookies %v, want %v", args, o.cfg.SecureCookies, want)
		}
	}
}

// TestConfigurationDocListsEveryFlag keeps the portal flag table of docs/configuration.md
// in step with the flags: every flag has a row, and the row shows its default.
func TestConfigurationDocListsEveryFlag(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The table follows its heading; the operator's flag table comes earlier.
	_, table, found := strings.Cut(string(doc), "## Portal flags")
	if !found {
		t.Fatal("docs/configuration.md has no ## Portal flags table")
	}
	rows := map[string]string{}
	for _, line := range strings.Split(table, "\n") {
		if m := flagRow.FindStringSubmatch(line); m != nil {
			rows[m[1]] = m[2]
		}
	}
	var o options
	fs := flag.NewFlagSet("mooring-portal", flag.ContinueOnError)
	o.register(fs, "mooring-portal")
	fs.VisitAll(func(f *flag.Flag) {
		def, ok := rows[f.Name]
		switch {
		case !ok:
			t.Errorf("docs/configuration.md has no row for --%s (default %q)", f.Name, f.DefValue)
		case f.Name == "namespace":
			// Its default is $POD_NAMESPACE when set; the row says so.
			if !strings.Contains(def, "$POD_NAMESPACE") || !strings.Contains(def, f.DefValue) {
				t.Errorf("docs/configuration.md row for --namespace shows default %q, want $POD_NAMESPACE, else %q", def, f.DefValue)
			}
		case f.DefValue != "" && def != "`"+f.DefValue+"`":
			t.Errorf("docs/configuration.md row for --%s shows default %q, want `%s`", f.Name, def, f.DefValue)
		}
	})
}

// flagRow is a row of docs/configuration.md's portal flag table: flag name and default column.
var flagRow = regexp.MustCompile("^\\| `--([a-z-]+)` \\| ([^|]*) \\|")
