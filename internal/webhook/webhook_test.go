package webhook

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mooringv1 "github.com/mooringhq/mooring/api/v1"
	"github.com/mooringhq/mooring/api/v1beta1"
)

func TestValidateAppImage(t *testing.T) {
	tests := map[string]struct {
		image   string
		wantErr bool
	}{
		"name and tag":      {image: "nginx:1.27"},
		"registry and path": {image: "registry.example.com:5000/team/api:v2"},
		"digest":            {image: "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		"upper case":        {image: "Nginx:latest", wantErr: true},
		"empty tag":         {image: "nginx:", wantErr: true},
		"spaces":            {image: "my image", wantErr: true},
		"bad digest":        {image: "nginx@sha256:xyz", wantErr: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			err := validateApp(&mooringv1.App{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: mooringv1.AppSpec{Image: tt.image}})
			if (err != nil) != tt.wantErr {
				t.Fatalf("validateApp(%q) = %v, wantErr %v", tt.image, err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "spec.image") {
				t.Fatalf("error %q does not name spec.image", err)
			}
		})
	}
}

func TestDatabaseClusterDefaults(t *testing.T) {
	tests := map[string]struct {
		in                      v1beta1.DatabaseClusterSpec
		wantVersion, wantSecret string
	}{
		"postgresql":     {in: v1beta1.DatabaseClusterSpec{Engine: v1beta1.PostgreSQL}, wantVersion: "18", wantSecret: "db-credentials"},
		"mysql":          {in: v1beta1.DatabaseClusterSpec{Engine: v1beta1.MySQL}, wantVersion: "8.4", wantSecret: "db-credentials"},
		"explicit kept":  {in: v1beta1.DatabaseClusterSpec{Engine: v1beta1.MySQL, Version: "8.0", SecretName: "mine"}, wantVersion: "8.0", wantSecret: "mine"},
		"unknown engine": {in: v1beta1.DatabaseClusterSpec{Engine: "oracle"}, wantVersion: "", wantSecret: "db-credentials"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			db := &v1beta1.DatabaseCluster{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: tt.in}
			if err := (DatabaseClusterDefaulter{}).Default(context.Background(), db); err != nil {
				t.Fatal(err)
			}
			if db.Spec.Version != tt.wantVersion || db.Spec.SecretName != tt.wantSecret {
				t.Fatalf("defaults = %q/%q, want %q/%q", db.Spec.Version, db.Spec.SecretName, tt.wantVersion, tt.wantSecret)
			}
		})
	}
}

func TestValidateDatabaseClusterVersion(t *testing.T) {
	tests := map[string]struct {
		engine  v1beta1.DatabaseEngine
		version string
		wantErr bool
	}{
		"postgresql 17":  {engine: v1beta1.PostgreSQL, version: "17"},
		"mysql 8.0":      {engine: v1beta1.MySQL, version: "8.0"},
		"mysql 17":       {engine: v1beta1.MySQL, version: "17", wantErr: true},
		"postgresql 8.4": {engine: v1beta1.PostgreSQL, version: "8.4", wantErr: true},
		"postgresql 9.6": {engine: v1beta1.PostgreSQL, version: "9.6", wantErr: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			db := &v1beta1.DatabaseCluster{ObjectMeta: metav1.ObjectMeta{Name: "db"},
				Spec: v1beta1.DatabaseClusterSpec{Engine: tt.engine, Version: tt.version}}
			err := validateDatabaseCluster(db)
			if (err != nil) != tt.wantErr {
				t.Fatalf("validate %s %s = %v, wantErr %v", tt.engine, tt.version, err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "spec.version") {
				t.Fatalf("error %q does not name spec.version", err)
			}
		})
	}
}
