package main

import (
	"fmt"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"os"
)

// logger writes the framework's log to standard error (standard output is the test's).
func logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		fmt.Fprintln(os.Stderr, prefix, args)
	}, funcr.Options{})
}
