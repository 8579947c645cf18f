// Command kubectl is a fallback for machines without the stock kubectl: the
// upstream kubectl command tree from k8s.io/kubectl, built unchanged. The
// Makefile builds it only when no kubectl is on PATH.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
)

func main() {
	os.Exit(cli.Run(cmd.NewDefaultKubectlCommand()))
}
