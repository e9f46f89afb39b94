// Package events is Ganglion's in-process publish/subscribe bus: the
// runtime publishes the lifecycle of turns, steps, tool calls and messages;
// extensions publish and subscribe through their API. Events never carry
// secrets. The topics and their payloads: docs/extensions.md, "Events".
package events
