package faults

import (
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
)

// webhookProxy stands in for the webhook Service of a real cluster when several operator
// processes run on this host: the webhook configurations call one port, and the proxy
// passes each connection (TLS and all) to the first backend that accepts it, as a Service
// passes it to a ready endpoint.
type webhookProxy struct {
	ln       net.Listener
	mu       sync.Mutex
	backends []int
}

// startWebhookProxy listens on 127.0.0.1:port until the test ends.
func startWebhookProxy(t *testing.T, port int) *webhookProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("webhook proxy: %v", err)
	}
	p := &webhookProxy{ln: ln}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err == nil {
				go p.serve(c)
			}
		}
	}()
	return p
}

func (p *webhookProxy) add(port int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.backends = append(p.backends, port)
}

func (p *webhookProxy) serve(c net.Conn) {
	defer func() { _ = c.Close() }()
	p.mu.Lock()
	backends := append([]int(nil), p.backends...)
	p.mu.Unlock()
	for _, port := range backends {
		b, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		defer func() { _ = b.Close() }()
		done := make(chan struct{}, 2)
		go func() { _, _ = io.Copy(b, c); done <- struct{}{} }()
		go func() { _, _ = io.Copy(c, b); done <- struct{}{} }()
		<-done
		return
	}
}
