package seam

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/store"
)

// A Placement says where an instance lives, and takes a turn, an action
// or a report there: this process alone, or the process of a cluster that
// owns the instance. The runtime calls it and never asks which it is.
type Placement interface {
	// Start begins serving, once the agents are built.
	Start() error
	// Route runs a turn where its instance lives. spread: an instance
	// nobody owns goes where its name hashes, so that delegations spread;
	// else it runs here.
	Route(ctx context.Context, agent, key string, in pipeline.InputEvent, spread bool) (*pipeline.TurnResult, error)
	// Act applies a human's action to a pending item where its instance
	// lives.
	Act(ctx context.Context, id string, act extensions.Action) (*pipeline.TurnResult, error)
	// Own makes sure this process may run in's turns, whose slot the
	// caller holds; its error matches ErrMoved when another process owns
	// the instance.
	Own(ctx context.Context, in Held) error
	// Adopt sets up what the placement keeps for a new instance
	// (Held.Placed), before any other goroutine sees it; Evicted says that
	// in left the runtime's memory.
	Adopt(in Held)
	Evicted(in Held)
	// Fence is the fence a commit of in carries (store.Batch.Fence);
	// Failed is told why one failed, and may fence the instance off until
	// Own takes it again.
	Fence(in Held) uint64
	Failed(in Held, err error)
	// MayRun reports whether this process may run the tasks of agent's
	// instance key: no other process owns it.
	MayRun(ctx context.Context, agent, key string) bool
	// Report adds a child task's report, resp, to its parent, where the
	// parent's instance lives (Local.ApplyReport).
	Report(ctx context.Context, parentID string, resp Report) error
	// AwaitAnswer lets an answer to replyTo, an Ask of this process, reach
	// deliver from wherever the task ends; stop ends the wait. deliver's
	// error says why the answer was refused.
	AwaitAnswer(replyTo string, deliver func(answer json.RawMessage) error) (stop func(), err error)
	// Answer hands an answer to the process whose Ask waits for it, when
	// no Ask of this process does.
	Answer(ctx context.Context, a Answer) error
	// WaitFor records that self waits for to, an agent call, for as long
	// as timeout at most; done removes it.
	WaitFor(ctx context.Context, self, to string, timeout time.Duration) (done func(), err error)
	// SharesSpend reports whether what task trees spend is counted where
	// every process reads it: AddSpend adds to those counts, ReadSpent
	// returns them, ForgetSpent drops them once the tree ended. Else this
	// process's own count of a tree is the whole.
	SharesSpend() bool
	AddSpend(root string, s Spend)
	ReadSpent(ctx context.Context, root string) (Spend, error)
	ForgetSpent(ctx context.Context, root string) error
	// State is the extensions' state store: the store itself, or in a
	// cluster one that writes an instance's state under its fence.
	State() extensions.StateStore
	// Refuse sends back what reaches this process from now on: it stops.
	Refuse()
	// Shutdown stops serving, after the turns ended or were cut; closed
	// runs after the store closed.
	Shutdown() (closed func(), err error)
}

// Held is an instance as a placement sees it: what the runtime's own
// turns also use, its slot and what it read from the store.
type Held interface {
	Instance
	// Acquire takes the instance's turn slot, waiting while ctx lasts;
	// TryAcquire takes it if it is free; Release gives it back.
	Acquire(ctx context.Context) error
	TryAcquire() bool
	Release()
	// Unload drops what the instance read from the store: its next turn
	// reads it again. The caller holds the slot.
	Unload()
	// Placed is what the placement keeps for the instance (Adopt), opaque
	// to the runtime.
	Placed() *atomic.Value
}

// Report is a child task's report on its way to its parent: the IDs a
// placement routes by, and the report itself, which it carries as is (to
// another process, as its JSON encoding).
type Report struct {
	Child string // the child task's ID
	Body  any
}

// Answer is a task's answer on its way to the Ask that waits for it.
type Answer struct {
	ReplyTo, Task, Agent, Instance string
	Body                           any
}

