package flinkcluster

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// Flink configuration of last-state upgrades.
const (
	// PropertyLastStateMaxCheckpointAge bounds the age of the checkpoint a last-state redeploy
	// restores (older: stop with a savepoint); the Flink Kubernetes operator's key, unset by default.
	PropertyLastStateMaxCheckpointAge = "kubernetes.operator.job.upgrade.last-state.max.allowed.checkpoint.age"
)

// LastStateSupported reports whether a spec can use upgradeMode last-state: a Deployment
// JobManager (whose HA data survives redeploys) with Kubernetes HA.
func LastStateSupported(s *v1beta1.FlinkClusterSpec) bool {
	return s.GetDeploymentType() == v1beta1.JobManagerDeploymentTypeDeployment && KubernetesHA(s.FlinkProperties)
}

// flinkDurationUnits are the units of Flink's TimeUtils.parseDuration.
var flinkDurationUnits = map[string]time.Duration{
	"ns": time.Nanosecond, "nano": time.Nanosecond, "nanos": time.Nanosecond, "nanosecond": time.Nanosecond, "nanoseconds": time.Nanosecond,
	"µs": time.Microsecond, "us": time.Microsecond, "micro": time.Microsecond, "micros": time.Microsecond, "microsecond": time.Microsecond, "microseconds": time.Microsecond,
	"ms": time.Millisecond, "milli": time.Millisecond, "millis": time.Millisecond, "millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
}

// ParseFlinkDuration parses a duration as Flink's TimeUtils.parseDuration does: a whole number
// with an optional unit (milliseconds without one), or ISO-8601.
func ParseFlinkDuration(v string) (time.Duration, error) {
	s := strings.TrimSpace(v)
	if up := strings.ToUpper(s); strings.HasPrefix(up, "P") {
		return parseISO8601(up)
	}
	i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("%q is not a Flink duration: a whole number with an optional unit (ms, s, min, h, d), e.g. 10 min", v)
	}
	mult := time.Millisecond
	if unit != "" {
		u, ok := flinkDurationUnits[unit]
		if !ok {
			return 0, fmt.Errorf("%q is not a Flink duration: unknown unit %q (ms, s, min, h, d)", v, unit)
		}
		mult = u
	}
	if n > int64(1<<62)/int64(mult) {
		return 0, fmt.Errorf("%q is not a Flink duration: too large", v)
	}
	return time.Duration(n) * mult, nil
}

// parseISO8601 parses the day-time ISO-8601 durations Java's Duration.parse reads.
func parseISO8601(s string) (time.Duration, error) {
	rest := strings.TrimPrefix(s, "P")
	var total time.Duration
	inTime, parts := false, 0
	for rest != "" {
		if rest[0] == 'T' {
			inTime, rest = true, rest[1:]
			continue
		}
		i := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
		if i <= 0 {
			return 0, fmt.Errorf("%q is not an ISO-8601 duration", s)
		}
		n, err := strconv.ParseInt(rest[:i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not an ISO-8601 duration", s)
		}
		var u time.Duration
		switch {
		case rest[i] == 'D' && !inTime:
			u = 24 * time.Hour
		case rest[i] == 'H' && inTime:
			u = time.Hour
		case rest[i] == 'M' && inTime:
			u = time.Minute
		case rest[i] == 'S' && inTime:
			u = time.Second
		default:
			return 0, fmt.Errorf("%q is not an ISO-8601 duration", s)
		}
		total += time.Duration(n) * u
		rest, parts = rest[i+1:], parts+1
	}
	if parts == 0 {
		return 0, fmt.Errorf("%q is not an ISO-8601 duration", s)
	}
	return total, nil
}

// LastStateMaxCheckpointAge is the bound of PropertyLastStateMaxCheckpointAge; ok is false
// (unbounded) when it is unset or invalid.
func LastStateMaxCheckpointAge(props map[string]string) (time.Duration, bool) {
	v, set := props[PropertyLastStateMaxCheckpointAge]
	if !set || strings.TrimSpace(v) == "" {
		return 0, false
	}
	d, err := ParseFlinkDuration(v)
	if err != nil {
		return 0, false
	}
	return d, true
}
