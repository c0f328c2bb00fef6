package dump

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/mooringhq/mooring/api/v1beta1"
)

// Where a Job finds the CA it verifies the server with, and the client certificate it
// presents.
const (
	ServerCADir   = "/etc/mooring/server-ca"
	ClientCertDir = "/etc/mooring/client-cert"
)

// ClientTLS is how a Job's client reaches the server over TLS: the server's certificate
// and name verified against the CA of CASecret (its ca.crt), and, with ClientCertSecret,
// a client certificate presented (its tls.crt and tls.key; the superuser logs in over the
// network with nothing less).
type ClientTLS struct {
	CASecret, ClientCertSecret string
}

// applyTLS makes the pod's client use t: libpq through its environment; MariaDB's and
// MySQL's clients, which have no environment variables for it, through ~/.my.cnf, which
// an init container writes into the pod's /tmp (HOME). The option file holds paths, no
// secret.
func applyTLS(pt *corev1.PodTemplateSpec, engine v1beta1.DatabaseEngine, t *ClientTLS) {
	if t == nil || t.CASecret == "" {
		return
	}
	pod := &pt.Spec
	c := &pod.Containers[0]
	secretVolume := func(name, secret string, keys ...string) corev1.Volume {
		items := make([]corev1.KeyToPath, 0, len(keys))
		for _, k := range keys {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
		// Group-readable, root's: what libpq takes for a key file it does not own.
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secret, DefaultMode: ptr.To[int32](0o440), Items: items}}}
	}
	pod.Volumes = append(pod.Volumes, secretVolume("server-ca", t.CASecret, "ca.crt"))
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "server-ca", MountPath: ServerCADir, ReadOnly: true})
	ca, cert, key := ServerCADir+"/ca.crt", ClientCertDir+"/tls.crt", ClientCertDir+"/tls.key"
	if t.ClientCertSecret != "" {
		pod.Volumes = append(pod.Volumes, secretVolume("client-cert", t.ClientCertSecret, "tls.crt", "tls.key"))
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "client-cert", MountPath: ClientCertDir, ReadOnly: true})
	}
	if engine == v1beta1.PostgreSQL {
		c.Env = append(c.Env, corev1.EnvVar{Name: "PGSSLMODE", Value: "verify-full"}, corev1.EnvVar{Name: "PGSSLROOTCERT", Value: ca})
		if t.ClientCertSecret != "" {
			c.Env = append(c.Env, corev1.EnvVar{Name: "PGSSLCERT", Value: cert}, corev1.EnvVar{Name: "PGSSLKEY", Value: key})
		}
		return
	}
	conf := "[client]\nssl-ca=" + ca + "\n"
	if t.ClientCertSecret != "" {
		conf += "ssl-cert=" + cert + "\nssl-key=" + key + "\n"
	}
	if engine == v1beta1.MySQL {
		conf += "ssl-mode=VERIFY_IDENTITY\n"
	} else {
		conf += "ssl\nssl-verify-server-cert\n"
	}
	hasHome := false
	for _, e := range c.Env {
		hasHome = hasHome || e.Name == "HOME"
	}
	if !hasHome {
		c.Env = append(c.Env, corev1.EnvVar{Name: "HOME", Value: "/tmp"})
	}
	pod.InitContainers = append(pod.InitContainers, corev1.Container{
		Name: "client-options", Image: c.Image,
		Command:         []string{"/bin/sh", "-c", `printf '%s' "$CLIENT_OPTIONS" > /tmp/.my.cnf`},
		Env:             []corev1.EnvVar{{Name: "CLIENT_OPTIONS", Value: conf}},
		VolumeMounts:    []corev1.VolumeMount{{Name: tmpVolumeName, MountPath: "/tmp"}},
		SecurityContext: c.SecurityContext.DeepCopy(),
	})
}
