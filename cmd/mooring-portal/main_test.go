package main

import (
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
