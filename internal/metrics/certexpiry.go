package metrics

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var certExpiryDesc = prometheus.NewDesc("mooring_webhook_certificate_expiration_timestamp_seconds",
	"When the webhook serving certificate this replica serves expires, in seconds since the epoch.",
	nil, nil)

// certExpiry reads the serving certificate from disk at every scrape: the certificate
// rotates (Mooring's own rotator or cert-manager rewrites the file) without the process
// knowing, and the file is what the webhook server actually serves.
type certExpiry struct{ path string }

func (c certExpiry) Describe(ch chan<- *prometheus.Desc) { ch <- certExpiryDesc }

func (c certExpiry) Collect(ch chan<- prometheus.Metric) {
	if c.path == "" {
		return
	}
	notAfter, err := CertNotAfter(c.path)
	if err != nil {
		// No certificate yet (it is being made) or an unreadable one: no series rather
		// than a wrong value, and not a failed scrape that would hide every other metric.
		return
	}
	ch <- prometheus.MustNewConstMetric(certExpiryDesc, prometheus.GaugeValue, float64(notAfter.Unix()))
}

// CertNotAfter returns the expiry of the first certificate in a PEM file (the leaf).
func CertNotAfter(path string) (time.Time, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return time.Time{}, fmt.Errorf("%s: no PEM certificate", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", path, err)
	}
	return cert.NotAfter, nil
}
