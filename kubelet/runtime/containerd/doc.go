// Package containerd is the kubelet's container runtime on containerd's
// native API (the containerd v2 Go client; containerd 1.6 and later serve
// it). Supervisor runs a containerd of the kubelet's own; Runtime runs pod
// sandboxes, containers and images on any containerd socket.
//
// # Sandboxes
//
// A pod sandbox is not a container: it is a network namespace the runtime
// creates and bind-mounts at <Dir>/netns/<id>, attached to the pod network
// through CNI, plus a JSON record at <Dir>/sandboxes/<id>/sandbox.json (pod
// UID, name, namespace, labels, namespace path, IP, state, creation time)
// and the files every container of the pod sees as /etc/hostname,
// /etc/hosts and /etc/resolv.conf. Host-network sandboxes skip CNI and use
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
// joins its sandbox's network namespace and has the pod's hostname; it
// shares no other namespace with the pod's other containers (each has its
// own PID, IPC, UTS and mount namespaces: there is no pause container).
// Its stdout and stderr are appended, raw and interleaved, to
// ContainerConfig.LogPath by the shim, so logging goes on while the kubelet
// is down. TTY and Stdin are not supported: the process gets no terminal and
// no input (there is no attach).
//
// The shim, not the kubelet, is the parent of a container: containers keep
// running when the kubelet or containerd exits. A container's state is read
// from containerd each time (the task's status and exit status), never from
// an in-memory wait. When the runtime sees a task that stopped it records
// the exit (code, time, whether the cgroup saw an OOM kill) as labels on the
// container and deletes the task, so the exit survives containerd restarts
// and the shim goes away.
//
// # Files outside the given directories
//
// containerd 1.6 puts its shims' sockets in /run/containerd/s whatever its
// state directory (the path is compiled in); runc keeps its state in
// Config.RuncRoot (default /run/containerd/runc); runc creates the
// containers' cgroups under /<namespace>/<container ID>.
package containerd
