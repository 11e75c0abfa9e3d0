// Command payments is the seed's payment service, protected by idem: POST
// /payments charges a fake gateway at most once per idempotency key.
//
//	go run ./examples/payments                 # memory store on 127.0.0.1:8080
//	curl -i localhost:8080/payments -H 'X-Principal: alice' \
//	  -H 'Idempotency-Key: 8e03978e-40d5-43e8-bc93-6894a57f9324' \
//	  -H 'Content-Type: application/json' \
//	  -d '{"customerId":"c-1","amountCents":1250,"currency":"EUR"}'
//
// Send it again: the same 201, byte for byte, with Idempotent-Replayed: true.
// Change the amount under the same key: 422. Keys are 16 to 255 bytes of
// printable ASCII (a UUID is fine). A clientRequestTime member is taken and
// does not count (the fingerprint excludes it). The 201's Location, GET
// /payments/{id}, answers the payment to the caller who made it.
//
// X-Principal stands in for real authentication: it names the caller, and
// a request without it is answered 401. Behind a real identity provider,
// take the principal from the verified token instead; never from a header
// the client chooses.
//
// The fake gateway is slow with -gateway-delay, and misbehaves by customer:
// ids starting with decline- are declined (402, stored and replayed), down-
// fail before sending (the key is released: retry), timeout- are charged but
// the answer is lost (504, then 409 outcome_unknown until the reconciler
// finds the charge in the gateway's ledger, then the 201 is replayed).
//
// SIGINT or SIGTERM stops the server, the sweeper and the reconciler.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/fingerprint"
	"github.com/idemkit/idem/idemhttp"
	"github.com/idemkit/idem/store"
	memstore "github.com/idemkit/idem/store/mem"
	pgxstore "github.com/idemkit/idem/store/pgx"
	"github.com/jackc/pgx/v5/pgxpool"
)

type options struct {
	addr           string
	storeKind      string
	dsn            string
	redisAddrs     string // comma-separated: one server, or a cluster's nodes
	pgSchema       string
	gatewayDelay   time.Duration
	workerInterval time.Duration
	metricsAddr    string // "" : no metrics endpoint
	otlpEndpoint   string // "" : no traces exported
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		os.Exit(2) // the flag package has said why
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, NewGateway(o.gatewayDelay), os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "payments:", err)
		os.Exit(1)
	}
}

// parseFlags reads the command line; usage and errors go to errOut.
func parseFlags(args []string, errOut io.Writer) (options, error) {
	var o options
	err := flagSet(&o, errOut).Parse(args)
	return o, err
}

// flagSet is the command line's flags, set into o (the README lists them).
func flagSet(o *options, errOut io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("payments", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "listen address")
	fs.StringVar(&o.storeKind, "store", "mem", "idempotency store: mem, pg (PostgreSQL, with -dsn) or redis (with -redis)")
	fs.StringVar(&o.dsn, "dsn", "", "PostgreSQL connection string, for -store pg")
	fs.StringVar(&o.redisAddrs, "redis", "", "Redis address host:port, or a cluster's nodes comma-separated, for -store redis")
	fs.StringVar(&o.pgSchema, "pg-schema", "", "PostgreSQL schema of the records table (default: the first of search_path), for -store pg")
	fs.DurationVar(&o.gatewayDelay, "gateway-delay", 0, "how long each gateway charge takes")
	fs.DurationVar(&o.workerInterval, "worker-interval", time.Second, "how often the sweeper and the reconciler run")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve OpenTelemetry metrics for Prometheus at http://ADDR/metrics (default: none)")
	fs.StringVar(&o.otlpEndpoint, "otlp-endpoint", "", "export a trace span per request over OTLP/HTTP to this URL, e.g. http://127.0.0.1:4318 (default: none)")
	return fs
}

// openStore is the one place that picks the idempotency store: the
// memory store, or PostgreSQL (its migrations applied at start-up: Migrate
// is safe when many instances start at once).
func openStore(ctx context.Context, o options) (s store.Store, closeStore func(), err error) {
	switch o.storeKind {
	case "mem":
		return memstore.New(memstore.Options{}), func() {}, nil
	case "pg":
		if o.dsn == "" {
			return nil, nil, errors.New("-store pg needs -dsn")
		}
		pool, err := pgxpool.New(ctx, o.dsn)
		if err != nil {
			return nil, nil, fmt.Errorf("-dsn: %w", err)
		}
		po := pgxstore.Options{Schema: o.pgSchema}
		if err := pgxstore.Migrate(ctx, pool, po); err != nil {
			pool.Close()
			return nil, nil, err
		}
		ps, err := pgxstore.New(ctx, pool, po)
		if err != nil {
			pool.Close()
			return nil, nil, err
		}
		return ps, func() { ps.Close(); pool.Close() }, nil
	case "redis":
		return openRedis(ctx, o.redisAddrs)
	}
	return nil, nil, fmt.Errorf("-store %q: want mem, pg or redis", o.storeKind)
}

