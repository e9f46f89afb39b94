// Package events is Ganglion's in-process publish/subscribe bus.
//
// The runtime publishes lifecycle events (turn started and finished, step
// finished, tool call started and finished, message appended, model text as
// it streams); extensions publish and subscribe through their API. The CLI's
// --json mode prints every event as one JSON line.
//
// Events never carry secrets: publishers put in Data only what may be shown
// to whoever watches the bus.
package events
