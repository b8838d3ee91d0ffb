package tlsconf

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/wheelmq/wheelmq/actors/recovery"
	"github.com/wheelmq/wheelmq/storage/vfs"
)

// DefaultPoll is how often a Reloader looks at its files.
const DefaultPoll = time.Second

// Options says where a process's TLS material is.
type Options struct {
	// CertFile and KeyFile are the server certificate (PEM, the chain
	// after the leaf) and its key; both or neither. Neither: a self-signed
	// certificate in Dir.
	CertFile, KeyFile string
	// ClientCAFile, when set, is a PEM bundle of the CAs client
	// certificates must chain to: every client must then present one
	// (tls.RequireAndVerifyClientCert).
	ClientCAFile string
	// Dir holds the self-signed certificate (see the package doc).
	Dir string
	// Hosts are what the self-signed certificate is for besides localhost
	// and the loopback addresses: the advertised host, the hostname.
	Hosts []string
	// Poll is how often the files are looked at (zero: DefaultPoll).
	Poll time.Duration
	// FS is the file system (nil: the real one).
	FS     vfs.FS
	Logger zerolog.Logger
}

// snapshot is the TLS material in force.
type snapshot struct {
	server      *tls.Config      // what a handshake of the ports uses
	cert        *tls.Certificate // the certificate, also presented to name servers
	fingerprint string
}

// fileStamp is what a poll compares of a file.
type fileStamp struct {
	info os.FileInfo // nil: missing
	err  string
}

func (a fileStamp) same(b fileStamp) bool {
	if a.info == nil || b.info == nil {
		return a.info == nil && b.info == nil && a.err == b.err
	}
	same := os.SameFile(a.info, b.info) || (a.info.Sys() == nil && b.info.Sys() == nil)
	return same && a.info.ModTime().Equal(b.info.ModTime()) && a.info.Size() == b.info.Size()
}

// Reloader holds the TLS material and reloads it when its files change.
// Start its poller once the ports use it, and Stop it with the process.
type Reloader struct {
	opts  Options
	files []string // the files loaded: cert, key, then the client CA

	cur atomic.Pointer[snapshot]

	mu      sync.Mutex  // one check at a time
	seen    []fileStamp // guarded by mu: the files as the last load attempt found them
	stop    chan struct{}
	done    chan struct{} // closed when the poller returned
	started atomic.Bool
	halt    sync.Once

	reloads, failures atomic.Int64
}

// Open loads the TLS material (making the self-signed certificate when
// no certificate is given) and logs the certificate's SHA-256 fingerprint.
func Open(opts Options) (*Reloader, error) {
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if (opts.CertFile == "") != (opts.KeyFile == "") {
		return nil, errors.New("tls: give both --tls-cert and --tls-key, or neither (a self-signed certificate)")
	}
	r := &Reloader{opts: opts, stop: make(chan struct{}), done: make(chan struct{})}
	log := opts.Logger
	certPath, keyPath := opts.CertFile, opts.KeyFile
	selfSigned := certPath == ""
	if selfSigned {
		if opts.Dir == "" {
			return nil, errors.New("tls: no certificate given and no directory for a self-signed one")
		}
		var err error
		if certPath, keyPath, err = ensureSelfSigned(opts.FS, opts.Dir, opts.Hosts, time.Now(), log); err != nil {
			return nil, err
		}
	}
	r.files = []string{certPath, keyPath}
	if opts.ClientCAFile != "" {
		r.files = append(r.files, opts.ClientCAFile)
	}
	r.seen = r.stamps()
	snap, err := r.load()
	if err != nil {
		return nil, err
	}
	r.cur.Store(snap)
	ev := log.Info().Str("cert", certPath).Str("sha256", snap.fingerprint).Bool("self_signed", selfSigned).
		Time("not_after", snap.cert.Leaf.NotAfter).Bool("client_certs_required", opts.ClientCAFile != "")
	ev.Msg("tls certificate loaded")
	return r, nil
}

