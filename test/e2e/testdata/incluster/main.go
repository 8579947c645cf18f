// Command incluster is an in-cluster client for the e2e tests: run in a
// pod, it finds the API server as client-go's in-cluster configuration
// does (KUBERNETES_SERVICE_HOST and _PORT, the projected token and CA),
// addresses it as https://kubernetes.default.svc (the name taken to the
// Service's address here, as cluster DNS would; the server's certificate
// must be valid for the name) and lists the pods of its namespace once a
// second, printing "STATUS 200" and their names, or "STATUS" and the
// error.
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func main() {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		fmt.Println("STATUS no in-cluster config:", err)
		os.Exit(1)
	}
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	named := net.JoinHostPort("kubernetes.default.svc", port)
	cfg.Host = "https://" + named
	d := &net.Dialer{Timeout: 5 * time.Second}
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == named {
			addr = net.JoinHostPort(host, port)
		}
		return d.DialContext(ctx, network, addr)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Println("STATUS", err)
		os.Exit(1)
	}
	ns, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		fmt.Println("STATUS", err)
		os.Exit(1)
	}
	for range 120 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		pods, err := cs.CoreV1().Pods(strings.TrimSpace(string(ns))).List(ctx, metav1.ListOptions{})
		cancel()
		if err != nil {
			fmt.Println("STATUS", err)
		} else {
			var names []string
			for _, p := range pods.Items {
				names = append(names, p.Name)
			}
			fmt.Println("STATUS 200", strings.Join(names, " "))
		}
		time.Sleep(time.Second)
	}
}
