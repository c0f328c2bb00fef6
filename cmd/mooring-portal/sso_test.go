package main

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The single sign-on flags make a valid configuration, reading the client secret from
// its file, or are refused naming the flag; local logins stay on by default and cannot
// be turned off without a provider.
func TestSSOFlags(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("a-client-secret-of-length\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sso := "--oidc-issuer-url=https://idp.example.com --oidc-client-id=portal --oidc-client-secret-file=" + secret +
		" --oidc-redirect-url=https://portal.example.com/ui/sso/callback"
	tests := map[string]struct {
		args    string
		wantErr string
	}{
		"none":                             {args: ""},
		"local logins off, no idp":         {args: "--local-login=false", wantErr: "--local-login=false needs --oidc-issuer-url"},
		"single sign-on":                   {args: sso + " --oidc-scopes=profile,,email"},
		"single sign-on only":              {args: sso + " --local-login=false"},
		"no secret file":                   {args: strings.Replace(sso, "--oidc-client-secret-file="+secret, "", 1), wantErr: "--oidc-client-secret-file"},
		"a callback the UI does not serve": {args: strings.Replace(sso, "/ui/sso/callback", "/callback", 1), wantErr: "--oidc-redirect-url"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var o options
			fs := flag.NewFlagSet("mooring-portal", flag.ContinueOnError)
			o.register(fs, "mooring-portal")
			if err := fs.Parse(strings.Fields(tc.args)); err != nil {
				t.Fatal(err)
			}
			err := o.ssoConfig()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.cfg.SSO.Enabled() && o.cfg.SSO.ClientSecret != "a-client-secret-of-length" {
				t.Errorf("client secret %q, want the file's without its newline", o.cfg.SSO.ClientSecret)
			}
			if strings.Contains(tc.args, "--oidc-scopes") && !slices.Equal(o.cfg.SSO.Scopes, []string{"profile", "email"}) {
				t.Errorf("scopes %q, want [profile email]", o.cfg.SSO.Scopes)
			}
			if o.cfg.DisableLocalLogin != strings.Contains(tc.args, "--local-login=false") {
				t.Errorf("DisableLocalLogin %t for %q", o.cfg.DisableLocalLogin, tc.args)
			}
		})
	}
}
