// Command idemctl is the operator's view of a durable idempotency store:
// the records in a state, oldest first, a page at a time (list), one
// scope's record and its audit trail (show), the counts and the workers'
// backlog (stats), as a table for people or JSON for scripts (-json); and
// the settlement by hand of an unknown record (resolve) and the removal of
// a settled one (evict), through the core's Resolve and Evict events,
// fenced by the token of the record the operator examined and audited
// (who, why, the store's time) in the store's trail. Nothing goes around
// the core: it refuses to settle any record that is not unknown, and to
// evict one in progress or unknown.
//
//	idemctl -dsn postgres://... stats
//	idemctl -dsn postgres://... list -status unknown -abandoned
//	idemctl -dsn postgres://... show -principal alice -use-case payments.create -key KEY
//	idemctl -dsn postgres://... resolve -principal alice -use-case payments.create -key KEY \
//		-token 42 -verdict not_executed -who bob -why "PSP has no charge (OPS-1234)"
//	idemctl -dsn postgres://... evict -principal alice -use-case payments.create -key KEY \
//		-token 43 -who bob -why "erasure request (DPO-77)"
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes: 0 done, 1 the store failed, 2 the command line is wrong.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// run is the command, for main and the tests.
func run(ctx context.Context, args []string, out, errOut io.Writer) int {
	var g globals
	fs := flag.NewFlagSet("idemctl", flag.ContinueOnError)
	fs.SetOutput(errOut)
	g.flags(fs)
	fs.Usage = func() { usage(fs) }
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() == 0 {
		usage(fs)
		return exitUsage
	}
	cmd, ok := commands[fs.Arg(0)]
	if !ok {
		fmt.Fprintf(errOut, "idemctl: unknown command %q\n", fs.Arg(0))
		usage(fs)
		return exitUsage
	}
	sub := flag.NewFlagSet("idemctl "+fs.Arg(0), flag.ContinueOnError)
	sub.SetOutput(errOut)
	do := cmd(sub)
	if err := sub.Parse(fs.Args()[1:]); err != nil {
		return exitUsage
	}
	st, closeStore, err := g.open(ctx)
	if err != nil {
		fmt.Fprintln(errOut, "idemctl:", err)
		return exitUsage
	}
	defer closeStore()
	if err := do(ctx, st, &printer{out: out, json: g.json}); err != nil {
		fmt.Fprintln(errOut, "idemctl:", err)
		if _, bad := err.(usageError); bad {
			return exitUsage
		}
		return exitFailed
	}
	return exitOK
}

func usage(fs *flag.FlagSet) {
	fmt.Fprintln(fs.Output(), "usage: idemctl [-dsn DSN [-pg-schema S] | -redis ADDR[,ADDR...] [-redis-prefix P]] [-json] list|show|stats|resolve|evict [flags]")
	fs.PrintDefaults()
}

// usageError is a command line the command refuses.
type usageError string

func (e usageError) Error() string { return string(e) }
