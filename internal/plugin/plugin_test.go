package plugin

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/mooringhq/mooring/internal/manager"
	"github.com/mooringhq/mooring/internal/webhook"
)

// The plugin names what the operator defines without importing it; these must agree.
func TestNamesMatchTheOperator(t *testing.T) {
	pairs := map[string][2]string{
		"mutating config":   {MutatingConfigName, webhook.MutatingConfigName},
		"validating config": {ValidatingConfigName, webhook.ValidatingConfigName},
		"conversion CRD":    {ConversionCRDName, webhook.ConversionCRDName},
		"leader lease":      {LeaseName, manager.LeaseName},
	}
	for name, p := range pairs {
		if p[0] != p[1] {
			t.Errorf("%s: plugin %q, operator %q", name, p[0], p[1])
		}
	}
}

func TestParseRef(t *testing.T) {
	tests := map[string]struct {
		in, want, err string
	}{
		"kind":          {in: "app/hello", want: "app/hello"},
		"plural":        {in: "databaseclusters/orders", want: "databasecluster/orders"},
		"Kind":          {in: "CacheInstance/sessions", want: "cacheinstance/sessions"},
		"group":         {in: "backups.mooring.dev/nightly", want: "backup/nightly"},
		"short":         {in: "db/orders", want: "databasecluster/orders"},
		"CRD short":     {in: "dbc/orders", want: "databasecluster/orders"},
		"no slash":      {in: "hello", err: "is not KIND/NAME"},
		"no name":       {in: "app/", err: "is not KIND/NAME"},
		"unknown kind":  {in: "deployment/web", err: `unknown kind "deployment"`},
		"too many part": {in: "app/a/b", err: "is not KIND/NAME"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, err := parseRef(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("parseRef(%q) error %v, want %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil || r.String() != tc.want {
				t.Fatalf("parseRef(%q) = %v, %v; want %s", tc.in, r, err, tc.want)
			}
		})
	}
}

func TestImageTag(t *testing.T) {
	for in, want := range map[string]string{
		"registry.example.com/mooring:v0.1.0":  "v0.1.0",
		"registry.example.com:5000/mooring":    "registry.example.com:5000/mooring",
		"mooring@sha256:abcd":                  "sha256:abcd",
		"mooring:latest":                       "latest",
		"localhost:5000/team/mooring:v1.2.3-1": "v1.2.3-1",
	} {
		if got := imageTag(in); got != want {
			t.Errorf("imageTag(%q) = %q, want %q", in, got, want)
		}
	}
}

func selfSigned(t *testing.T, notBefore, notAfter time.Time) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), DNSNames: []string{"localhost"}, NotBefore: notBefore, NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The certificate check judges the validity period alone; where the certificate came
// from is the webhook checks' business.
func TestCheckCertificate(t *testing.T) {
	tests := map[string]struct {
		from, to time.Time
		verdict  Verdict
		says     string
	}{
		"valid":         {now.Add(-time.Hour), now.Add(365 * 24 * time.Hour), Pass, "valid for 365d more"},
		"expiring soon": {now.Add(-time.Hour), now.Add(48 * time.Hour), Warn, "expires in 2d"},
		"expired":       {now.Add(-48 * time.Hour), now.Add(-time.Hour), Fail, "expired 60m ago"},
		"not yet valid": {now.Add(time.Hour), now.Add(48 * time.Hour), Fail, "not valid before"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			env := &doctorEnv{now: now, serving: &servingCert{cert: selfSigned(t, tc.from, tc.to), source: "test"}}
			got := checkCertificate(t.Context(), env)
			if len(got) != 1 || got[0].Verdict != tc.verdict || !strings.Contains(got[0].Message, tc.says) {
				t.Fatalf("got %+v, want %s saying %q", got, tc.verdict, tc.says)
			}
			if tc.verdict != Pass && got[0].Fix == "" {
				t.Error("no fix given")
			}
		})
	}
}

func TestWriteFindings(t *testing.T) {
	var b bytes.Buffer
	failed := writeFindings(&b, []Finding{
		pass("crd apps.mooring.dev", "established"),
		warn("operator leader lease", "run with --leader-elect", "no lease"),
		fail("serving certificate", "restart the operator", "expired 1h ago"),
	}, false)
	want := "PASS  crd apps.mooring.dev   established\n" +
		"WARN  operator leader lease  no lease\n" +
		"                             fix: run with --leader-elect\n" +
		"FAIL  serving certificate    expired 1h ago\n" +
		"                             fix: restart the operator\n" +
		"\n3 checks: 1 passed, 1 warnings, 1 failed\n"
	if failed != 1 || b.String() != want {
		t.Errorf("failed %d, output:\n%s\nwant:\n%s", failed, b.String(), want)
	}
}

