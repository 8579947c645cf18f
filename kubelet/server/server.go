package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"
)

// DefaultAddress is where the kubelet listens when Config.Address is empty.
const DefaultAddress = ":10250"

// DefaultPollInterval is how often a followed log is checked for new data.
const DefaultPollInterval = 100 * time.Millisecond

// LogLocator finds the log file of a container. The kubelet's pod manager
// implements it.
type LogLocator interface {
	// LogPath returns the file holding the raw output of the container, of
	// its current instance or, with previous, of the instance before it.
	// running reports whether that instance may still write to the file;
	// a follow ends once it returns false and the file is read to its end.
	// An *Error (see PodNotFound, ContainerNotFound, PreviousNotFound,
	// ContainerWaiting) is answered with its code and message; any other
	// error with 500.
	LogPath(ctx context.Context, namespace, pod, container string, previous bool) (path string, running func() bool, err error)
}

// LogTexter answers log requests with a text instead of a file: hollow
// nodes, whose containers never ran, use it. The ctx of LogText carries
// the connection's local address (http.LocalAddrContextKey), so one
// server listening on several addresses can tell which one was asked.
type LogTexter interface {
	// LogText returns the whole log of the container; tailLines and
	// limitBytes cut it, sinceSeconds and sinceTime do not (the text has
	// no time), and a follow ends after it. Errors are answered as
	// LogLocator's are.
	LogText(ctx context.Context, namespace, pod, container string, previous bool) (string, error)
}

// Config configures the server. Logs come from exactly one of Logs and
// Text. The serving certificate comes from exactly
// one of TLS (with Certificates or GetCertificate), Certificate, or
// CertFile and KeyFile; the CAs that client certificates must chain to come
// from ClientCAs, ClientCAFile or TLS.ClientCAs.
type Config struct {
	// Address to listen on, e.g. "0.0.0.0:10250" (default DefaultAddress).
	// Serve ignores it.
	Address string

	TLS               *tls.Config
	Certificate       *tls.Certificate
	CertFile, KeyFile string
	ClientCAs         *x509.CertPool
	ClientCAFile      string

	// Logs finds container log files.
	Logs LogLocator
	// Text, instead of Logs, makes up the logs.
	Text LogTexter
	// Streams serves exec, attach and port-forward; nil answers them with
	// 501 (ErrStreamingUnsupported).
	Streams StreamRuntime
	// Authorize, when set, decides whether the user of a verified client
	// certificate (its common name and organizations) may read logs; a
	// non-nil error is answered with 403 and its message. Nil lets every
	// certificate the cluster CA signed in.
	Authorize func(user string, groups []string) error
	// PollInterval is how often a followed log is checked for new data
	// (default DefaultPollInterval).
	PollInterval time.Duration
	Logger       *slog.Logger
}

func (c *Config) validate() error {
	switch {
	case c.Logs == nil && c.Text == nil:
		return errors.New("kubelet server: no LogLocator")
	case c.Logs != nil && c.Text != nil:
		return errors.New("kubelet server: both a LogLocator and a LogTexter: set only one")
	}
	if c.Address == "" {
		c.Address = DefaultAddress
	}
	if c.PollInterval <= 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// tlsConfig builds the server's TLS configuration: the serving certificate
// and a required, verified client certificate.
func (c *Config) tlsConfig() (*tls.Config, error) {
	out := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.TLS != nil {
		out = c.TLS.Clone()
		if out.MinVersion < tls.VersionTLS12 {
			out.MinVersion = tls.VersionTLS12
		}
	}
	sources := 0
	if len(out.Certificates) > 0 || out.GetCertificate != nil || out.GetConfigForClient != nil {
		sources++
	}
	if c.Certificate != nil {
		sources++
		out.Certificates = []tls.Certificate{*c.Certificate}
	}
	if c.CertFile != "" || c.KeyFile != "" {
		sources++
		if c.CertFile == "" || c.KeyFile == "" {
			return nil, errors.New("kubelet server: CertFile and KeyFile must be given together")
		}
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("kubelet server: loading serving certificate %s: %w", c.CertFile, err)
		}
		out.Certificates = []tls.Certificate{cert}
	}
	switch sources {
	case 0:
		return nil, errors.New("kubelet server: no serving certificate (set TLS, Certificate, or CertFile and KeyFile)")
	case 1:
	default:
		return nil, errors.New("kubelet server: more than one serving certificate source (set only one of TLS certificates, Certificate, CertFile/KeyFile)")
	}
	switch {
	case c.ClientCAs != nil:
		out.ClientCAs = c.ClientCAs
	case c.ClientCAFile != "":
		pemBytes, err := os.ReadFile(c.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("kubelet server: reading client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemBytes) {
			return nil, fmt.Errorf("kubelet server: client CA file %s holds no PEM certificate", c.ClientCAFile)
		}
		out.ClientCAs = pool
	}
	if out.ClientCAs == nil {
		return nil, errors.New("kubelet server: no client CA (set ClientCAs, ClientCAFile or TLS.ClientCAs); the kubelet does not serve unauthenticated clients")
	}
	out.ClientAuth = tls.RequireAndVerifyClientCert
	return out, nil
}

// Server serves the kubelet API over HTTPS.
type Server struct {
	cfg     Config
	tls     *tls.Config
	handler http.Handler
}

// New checks cfg and builds a server; Run or Serve starts it.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	tc, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, tls: tc}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	mux.Handle("GET /containerLogs/{namespace}/{pod}/{container}", s.authorize(http.HandlerFunc(s.serveContainerLogs)))
	s.routeStreams(mux)
	s.handler = mux
	return s, nil
}

// Handler is the server's HTTP handler, without TLS: requests that reach it
// without a verified client certificate are refused with 401.
func (s *Server) Handler() http.Handler { return s.handler }

// Run listens on Config.Address and serves until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Address)
	if err != nil {
		return fmt.Errorf("kubelet server: listening on %s: %w", s.cfg.Address, err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves HTTPS on every listener in lns until ctx ends, then closes
// them. Streams in progress (followed logs) end with ctx.
func (s *Server) Serve(ctx context.Context, lns ...net.Listener) error {
	if len(lns) == 0 {
		return errors.New("kubelet server: no listener to serve on")
	}
	hs := &http.Server{
		Handler:           s.handler,
		TLSConfig:         s.tls,
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, len(lns))
	for _, ln := range lns {
		go func() { errc <- hs.ServeTLS(ln, "", "") }()
	}
	if len(lns) == 1 {
		s.cfg.Logger.DebugContext(ctx, "kubelet server serving", "address", "https://"+lns[0].Addr().String())
	} else {
		s.cfg.Logger.DebugContext(ctx, "kubelet server serving", "listeners", len(lns), "first", "https://"+lns[0].Addr().String())
	}
	select {
	case err := <-errc:
		_ = hs.Close() // and the other listeners
		return fmt.Errorf("kubelet server: serving: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
	}
	return nil
}

// authorize admits requests with a verified client certificate whose user
// Config.Authorize accepts.
func (s *Server) authorize(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
			writeError(w, http.StatusUnauthorized, "a client certificate signed by the cluster CA is required")
			return
		}
		leaf := r.TLS.VerifiedChains[0][0]
		if s.cfg.Authorize != nil {
			if err := s.cfg.Authorize(leaf.Subject.CommonName, leaf.Subject.Organization); err != nil {
				writeError(w, http.StatusForbidden, err.Error())
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// writeError answers with a plain-text message, as the upstream kubelet does.
func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg + "\n"))
}
