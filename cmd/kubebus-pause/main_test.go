package main

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestMain runs the pause program itself when the test binary is started
// as the helper below.
func TestMain(m *testing.M) {
	if os.Getenv("KUBEBUS_PAUSE_HELPER") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestSignalsEndIt: the program waits until SIGTERM or SIGINT and then
// exits 0; SIGCHLD does not end it.
func TestSignalsEndIt(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "KUBEBUS_PAUSE_HELPER=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		time.Sleep(200 * time.Millisecond) // let it install its handlers
		if err := cmd.Process.Signal(syscall.SIGCHLD); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			t.Fatalf("exited on SIGCHLD: %v", err)
		case <-time.After(300 * time.Millisecond):
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("after %s: %v, want exit 0", sig, err)
			}
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("still running 5s after %s", sig)
		}
	}
}
