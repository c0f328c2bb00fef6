package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestSecureCookiesConfig: Config.SecureCookies (--secure-cookies) reaches the web UI,
// whose cookies are then Secure, with HSTS, although the portal speaks plain HTTP.
func TestSecureCookiesConfig(t *testing.T) {
	for _, secure := range []bool{true, false} {
		p := newPortal(t, func(c *Config) { c.SecureCookies = secure })
		resp, err := http.Get(p.URL + "/ui/login")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		cookies := resp.Header.Values("Set-Cookie")
		if len(cookies) == 0 {
			t.Fatal("the login page set no cookie")
		}
		for _, c := range cookies {
			if got := strings.Contains(c, "; Secure"); got != secure {
				t.Errorf("SecureCookies %v: cookie %q is Secure: %v", secure, c, got)
			}
		}
		if got := resp.Header.Get("Strict-Transport-Security"); (got != "") != secure {
			t.Errorf("SecureCookies %v: Strict-Transport-Security %q", secure, got)
		}
	}
}
