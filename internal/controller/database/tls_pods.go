package database

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/dbtls"
	"github.com/mooringhq/mooring/internal/dump"
	"github.com/mooringhq/mooring/internal/instance"
)

const (
	tlsVolume         = "tls"
	clientCAVolume    = "client-ca"
	replicationVolume = "replication-secret"
)

// securityPodParts are what the database container needs for TLS and its users: the
// server certificate, the CA of client certificates (its ca.crt only: the CA's key never
// leaves the operator) and the replication password, each mounted from its Secret, and
// the instance manager's flags that name them.
func securityPodParts(db *v1beta1.DatabaseCluster) ([]corev1.Volume, []corev1.VolumeMount, []string) {
	secret := func(name, secretName string, keys ...string) corev1.Volume {
		items := make([]corev1.KeyToPath, 0, len(keys))
		for _, k := range keys {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secretName, DefaultMode: ptr.To[int32](0o440), Items: items,
		}}}
	}
	volumes := []corev1.Volume{
		secret(tlsVolume, ServerCertSecretName(db), dbtls.CertKey, dbtls.KeyKey, dbtls.CAKey),
		secret(clientCAVolume, CASecretName(db), dbtls.CAKey),
		secret(replicationVolume, ReplicationSecretName(db), PasswordKey),
	}
	mounts := []corev1.VolumeMount{
		{Name: tlsVolume, MountPath: instance.TLSDir, ReadOnly: true},
		{Name: clientCAVolume, MountPath: instance.ClientCADir, ReadOnly: true},
		{Name: replicationVolume, MountPath: instance.ReplicationSecretDir, ReadOnly: true},
	}
	args := []string{"--tls-dir=" + instance.TLSDir, "--client-ca-dir=" + instance.ClientCADir,
		"--replication-secret-dir=" + instance.ReplicationSecretDir}
	if db.Spec.SuperuserAccess {
		args = append(args, "--superuser-access")
	}
	return volumes, mounts, args
}

// jobCADir is where Mooring's Jobs find the CA they verify the server with.
const jobCADir = dump.ServerCADir

// jobCAVolume is the server certificate Secret's ca.crt alone, for a Job.
func jobCAVolume(db *v1beta1.DatabaseCluster) corev1.Volume {
	return corev1.Volume{Name: "server-ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: ServerCertSecretName(db), DefaultMode: ptr.To[int32](0o444),
		Items: []corev1.KeyToPath{{Key: dbtls.CAKey, Path: dbtls.CAKey}},
	}}}
}

func jobCAMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: "server-ca", MountPath: jobCADir, ReadOnly: true}
}
