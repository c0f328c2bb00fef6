package main

import (
	"flag"
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
