package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// connect opens the run's pool, whose connections the fault loop reaches:
// it terminates only backends this run opened, those of its own
// application_name whose PIDs it recorded as it connected (the pool's, and
// the store's listener, which connects with a copy of the same
// configuration); and every connection takes the statement timeout the
// fault loop wants before it is handed out.
func (r *run) connect(ctx context.Context) (*pgxpool.Pool, error) {
	pcfg, err := pgxpool.ParseConfig(r.cfg.DSN)
	if err != nil {
		return nil, err
	}
	r.appName = fmt.Sprintf("%s%d-%08x", AppNamePrefix, r.cfg.Seed, rand.Uint32())
	pcfg.ConnConfig.RuntimeParams["application_name"] = r.appName
	pcfg.ConnConfig.AfterConnect = func(_ context.Context, c *pgconn.PgConn) error {
		r.pids.add(c.PID())
		return nil
	}
	pcfg.MaxConns = int32(r.cfg.Clients + 8)
	var connTimeouts sync.Map // *pgx.Conn -> int64 it has
	pcfg.PrepareConn = func(ctx context.Context, c *pgx.Conn) (bool, error) {
		want := r.timeoutMs.Load()
		if have, ok := connTimeouts.Load(c); ok && have.(int64) == want {
			return true, nil
		}
		if _, err := c.Exec(ctx, "SET statement_timeout = "+strconv.FormatInt(want, 10)); err != nil {
			return false, nil // a dead connection: the pool drops it
		}
		connTimeouts.Store(c, want)
		return true, nil
	}
	return pgxpool.NewWithConfig(ctx, pcfg)
}

// injectFaults is the fault loop: for cfg.Faults, every 50 to 200ms, it
// kills some of the run's backends, sets a tiny statement timeout or lifts
// it; and, with cfg.Restart, it restarts the server once, half way.
func (r *run) injectFaults(ctx context.Context) error {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, r.cfg.Seed^0x9e3779b97f4a7c15))
	faultsEnd := time.Now().Add(r.cfg.Faults)
	restartAt := time.Now().Add(r.cfg.Faults / 2)
	restarted := false
	for time.Now().Before(faultsEnd) {
		time.Sleep(time.Duration(50+rng.IntN(150)) * time.Millisecond)
		switch rng.IntN(3) {
		case 0:
			r.rep.Kills += r.killBackends(ctx)
		case 1:
			r.timeoutMs.Store(int64(1 + rng.IntN(3)))
			r.rep.Timeouts++
		case 2:
			r.timeoutMs.Store(0)
		}
		if r.cfg.Restart && !restarted && time.Now().After(restartAt) {
			restarted = true
			if err := restartServer(); err != nil {
				return fmt.Errorf("restarting the server: %w", err)
			}
			r.rep.Restarts++
		}
	}
	return nil
}

// killBackends terminates each of the run's backends with a chance of 0.3,
// never the one it asks through, and returns how many it terminated.
func (r *run) killBackends(ctx context.Context) int {
	var n int
	_ = r.pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND pid = ANY($2) AND pid <> pg_backend_pid() AND random() < 0.3`, r.appName, r.pids.list()).Scan(&n)
	return n
}

// backends are the PIDs of the connections a run opened.
type backends struct {
	mu   sync.Mutex
	pids []int32
}

func (b *backends) add(pid uint32) {
	b.mu.Lock()
	b.pids = append(b.pids, int32(pid))
	b.mu.Unlock()
}

func (b *backends) list() []int32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int32(nil), b.pids...)
}

func restartServer() error {
	out, err := exec.Command("bash", "-c", `pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main restart`).CombinedOutput()
	if err != nil {
		return errors.New(strings.TrimSpace(string(out)) + ": " + err.Error())
	}
	return nil
}