// load reads the files into a snapshot.
func (r *Reloader) load() (*snapshot, error) {
	cert, err := loadPair(r.opts.FS, r.files[0], r.files[1])
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if ca := r.opts.ClientCAFile; ca != "" {
		pemBytes, err := vfs.ReadFile(r.opts.FS, ca)
		if err != nil {
			return nil, fmt.Errorf("tls client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemBytes) {
			return nil, fmt.Errorf("tls client CA %s: no PEM certificate in it", ca)
		}
		// The process's own certificate is a client certificate too: the
		// broker presents it to the name server of its own process (and
		// to others with the same CA file).
		pool.AddCert(cert.Leaf)
		cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, pool
	}
	return &snapshot{server: cfg, cert: &cert, fingerprint: Fingerprint(cert.Leaf)}, nil
}

// Fingerprint is a certificate's SHA-256 fingerprint as openssl prints it
// (upper-case hex pairs joined by colons).
func Fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	var b strings.Builder
	for i, x := range sum {
		if i > 0 {
			b.WriteByte(':')
		}
		fmt.Fprintf(&b, "%02X", x)
	}
	return b.String()
}

// Fingerprint is the SHA-256 fingerprint of the certificate in force.
func (r *Reloader) Fingerprint() string { return r.cur.Load().fingerprint }

// Files are the files loaded and watched: certificate, key, then the
// client CA (if any).
func (r *Reloader) Files() []string { return append([]string(nil), r.files...) }

// Reloads counts the snapshots swapped in after Open; Failures the
// changes that did not load.
func (r *Reloader) Reloads() int64 { return r.reloads.Load() }

// Failures counts the file changes that did not load (the snapshot in
// force stayed).
func (r *Reloader) Failures() int64 { return r.failures.Load() }

// ServerConfig is the TLS configuration of the remoting ports: each
// handshake takes the snapshot in force.
func (r *Reloader) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return r.cur.Load().server, nil
		},
	}
}

// Certificate is the certificate in force (the controllers' raft port
// presents it, as server and as client).
func (r *Reloader) Certificate() *tls.Certificate { return r.cur.Load().cert }

// ClientCAs are the CAs in force that client certificates must chain to
// (nil without ClientCAFile).
func (r *Reloader) ClientCAs() *x509.CertPool { return r.cur.Load().server.ClientCAs }

// ClientConfig is the TLS configuration of the process's connections to
// name servers: like RocketMQ's clients it does not verify the server
// (InsecureSkipVerify), and it presents the process's certificate when the
// server asks for one. A nil Reloader (no TLS served) presents none.
func (r *Reloader) ClientConfig() *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} //nolint:gosec // RocketMQ's behaviour, documented
	if r != nil {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return r.cur.Load().cert, nil
		}
	}
	return cfg
}

// Start starts polling the files (once; Stop ends it).
func (r *Reloader) Start() {
	if r.started.CompareAndSwap(false, true) {
		go r.poll()
	}
}

// Stop stops the poller and waits for it (it returns at its next select,
// at once); it may be called without Start, and more than once.
func (r *Reloader) Stop() {
	r.halt.Do(func() { close(r.stop) })
	if r.started.Load() {
		<-r.done
	}
}

func (r *Reloader) poll() {
	defer close(r.done)
	t := time.NewTicker(r.opts.Poll)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			// A panic ends this round only: the files are looked at again.
			if p := recovery.Catch(func() { r.Check() }); p != nil {
				recovery.Log(r.opts.Logger, p, "tls reload poll")
			}
		}
	}
}

// Check reloads the files if any changed since the last attempt (the
// poller calls it; tests may too). It reports whether a new snapshot is
// in force.
func (r *Reloader) Check() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.stamps()
	changed := false
	for i := range now {
		if !now[i].same(r.seen[i]) {
			changed = true
		}
	}
	if !changed {
		return false
	}
	r.seen = now
	log := r.opts.Logger
	snap, err := r.load()
	if err != nil {
		r.failures.Add(1)
		log.Warn().Err(err).Strs("files", r.files).Str("sha256", r.Fingerprint()).
			Msg("tls files changed but do not load: keeping the certificate in force")
		return false
	}
	old := r.cur.Swap(snap)
	r.reloads.Add(1)
	log.Info().Strs("files", r.files).Str("sha256", snap.fingerprint).Str("previous_sha256", old.fingerprint).
		Time("not_after", snap.cert.Leaf.NotAfter).Msg("tls certificate reloaded")
	return true
}

// stamps stats the files.
func (r *Reloader) stamps() []fileStamp {
	fs := vfs.Default(r.opts.FS)
	out := make([]fileStamp, len(r.files))
	for i, f := range r.files {
		info, err := fs.Stat(f)
		if err != nil {
			out[i] = fileStamp{err: err.Error()}
			continue
		}
		out[i] = fileStamp{info: info}
	}
	return out
}
