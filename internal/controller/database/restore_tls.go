package database

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/mooringhq/mooring/api/v1beta1"
	"github.com/mooringhq/mooring/internal/dbtls"
)

// superuserClientDir is where a Job of Mooring's finds the superuser's client
// certificate.
const superuserClientDir = "/etc/mooring/superuser-client"

// withSuperuserTLS makes a Job that logs in as the superuser (the restore) do it over TLS
// with the server's certificate and name verified, presenting the superuser's client
// certificate of the cluster's CA: without spec.superuserAccess the server takes the
// superuser over the network with nothing less. PostgreSQL's client reads it all from
// its environment; MariaDB's and MySQL's from the option file an init container writes to
// the Job's HOME (/tmp), as they have no environment variables for it.
func withSuperuserTLS(job *batchv1.Job, db *v1beta1.DatabaseCluster) {
	pod := &job.Spec.Template.Spec
	pod.Volumes = append(pod.Volumes, jobCAVolume(db), corev1.Volume{Name: "superuser-client", VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{
			SecretName: SuperuserClientSecretName(db), DefaultMode: ptr.To[int32](0o440),
			Items: []corev1.KeyToPath{{Key: dbtls.CertKey, Path: dbtls.CertKey}, {Key: dbtls.KeyKey, Path: dbtls.KeyKey}},
		},
	}})
	mounts := []corev1.VolumeMount{jobCAMount(), {Name: "superuser-client", MountPath: superuserClientDir, ReadOnly: true}}
	ca, cert, key := jobCADir+"/"+dbtls.CAKey, superuserClientDir+"/"+dbtls.CertKey, superuserClientDir+"/"+dbtls.KeyKey
	c := &pod.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, mounts...)
	if db.Spec.Engine == v1beta1.PostgreSQL {
		c.Env = append(c.Env,
			corev1.EnvVar{Name: "PGSSLMODE", Value: "verify-full"}, corev1.EnvVar{Name: "PGSSLROOTCERT", Value: ca},
			corev1.EnvVar{Name: "PGSSLCERT", Value: cert}, corev1.EnvVar{Name: "PGSSLKEY", Value: key})
		return
	}
	verify := "ssl-verify-server-cert"
	if db.Spec.Engine == v1beta1.MySQL {
		verify = "ssl-mode=VERIFY_IDENTITY"
	}
	conf := "[client]\nssl-ca=" + ca + "\nssl-cert=" + cert + "\nssl-key=" + key + "\n" + verify + "\n"
	init := corev1.Container{
		Name: "client-options", Image: c.Image,
		// The option file holds paths only, no secret.
		Command:         []string{"/bin/sh", "-c", `printf '%s' "$CLIENT_OPTIONS" > /tmp/.my.cnf`},
		Env:             []corev1.EnvVar{{Name: "CLIENT_OPTIONS", Value: conf}},
		VolumeMounts:    c.VolumeMounts,
		SecurityContext: c.SecurityContext.DeepCopy(),
	}
	pod.InitContainers = append(pod.InitContainers, init)
}
