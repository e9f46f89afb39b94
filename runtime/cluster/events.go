package cluster

import (
	"encoding/json"

	"github.com/nats-io/nats.go"

	"github.com/ganglion-dev/ganglion/events"
)

// This file sends each process's events to the others.

// publishEvent sends an event of this process's bus to the others.
func (n *node) publishEvent(ev events.Event) {
	if ev.Process != "" {
		return // another's, received
	}
	ev.Process = n.name
	data, err := json.Marshal(ev)
	if err != nil {
		n.log.Warn("cluster: an event cannot be sent to the other processes", "topic", ev.Topic, "err", err)
		return
	}
	if err := n.nc.Publish(n.events+ev.Topic, data); err != nil {
		n.log.Warn("cluster: sending an event to the other processes failed", "topic", ev.Topic, "err", err)
	}
}

// receiveEvent publishes another process's event on this one's bus.
func (n *node) receiveEvent(m *nats.Msg) {
	var ev events.Event
	if err := json.Unmarshal(m.Data, &ev); err != nil {
		n.log.Warn("cluster: a malformed event from another process", "subject", m.Subject, "err", err)
		return
	}
	if ev.Process == n.name || ev.Process == "" {
		return // its own, back
	}
	n.env.Bus.Publish(ev)
}
