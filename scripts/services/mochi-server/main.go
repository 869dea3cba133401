// mochi-server: a second MQTT broker for ferry's MQTT tests, beside mosquitto. It is mochi-mqtt
// (github.com/mochi-mqtt/server/v2, MQTT 3.1.1 and 5 in Go) with ferry's test listeners, run by
// scripts/services/mochi. Sessions, their subscriptions and their in-flight QoS 1/2 messages live
// in memory: they survive a client's kill -9 and reconnect, not a restart of this broker.
//
// Listeners (127.0.0.1 unless -host says otherwise):
//
//	-port      plain, anonymous allowed
//	-auth-port plain, user/password required (-user / -password)
//	-tls-port  TLS with -cert/-key, user/password required (0: off)
//	-mtls-port TLS with -cert/-key and a client certificate signed by -ca required (0: off)
//
// It prints "ready" on stdout once every listener accepts connections, and stops cleanly on
// SIGTERM/SIGINT.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

// credentialHook lets anyone connect on the plain listener and on the mutual-TLS one (where the
// certificate is the credential) and asks for the user and password on the others (as
// mosquitto's per-listener settings do in scripts/services/mosquitto).
type credentialHook struct {
	mqtt.HookBase
	open     map[string]bool // listener ids that need no password
	user     string
	password string
}

func (h *credentialHook) ID() string { return "ferry-credentials" }

func (h *credentialHook) Provides(b byte) bool {
	return bytes.Contains([]byte{mqtt.OnConnectAuthenticate, mqtt.OnACLCheck}, []byte{b})
}

func (h *credentialHook) OnConnectAuthenticate(cl *mqtt.Client, pk packets.Packet) bool {
	if h.open[cl.Net.Listener] {
		return true
	}
	return string(pk.Connect.Username) == h.user && string(pk.Connect.Password) == h.password
}

func (h *credentialHook) OnACLCheck(cl *mqtt.Client, topic string, write bool) bool { return true }

// noSendQuotaHook turns off mochi's outbound flow control (the client's Receive Maximum). In
// mochi 2.7.9 a message over the quota waits in the session with Expiry -1 and is sent later by
// Inflight.NextImmediate, which takes the session's read lock twice (NextImmediate, then GetAll):
// with a publisher waiting for the write lock in between, the client's goroutine deadlocks, and
// the broker answers neither that client's PINGREQs nor a new CONNECT with its id. ferry's
// MQTTSource holds acknowledgements until records are safe, so it fills the quota and hit this
// (the connectors suite hung after ~1,800 of 2,000 messages). NextImmediate also deletes the
// message from the session once written, so such a message would not be re-sent after a crash.
// With a quota of 0 mochi never uses that path and sends every message at once; ferry's client
// takes what it is sent.
type noSendQuotaHook struct{ mqtt.HookBase }

func (h *noSendQuotaHook) ID() string { return "ferry-no-send-quota" }

func (h *noSendQuotaHook) Provides(b byte) bool {
	return bytes.Contains([]byte{mqtt.OnConnect, mqtt.OnSessionEstablished}, []byte{b})
}

func (h *noSendQuotaHook) OnConnect(cl *mqtt.Client, pk packets.Packet) error {
	cl.State.Inflight.ResetSendQuota(0)
	return nil
}

// A resumed session gets a cloned Inflight whose quota mochi sets again from the CONNECT.
func (h *noSendQuotaHook) OnSessionEstablished(cl *mqtt.Client, pk packets.Packet) {
	cl.State.Inflight.ResetSendQuota(0)
}

func main() {
	host := flag.String("host", "127.0.0.1", "address to listen on")
	port := flag.Int("port", 1893, "plain listener, anonymous")
	authPort := flag.Int("auth-port", 1894, "plain listener, user/password (0: off)")
	tlsPort := flag.Int("tls-port", 0, "TLS listener, user/password (0: off)")
	cert := flag.String("cert", "", "server certificate (PEM) for -tls-port")
	key := flag.String("key", "", "server key (PEM) for -tls-port")
	mtlsPort := flag.Int("mtls-port", 0, "TLS listener requiring a client certificate (0: off)")
	ca := flag.String("ca", "", "CA (PEM) that must have signed the client certificates on -mtls-port")
	user := flag.String("user", "ferry", "user name on the auth and TLS listeners")
	password := flag.String("password", "ferry-secret", "password on the auth and TLS listeners")
	debug := flag.Bool("debug", false, "log every client event")
	flag.Parse()

	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	caps := mqtt.NewDefaultServerCapabilities()
	// mochi drops a message (until the next reconnect re-sends it) when a client's write queue is
	// full; the tests push bursts of thousands of messages, so give the queue room for them.
	caps.MaximumClientWritesPending = 1 << 16
	server := mqtt.New(&mqtt.Options{
		Capabilities: caps,
		Logger:       slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	})
	if err := server.AddHook(&credentialHook{open: map[string]bool{"plain": true, "mtls": true}, user: *user, password: *password}, nil); err != nil {
		fail(err)
	}
	if err := server.AddHook(&noSendQuotaHook{}, nil); err != nil {
		fail(err)
	}
	addr := func(p int) string { return *host + ":" + strconv.Itoa(p) }
	if err := server.AddListener(listeners.NewTCP(listeners.Config{ID: "plain", Address: addr(*port)})); err != nil {
		fail(err)
	}
	if *authPort != 0 {
		if err := server.AddListener(listeners.NewTCP(listeners.Config{ID: "auth", Address: addr(*authPort)})); err != nil {
			fail(err)
		}
	}
	if *tlsPort != 0 {
		pair, err := tls.LoadX509KeyPair(*cert, *key)
		if err != nil {
			fail(fmt.Errorf("TLS key pair: %w", err))
		}
		cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
		if err := server.AddListener(listeners.NewTCP(listeners.Config{ID: "tls", Address: addr(*tlsPort), TLSConfig: cfg})); err != nil {
			fail(err)
		}
	}
	if *mtlsPort != 0 {
		pair, err := tls.LoadX509KeyPair(*cert, *key)
		if err != nil {
			fail(fmt.Errorf("TLS key pair: %w", err))
		}
		pem, err := os.ReadFile(*ca)
		if err != nil {
			fail(fmt.Errorf("CA file: %w", err))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			fail(fmt.Errorf("no certificate in %s", *ca))
		}
		cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12,
			ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
		if err := server.AddListener(listeners.NewTCP(listeners.Config{ID: "mtls", Address: addr(*mtlsPort), TLSConfig: cfg})); err != nil {
			fail(err)
		}
	}
	// AddListener binds at once, so every port is open here.
	if err := server.Serve(); err != nil {
		fail(err)
	}
	fmt.Println("ready")

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	_ = server.Close()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "mochi-server:", err)
	os.Exit(1)
}
