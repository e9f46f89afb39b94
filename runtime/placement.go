package runtime

import (
	"context"
	"time"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// placement says where an instance lives, and takes a turn, an action or
// a report there: this process alone (here), or the process of a cluster
// that owns the instance (node, cluster.go). The runtime calls it and
// never asks which it is.
type placement interface {
	// start begins serving, once the agents are built.
	start() error
	// route runs a turn where its instance lives. spread: an instance
	// nobody owns goes where its name hashes, so that delegations spread;
	// else it runs here.
	route(ctx context.Context, agent, key string, in pipeline.InputEvent, spread bool) (*pipeline.TurnResult, error)
	// act applies a human's action to a pending item where its instance
	// lives.
	act(ctx context.Context, id string, act extensions.Action) (*pipeline.TurnResult, error)
	// own makes sure this process may run inst's turns, whose slot the
	// caller holds; its error matches errMoved when another process owns
	// the instance.
	own(ctx context.Context, inst *instance) error
	// adopt sets up what the placement keeps for a new instance
	// (instance.placed), before any other goroutine sees it; evicted says
	// that inst left the cache.
	adopt(inst *instance)
	evicted(inst *instance)
	// fence is the fence a commit of inst carries (store.Batch.Fence);
	// failed is told why one failed, and may fence the instance off until
	// own takes it again.
	fence(inst *instance) uint64
	failed(inst *instance, err error)
	// mayRun reports whether this process may run the tasks of agent's
	// instance key: no other process owns it.
	mayRun(ctx context.Context, agent, key string) bool
	// report adds a child task's report to its parent, where the parent's
	// instance lives.
	report(ctx context.Context, parentID string, resp DelegationResponse) error
	// awaitAnswer lets an answer to replyTo, an Ask of this process, reach
	// wait from wherever the task ends; stop ends the wait.
	awaitAnswer(replyTo string, wait chan<- Report) (stop func(), err error)
	// waitFor records that self waits for to, an agent call, for as long
	// as timeout at most; done removes it.
	waitFor(ctx context.Context, self, to string, timeout time.Duration) (done func(), err error)
	// sharesSpend reports whether what task trees spend is counted where
	// every process reads it: addSpend adds to those counts, readSpent
	// returns them, forgetSpent drops them once the tree ended. Else this
	// process's own count of a tree is the whole.
	sharesSpend() bool
	addSpend(root string, s Spend)
	readSpent(ctx context.Context, root string) (Spend, error)
	forgetSpent(ctx context.Context, root string) error
	// state is the extensions' state store: the store itself, or in a
	// cluster one that writes an instance's state under its fence.
	state() extensions.StateStore
	// refuse sends back what reaches this process from now on: it stops.
	refuse()
	// shutdown stops serving, after the turns ended or were cut; closed
	// runs after the store closed.
	shutdown() (closed func(), err error)
}

// here is the placement of a runtime that runs alone: every instance lives
// in this process.
type here struct{ r *Runtime }

func (h here) start() error { return nil }

func (h here) route(ctx context.Context, agent, key string, in pipeline.InputEvent, _ bool) (*pipeline.TurnResult, error) {
	return h.r.sendHere(ctx, agent, key, in)
}

func (h here) act(ctx context.Context, id string, act extensions.Action) (*pipeline.TurnResult, error) {
	return h.r.actHere(ctx, id, act)
}

func (here) own(context.Context, *instance) error        { return nil }
func (here) evicted(*instance)                           {}
func (here) adopt(*instance)                             {}
func (here) fence(*instance) uint64                      { return 0 }
func (here) failed(*instance, error)                     {}
func (here) mayRun(context.Context, string, string) bool { return true }

func (h here) report(ctx context.Context, parentID string, resp DelegationResponse) error {
	return h.r.applyReport(ctx, parentID, resp)
}

func (here) awaitAnswer(string, chan<- Report) (func(), error) { return func() {}, nil }

func (here) waitFor(context.Context, string, string, time.Duration) (func(), error) {
	return func() {}, nil
}

func (here) addSpend(string, Spend) {}

func (here) sharesSpend() bool { return false }

func (here) readSpent(context.Context, string) (Spend, error) { return Spend{}, nil }

func (h here) state() extensions.StateStore { return h.r.store }

func (here) forgetSpent(context.Context, string) error { return nil }
func (here) refuse()                                   {}
func (here) shutdown() (func(), error)                 { return func() {}, nil }