// Spend is what a tree of tasks used: the runtime's Spend.
type Spend struct {
	Delegations, Turns int
	Tokens             int64
}

// ErrMoved is the error of a turn that reached a process which does not
// own its instance: the sender looks the owner up again and goes there.
var ErrMoved = errors.New("instance owned by another process")

// Local is the runtime as a cluster's placement sees it: what it runs
// here, for itself or for another process.
type Local interface {
	// SendHere runs a turn on this process; ActHere applies an action.
	// Both return Errors.Closed itself when the runtime stops.
	SendHere(ctx context.Context, agent, key string, in pipeline.InputEvent) (*pipeline.TurnResult, error)
	ActHere(ctx context.Context, id string, act extensions.Action) (*pipeline.TurnResult, error)
	// Runnable fails when agent cannot run turns (unknown, unavailable).
	Runnable(agent string) error
	// ApplyReport adds a report to task parentID, which this process's
	// instance owns: resp is a Report's Body, or its JSON encoding when it
	// came from another process.
	ApplyReport(ctx context.Context, parentID string, resp any) error
	// TaskInstance names the instance task id belongs to; its error
	// matches Errors.NoTask when there is no such task.
	TaskInstance(ctx context.Context, id string) (agent, key string, err error)
	// Item returns a pending item.
	Item(ctx context.Context, id string) (ledger.Item, error)
	// Cached returns the instance agent/key if it is in memory, held until
	// unhold; nil if it is not.
	Cached(agent, key string) (in Held, unhold func())
	// Hold returns the instance agent/key, loading it into memory, held
	// until unhold.
	Hold(agent, key string) (in Held, unhold func(), err error)
	// ForgetTasks drops what this process remembers of the instance's
	// tasks: they are read again from the store.
	ForgetTasks(agent, key string)
	// Recover does for what a stopped process left what the runtime does
	// at start-up: continues tasks, resumes answered turns, expires items.
	Recover()
	// Enter counts a request to another process as work a stop waits for,
	// unless the runtime stops (false); Leave ends it.
	Enter() bool
	Leave()
	// Seal and Open protect a secret on its way to another process, with
	// the key every process shares.
	Seal(plain []byte, aad string) ([]byte, error)
	Open(sealed []byte, aad string) ([]byte, error)
}

// Errors are the runtime's errors a placement returns or recognises.
type Errors struct {
	// Closed: the runtime stops. Cycle: agent calls wait for each other.
	// NoTask: no such task. Cut: a stop's time ran out.
	Closed, Cycle, NoTask, Cut error
	// Kinds name the errors a turn's error may match, so that one routed
	// to another process matches them there too.
	Kinds map[string]error
}

// ClusterEnv is what the runtime gives the cluster's constructor.
type ClusterEnv struct {
	Env
	// Cluster is the config's cluster block.
	Cluster *config.Cluster
	Local   Local
	Bus     *events.Bus
	// Halt ends when the runtime's stop begins to cut its turns; a stop
	// waits CutGrace more for the requests still answered. Tasks is the
	// context of the runtime's work on tasks, which ends when it closes.
	Halt     context.Context
	Tasks    context.Context
	CutGrace time.Duration
	// CallTimeout bounds a report sent to another process.
	CallTimeout time.Duration
	// Store is the caller's store; nil: the cluster opens its own.
	// Memory: the caller asked for the memory store.
	Store  store.Store
	Memory bool
	// Keyed says a secret key is set; KeyEnv is the variable that sets it.
	Keyed  bool
	KeyEnv string
	Errors Errors
}

// Cluster opens the placement of the config's cluster block, and the
// store the processes share unless env gives one (st nil then); package
// runtime/cluster sets it. Nil: the program did not link the cluster.
var Cluster func(ctx context.Context, env ClusterEnv) (p Placement, st store.Store, err error)

// ClusterImport is the import that links the cluster into a program.
const ClusterImport = "github.com/ganglion-dev/ganglion/runtime/cluster"
