package localcluster

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// contextName names the cluster, user and context in every kubeconfig written here.
const contextName = "mooring-local"

// writeKubeconfig writes a kubeconfig that verifies the server against the cluster CA
// and authenticates with the client certificate in kp. The data is embedded rather
// than referenced, so the file keeps working when copied or read from another directory.
func writeKubeconfig(path, server string, caPEM []byte, kp keyPair) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[contextName] = &clientcmdapi.AuthInfo{ClientCertificateData: kp.certPEM, ClientKeyData: kp.keyPEM}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName}
	cfg.CurrentContext = contextName
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

// restConfig is the admin client configuration. The QPS is raised from client-go's
// default of 5 because tests create objects in bursts against a cluster of their own.
func restConfig(server string, caPEM []byte, kp keyPair) *rest.Config {
	return &rest.Config{
		Host: server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   caPEM,
			CertData: kp.certPEM,
			KeyData:  kp.keyPEM,
		},
		QPS:   100,
		Burst: 200,
	}
}
