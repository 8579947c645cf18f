package pods

// ProbeResult is the latest result of one probe of one container, as the
// prober reports it.
type ProbeResult int8

// Probe results. The zero value means the probe has produced no result yet.
// The values match those of prober.Result.
const (
	ProbeUnknown ProbeResult = iota
	ProbeSuccess
	ProbeFailure
)

func (r ProbeResult) String() string {
	switch r {
	case ProbeSuccess:
		return "Success"
	case ProbeFailure:
		return "Failure"
	default:
		return "Unknown"
	}
}

// ContainerProbes holds the results of the probes of one container. A
// probe the container does not have is ignored whatever its result.
type ContainerProbes struct {
	Liveness, Readiness, Startup ProbeResult
}
