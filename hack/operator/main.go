// Command operator runs the Parent/Child operator (operator.go) against the cluster of
// KUBECONFIG (or --kubeconfig) and prints what happens, one line each: `leading <id>` once it
// is elected, `reconciled <namespace>/<name> <ready>` after each reconcile. It runs until
// killed. versa's e2e test tests/e2e/operators.rs starts two with leader election and kills
// the leader.
//
// Usage: operator --id ID [--leader-elect]
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

func main() {
	id := flag.String("id", "operator", "identity in the leader election")
	leaderElect := flag.Bool("leader-elect", false, "elect a leader on a Lease")
	flag.Parse()
	ctrl.SetLogger(logger())
	lease, renew, retry := 3*time.Second, 2*time.Second, 500*time.Millisecond
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		LeaderElection:          *leaderElect,
		LeaderElectionID:        "ops-example-com-operator",
		LeaderElectionNamespace: "default",
		LeaseDuration:           &lease,
		RenewDeadline:           &renew,
		RetryPeriod:             &retry,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	r := &Reconciler{Client: mgr.GetClient(), Reconciled: func(key string, ready int64) {
		fmt.Printf("reconciled %s %d\n", key, ready)
	}}
	if err := r.SetupWithManager(mgr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go func() {
		<-mgr.Elected()
		fmt.Printf("leading %s\n", *id)
	}()
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
