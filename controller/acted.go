package controller

import (
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/flink-admission/flink-admission/controller/state"
)

// presence is what an act step left of an object: unchanged leaves the observation's word.
type presence uint8

const (
	unchanged presence = iota
	present
	absent
)

func presenceOf(exists bool) presence {
	if exists {
		return present
	}
	return absent
}

func (p presence) or(observed bool) bool {
	if p == unchanged {
		return observed
	}
	return p == present
}

// acted is what a reconcile's act steps did to the cluster's objects. The observation stays
// what the reconcile saw; standing reads the two together for the record.
type acted struct {
	// workload is the JobManager workload as an act step left it: created, or being deleted.
	workload                         *state.Workload
	taskManagers, service, configMap presence
	ingressApplied                   bool
	ingress                          *networkingv1.Ingress
}

// merge adds what a later act step did: the later word on an object wins.
func (a *acted) merge(b acted) {
	if b.workload != nil {
		a.workload = b.workload
	}
	for _, p := range []struct{ to, from *presence }{{&a.taskManagers, &b.taskManagers}, {&a.service, &b.service}, {&a.configMap, &b.configMap}} {
		if *p.from != unchanged {
			*p.to = *p.from
		}
	}
	if b.ingressApplied {
		a.ingressApplied, a.ingress = true, b.ingress
	}
}

// standing is the cluster's objects as the observation saw them and the act steps left them.
func standing(seen observed, a acted) observed {
	now := seen
	if a.workload != nil {
		now.wl = a.workload
	}
	now.tmExists = a.taskManagers.or(seen.tmExists)
	now.serviceExists = a.service.or(seen.serviceExists)
	now.configMapExists = a.configMap.or(seen.configMapExists)
	if a.ingressApplied {
		now.ingress = a.ingress
	}
	return now
}

// act collects what an act step did into the outcome.
func (c *cycle) act(a acted, err error) error {
	c.out.objects.merge(a)
	return err
}