// run serves payments charged through gw until ctx is done, then stops the
// server and the workers. If ready is not nil, it receives the address once
// the server listens.
func run(ctx context.Context, o options, gw *Gateway, logTo io.Writer, ready chan<- string) error {
	logger := slog.New(slog.NewTextHandler(logTo, nil))
	st, closeStore, err := openStore(ctx, o)
	if err != nil {
		return err
	}
	defer closeStore()
	tel, err := newTelemetry(ctx, o, logger)
	if err != nil {
		return err
	}
	defer func() {
		flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tel.close(flushCtx); err != nil {
			logger.Warn("payments: telemetry not flushed", "error", err)
		}
	}()
	a, err := newApp(st, gw, logger, tel.options...)
	if err != nil {
		return err
	}
	a.metrics = tel.metrics
	return a.serve(ctx, o, logger, ready)
}

// app is what the example runs: the protected routes and the workers
// beside them.
type app struct {
	mux        *http.ServeMux
	sweeper    *idem.Sweeper
	reconciler *idem.Reconciler
	metrics    http.Handler // served on -metrics-addr, if set
}

// newApp builds the executor, the protected routes and the workers
// over st: what the README shows a new user.
func newApp(st store.Store, gw *Gateway, logger *slog.Logger, observe ...idem.Option) (*app, error) {
	// README:begin
	// One executor for the whole process, built at start-up: every request
	// must meet the same store, or the same key would be charged twice.
	// observe: its logger, and metrics and traces when asked (telemetry.go).
	ex, err := idem.New(st, observe...)
	if err != nil {
		return nil, err
	}
	spec, err := fingerprint.NewSpec("payments.create", 1, fingerprint.Exclude("/clientRequestTime"))
	if err != nil {
		return nil, err
	}
	protect, err := idemhttp.New(ex, idemhttp.Route{
		UseCase:     "payments.create",
		Fingerprint: spec,
		Principal:   principalOf, // whose key it is: two users' keys never meet
		Logger:      logger,      // each 5xx it answers, once: a 503 at WARN
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("POST /payments", protect(createPayment(gw)))
	mux.Handle("GET /payments/{id}", getPayment(gw)) // the Location: safe, so not protected

	// The workers run beside the server: the sweeper turns expired leases
	// into unknowns and expires old records; the reconciler asks the
	// gateway's ledger what happened to each unknown attempt.
	sweeper, err := ex.Sweeper(idem.WithLogger(logger))
	if err != nil {
		return nil, err
	}
	reconciler, err := ex.Reconciler(gw.Check, idem.WithLogger(logger))
	if err != nil {
		return nil, err
	}
	// README:end
	return &app{mux: mux, sweeper: sweeper, reconciler: reconciler}, nil
}

// serve listens on o.addr until ctx ends, with the workers running beside
// the server; requests under way finish (and record their outcome) before
// the workers stop.
func (a *app) serve(ctx context.Context, o options, logger *slog.Logger, ready chan<- string) error {
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	stopMetrics, err := a.serveMetrics(o.metricsAddr, logger)
	if err != nil {
		ln.Close()
		return err
	}
	defer stopMetrics()
	srv := &http.Server{
		Handler:           authenticate(a.mux),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelError),
	}
	workerCtx, stopWorkers := context.WithCancel(context.WithoutCancel(ctx))
	var workers sync.WaitGroup
	workers.Go(func() { _ = a.sweeper.Run(workerCtx, o.workerInterval) })
	workers.Go(func() { _ = a.reconciler.Run(workerCtx, o.workerInterval) })

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Info("payments: listening", "addr", ln.Addr().String(), "store", o.storeKind)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	select {
	case err = <-served: // the listener failed
	case <-ctx.Done():
		// Requests under way finish (and record their outcome) before the
		// workers stop.
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = srv.Shutdown(shutdownCtx)
		cancel()
	}
	stopWorkers()
	workers.Wait()
	logger.Info("payments: stopped")
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
