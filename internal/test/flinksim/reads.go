package flinksim

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// maxReads bounds the Simulator's API reads in flight.
const maxReads = 16

// readKey names one read: the pod it is for and what it reads.
type readKey struct {
	pod  types.UID
	what string
}

type readResult struct {
	val any
	err error
}

// reads runs the Simulator's API reads (a pod's FlinkCluster, its configuration) off the
// loop, at most maxReads at once: done in the loop, a thousand pods that start together wait
// on one another's reads in turn, each as slow as an API server under that load, and the
// last JobManager starts minutes after its container. A read is started once per key and
// its result taken once; the loop asks again each round until it is there.
type reads struct {
	sem  chan struct{}
	wake func()

	mu       sync.Mutex
	inFlight map[readKey]bool
	done     map[readKey]readResult
}

func newReads(wake func()) *reads {
	return &reads{sem: make(chan struct{}, maxReads), wake: wake, inFlight: map[readKey]bool{}, done: map[readKey]readResult{}}
}

// take returns the result of the read of key, and starts fetch for it when none is in
// flight or waiting to be taken; ok is false while the read runs.
func (r *reads) take(ctx context.Context, key readKey, fetch func(context.Context) (any, error)) (val any, err error, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if res, done := r.done[key]; done {
		delete(r.done, key)
		return res.val, res.err, true
	}
	if !r.inFlight[key] {
		r.inFlight[key] = true
		go func() {
			r.sem <- struct{}{}
			val, err := fetch(ctx)
			<-r.sem
			r.mu.Lock()
			if r.inFlight[key] { // not dropped meanwhile
				delete(r.inFlight, key)
				r.done[key] = readResult{val: val, err: err}
			}
			r.mu.Unlock()
			r.wake()
		}()
	}
	return nil, nil, false
}

// drop forgets the reads of a pod the Simulator no longer follows: a read in flight still
// runs to its end, and its result is thrown away.
func (r *reads) drop(pod types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.done {
		if k.pod == pod {
			delete(r.done, k)
		}
	}
	for k := range r.inFlight {
		if k.pod == pod {
			delete(r.inFlight, k)
		}
	}
}
