package idemotel

import (
	"context"

	"github.com/idemkit/idem"
)

// bg is the context instruments record on: idem's counters are not
// requests' (a worker's, a flow's), and exemplars are not taken from them.
var bg = context.Background()

// counterDescriptions says what each counter counts, for an operator
// reading a dashboard (TestEveryInstrumentIsDescribed holds it complete).
var counterDescriptions = map[idem.Counter]string{
	idem.CounterReserveCreated:     "A new record was created and its action executed.",
	idem.CounterReserveReplay:      "A stored outcome was replayed byte for byte.",
	idem.CounterReserveInProgress:  "Another attempt held the key: the client was told to retry.",
	idem.CounterReserveKeyMisuse:   "A key was reused with another request (another fingerprint).",
	idem.CounterReserveFailedRetry: "A failed_retryable record executed again.",
	idem.CounterReserveUnknown:     "The key's outcome was unknown: the client waits for the reconciler.",
	idem.CounterStoreError:         "A store call failed; the request failed closed.",
	idem.CounterZombieKey:          "An in_progress record was found past its lease.",
	idem.CounterTTLPruned:          "A settled record was expired or deleted after its TTL.",
	idem.CounterReconcileScheduled: "A record became unknown and awaits the reconciler.",
	idem.CounterReconcileResolved:  "The reconciler settled an unknown record.",
	idem.CounterReconcileFailed:    "The reconciler gave up on a record after its last attempt: an operator must settle it.",
	idem.CounterWorkerError:        "A sweeper or reconciler run could not handle a batch, or a record in it.",
	idem.CounterStoreRejected:      "The store rejected a write for good (not an outage).",
}

// histogramDescriptions says what each histogram measures.
var histogramDescriptions = map[idem.Histogram]string{
	idem.HistogramAttemptDuration:   "Time from the reserve that started an attempt to the write of its outcome, on the store's clock.",
	idem.HistogramInFlightWait:      "Time a request waited for another attempt on its key.",
	idem.HistogramReconcileDuration: "Time from the end of an unknown attempt's lease to the reconciler's write that settled it.",
	idem.HistogramResponseSize:      "Size of a response body stored as an outcome.",
}
