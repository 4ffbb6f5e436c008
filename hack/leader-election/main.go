// Command leader-election runs client-go's leader election (a LeaseLock, through the typed
// clientset, which sends Leases as protobuf) against the server of a kubeconfig, as every Go
// operator's manager does, and prints what happens: `leading <id>` when it takes the lease,
// `leader <holder>` when it sees a new leader. It runs until it is killed. versa's e2e test
// `leader_election` starts two and kills the leader.
//
// Usage: leader-election <kubeconfig> <identity>
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: leader-election <kubeconfig> <identity>")
		os.Exit(2)
	}
	config, err := clientcmd.BuildConfigFromFlags("", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	config.ContentType = "application/vnd.kubernetes.protobuf"
	config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	client := kubernetes.NewForConfigOrDie(config)
	id := os.Args[2]
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: "operator-lock", Namespace: "default"},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	leaderelection.RunOrDie(context.Background(), leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: 3 * time.Second,
		RenewDeadline: 2 * time.Second,
		RetryPeriod:   500 * time.Millisecond,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				fmt.Printf("leading %s\n", id)
				<-ctx.Done()
			},
			OnStoppedLeading: func() {
				fmt.Printf("stopped %s\n", id)
				os.Exit(0)
			},
			OnNewLeader: func(holder string) {
				fmt.Printf("leader %s\n", holder)
			},
		},
	})
}