// Colour only on a terminal: a buffer gets none unless asked for; NO_COLOR wins on auto.
func TestColor(t *testing.T) {
	o := NewOptions(genericiooptions.IOStreams{Out: &bytes.Buffer{}})
	if o.color() {
		t.Error("auto colours a buffer")
	}
	o.Color = "always"
	if !o.color() {
		t.Error("always does not colour")
	}
	o.Color = "never"
	if o.color() {
		t.Error("never colours")
	}
}

// Shell completion is cobra's: scripts for each shell, and KIND/ completed offline.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		var out bytes.Buffer
		o := NewOptions(genericiooptions.IOStreams{Out: &out, ErrOut: &out})
		cmd := NewRootCommand(o)
		cmd.SetArgs([]string{"completion", shell})
		if err := cmd.Execute(); err != nil || !strings.Contains(out.String(), "kubectl-mooring") {
			t.Errorf("completion %s: %v\n%.200s", shell, err, out.String())
		}
	}
	var out bytes.Buffer
	o := NewOptions(genericiooptions.IOStreams{Out: &out, ErrOut: &bytes.Buffer{}})
	cmd := NewRootCommand(o)
	cmd.SetArgs([]string{"__complete", "status", "data"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "app/\ncacheinstance/\ndatabasecluster/\nbackup/\n") {
		t.Errorf("completion of a kind:\n%s", out.String())
	}
}

// A URL webhook: its CA bundle must verify what is served there; a server that does not
// answer, a missing bundle or one of another CA fail, each with its own message.
func TestCheckEndpointURL(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	// The checks close connections right after the handshake, which the server would log.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	good := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	other := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: selfSigned(t, now.Add(-time.Hour), now.Add(time.Hour)).Raw})
	hook := func(ca []byte) endpoint {
		return endpoint{url: srv.URL, caBundle: ca, webhooks: 2}
	}
	tests := map[string]struct {
		e       endpoint
		verdict Verdict
		says    string
	}{
		"verified":   {hook(good), Pass, "2 webhooks at " + srv.URL + "; the CA bundle verifies the serving certificate for 127.0.0.1"},
		"no bundle":  {hook(nil), Fail, "no CA bundle"},
		"other CA":   {hook(other), Fail, "the CA bundle does not verify the serving certificate (served at " + srv.URL + ")"},
		"not a cert": {hook([]byte("junk")), Fail, "holds no PEM certificate"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			env := &doctorEnv{now: time.Now()}
			got := env.checkEndpoint(t.Context(), "webhook", tc.e)
			if got.Verdict != tc.verdict || !strings.Contains(got.Message, tc.says) {
				t.Fatalf("got %s %q, want %s with %q", got.Verdict, got.Message, tc.verdict, tc.says)
			}
		})
	}
	srv.Close()
	env := &doctorEnv{now: time.Now()}
	if got := env.checkEndpoint(t.Context(), "webhook", hook(good)); got.Verdict != Fail || !strings.Contains(got.Message, "it does not answer") {
		t.Fatalf("closed server: %s %q", got.Verdict, got.Message)
	}
}

// Every name kubectl accepts for a Mooring kind (the CRD's plural, singular, kind and
// short names) names it for the plugin too.
func TestKindsAcceptTheCRDsNames(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "mooring.dev_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		n := crd.Spec.Names
		names := append([]string{n.Plural, n.Singular, n.Kind, n.Plural + "." + crd.Spec.Group}, n.ShortNames...)
		for _, name := range names {
			k, ok := lookupKind(name)
			if !ok || k.Kind != n.Kind {
				t.Errorf("%s: %q names %q for the plugin, want %s", filepath.Base(f), name, k.Kind, n.Kind)
			}
		}
	}
}

// Every kind of api/v1's list is one the plugin's scheme can make objects and lists of,
// at the version Mooring reads and writes.
func TestEveryKindHasGoTypes(t *testing.T) {
	if len(kinds) == 0 {
		t.Fatal("no kinds")
	}
	for _, k := range kinds {
		obj, list := k.newObj(), k.newList()
		gvks, _, err := Scheme.ObjectKinds(obj)
		if err != nil || len(gvks) == 0 || gvks[0] != k.gvk {
			t.Errorf("%s: object of kinds %v (%v), want %s", k.Name, gvks, err, k.gvk)
		}
		if _, _, err := Scheme.ObjectKinds(list); err != nil {
			t.Errorf("%s: list: %v", k.Name, err)
		}
	}
}
