package cassette

import (
	"strconv"

	"github.com/ganglion-dev/ganglion/runtime/internal/tape"
)

// Tape is what runtime.WithTape takes: a [*Recorder] or a [*Player].
type Tape interface {
	tape() tape.Tape
}

func init() {
	tape.Open = func(t any) tape.Tape {
		if t, ok := t.(Tape); ok {
			return t.tape()
		}
		return nil
	}
}

func (r *Recorder) tape() tape.Tape { return &r.r }
func (p *Player) tape() tape.Tape   { return &p.p }

var (
	_ tape.Tape = (*recorder)(nil)
	_ tape.Tape = (*player)(nil)
)

// where names a model call for people: `agent "a" instance "k" turn-2 step 1`.
func where(label, agent, instance, turnID string, step int) string {
	s := "agent " + strconv.Quote(agent) + " instance " + strconv.Quote(instance) + " " + turnID + " step " + strconv.Itoa(step)
	if label != "" {
		s = "model " + strconv.Quote(label) + " of " + s
	}
	return s
}

func callKey(label, agent, instance, turnID string, step int) string {
	return label + "\x00" + agent + "\x00" + instance + "\x00" + turnID + "\x00" + strconv.Itoa(step)
}

func toolKey(agent, instance, turnID string, step int, callID string) string {
	return agent + "\x00" + instance + "\x00" + turnID + "\x00" + strconv.Itoa(step) + "\x00" + callID
}

// occurrence returns key for its n-th use, n from 1: key itself, then key#2...
func occurrence(key string, n int) string {
	if n == 1 {
		return key
	}
	return key + "#" + strconv.Itoa(n)
}
