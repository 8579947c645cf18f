// Package containerd is the kubelet's container runtime on containerd's
// native API (the containerd v2 Go client; containerd 1.6 and later serve
// it). Supervisor runs a containerd of the kubelet's own; Runtime runs pod
// sandboxes, containers and images on any containerd socket.
//
// # Sandboxes
//
// A pod sandbox is a network namespace the runtime creates and bind-mounts
// at <Dir>/netns/<id>, attached to the pod network through CNI; a pause
// container (ID "pause-<sandbox id>", labelled io.kubebus.sandbox.pause)
// running the pause program in that network namespace, which holds the
// pod's UTS namespace (its hostname), IPC namespace and PID namespace; a
// tmpfs at <Dir>/sandboxes/<id>/shm that is the pod's /dev/shm; a JSON
// record at <Dir>/sandboxes/<id>/sandbox.json (pod UID, name, namespace,
// labels, namespace choices, pause container, namespace path, IP, state,
// creation time); and the files every container of the pod sees as
// /etc/hostname, /etc/hosts and /etc/resolv.conf.
//
// The pause image (kubebus.local/pause:<start of the program's SHA-256>)
// is built in memory from Config.PauseBinary, the static program of
// cmd/kubebus-pause that `make build` puts beside kubebus, and imported
// when a sandbox needs it and containerd does not hold it. Without a pause
// program the runtime runs sandboxes as before it had one: a network
// namespace only. A sandbox whose pause process is gone is NotReady;
// stopping a sandbox kills its pause container and unmounts its /dev/shm,
// removing it removes them. ListContainers does not list pause containers:
// they are the sandboxes', not the pods' containers. Host-network sandboxes skip CNI and use
// the node's network namespace: Config.HostNetNS when set (a kubelet that
// does not own the host, whose CNI plugins run in that namespace too, see
// kubelet/cni), else the host's; a sandbox never removes it. A restarted
// kubelet finds its sandboxes by reading the records.
//
// # Containers
//
// Containers are containerd containers in the runtime's namespace
// (DefaultNamespace), run by runc through io.containerd.runc.v2, labelled
// with the runtime.Label* constants and the config's labels. A container
// joins its sandbox's network namespace and its pause container's UTS and
// IPC namespaces (/proc/<pause pid>/ns/...), with the sandbox's /dev/shm;
// it joins the pause container's PID namespace when the pod shares one
// (shareProcessNamespace), else it has its own, as it has its own mount
// namespace. Host-network, host-IPC and host-PID pods have the node's
// namespaces (and, for host IPC, its /dev/shm) instead.
// Its stdout and stderr are appended, raw and interleaved, to
// ContainerConfig.LogPath by the shim, so logging goes on while the kubelet
// is down. With Stdin the process reads a FIFO at <Dir>/fifo/<id>-stdin
// that the shim holds open (attach writes to it; CloseIO ends it); with TTY
// it gets a terminal whose output a logger the shim runs (/bin/sh, cat)
// appends to the log. None of this is the kubelet's, so it survives kubelet
// and containerd restarts.
//
// The shim, not the kubelet, is the parent of a container: containers keep
// running when the kubelet or containerd exits. A container's state is read
// from containerd each time (the task's status and exit status), never from
// an in-memory wait. When the runtime sees a task that stopped it records
// the exit (code, time, whether the cgroup saw an OOM kill) as labels on the
// container and deletes the task, so the exit survives containerd restarts
// and the shim goes away. Reading a container's record and its task is not
// atomic: one whose record says it started but that shows neither a task
// nor a recorded exit is read again (its task first: a reap records the
// exit before it deletes the task), or reported Created while
// StartContainer is still making its task; only a container still in that
// state is reported lost (exit code 255).
//
// # Files outside the given directories
//
// containerd 1.6 puts its shims' sockets in /run/containerd/s whatever its
// state directory (the path is compiled in); runc keeps its state in
// Config.RuncRoot (default /run/containerd/runc); runc creates the
// containers' cgroups under /<namespace>/<container ID>.
package containerd
