// Package wasm is Ganglion's WebAssembly extension host: it loads a module
// compiled from any language with wazero, and runs the middleware, tools and
// event handlers the module registers, through the same Extension API as a
// native extension. The guest ABI is specified in sdk/ABI.md.
//
// # Design
//
// A guest reads its context through host functions on a handle (the
// input, one message, the tool name); nothing copies the conversation per
// call, so a layer costs the same at 10 messages and at 10,000. next is a
// host function that runs the rest of the chain; an inner hook of the same
// extension re-enters the instance parked in next, through a call engine of
// its own for each nesting depth (re-entering through the running one would
// corrupt the host's stack).
//
// An [Extension] keeps a pool of instances of its module: a hook call takes
// an idle one, or a new one up to [Limits].MaxInstances, or re-enters the
// instance its outer hook is parked in (parallel tool calls each take their
// own). With MaxInstances busy, calls wait, and each instance released goes
// to the one waiting longest. After a burst, the pool shrinks back:
// instances idle for 10 s are closed, but the one used last, so that their
// memories are given back; after a minute with no call, that one too.
//
// # Sandbox
//
// A guest gets no filesystem, network, environment or real clock; WASI is
// present for toolchains that need it (Go), with nothing behind it. Its
// only way out is http_request, to the origins the config grants
// (http.go). Each hook call runs under a deadline on its guest time (the
// time in next does not count; an HTTP request's does). Before anything decodes the module, the host checks that its
// counts and lengths fit in its bytes, that its functions declare few
// enough locals (50,000 each, one per byte of code in all) and that its
// tables hold at most 1,048,576 elements (bounds.go): a decoder trusts
// those counts, and a table's elements are host memory the memory limit
// does not cover. It then validates the module as written (validate.go)
// and meters it (meter.go): a fuel counter at every function entry and
// loop header, and a charge by size at every bulk operation, make the
// guest call the host every few thousand units, and there the host traps a
// guest that overran; it checks again when each import returns. This stops
// loops and recursion alike, keeps the goroutine preemptible for Go's
// scheduler and collector, and costs a native decrement, not wazero's exit
// to Go per loop iteration and goroutine per call. Should metering ever
// fail, a backstop ends the process rather than let guest code run
// unbounded (instance.backstop). Memory is capped per instance, and what
// one hook call may publish, emit and log is bounded. A call that traps, exits or
// overruns fails with a [TrapError] (matching context.DeadlineExceeded when that was the
// cause); its instance is discarded and the next call gets a fresh one. So
// a hostile module fails only its own calls. What the guest may do beyond
// its hooks — publish on a topic, read a secret, keep state — must be
// declared in its manifest and, for secrets, granted by the config.
//
// # Concurrency
//
// An [Engine] and an [Extension] are safe for concurrent use. An instance
// runs guest code on one goroutine at a time.
package wasm
