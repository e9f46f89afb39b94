// Package ganglion is the Go SDK for Ganglion extensions compiled to
// WebAssembly: the guest side of the ABI in sdk/ABI.md, built with the
// standard Go toolchain (GOOS=wasip1 GOARCH=wasm), no TinyGo and nothing
// beyond the standard library.
//
// An extension written with it looks like a native one: a setup function
// registers middleware, tools and event subscriptions through an [API], and
// each hook gets a context ([*Turn], [*Step], [*ToolCall], [*Event]) that
// reads what it needs from the host, calls Next, and sets results:
//
//	package main
//
//	import (
//		"strings"
//
//		ganglion "github.com/ganglion-dev/ganglion/sdk"
//	)
//
//	func init() {
//		ganglion.Register(ganglion.Manifest{Name: "guard", Version: "1.0.0"}, setup)
//	}
//
//	func setup(api *ganglion.API) error {
//		api.Pipeline.Turn(func(t *ganglion.Turn) error {
//			if strings.HasPrefix(t.InputText(), "!") {
//				return t.SetResult(ganglion.TurnResult{
//					FinishReason: ganglion.FinishText,
//					Response:     ganglion.Message{Content: "refused"},
//				})
//			}
//			return t.Next()
//		})
//		return nil
//	}
//
//	func main() {}
//
// The examples under examples/extensions in the Ganglion repository
// (guardrail, redactor, tool, counter) are complete extensions with tests
// that run them in a runtime.
//
// # Starting an extension
//
// The module github.com/ganglion-dev/ganglion cannot be fetched with go
// get, so a guest module outside its repository cannot require this
// package the usual way. The ganglion command writes a guest that builds
// at once, offline; from there, edit, build, list and run:
//
//	ganglion ext init hello      # a guest module in hello/, with a copy of this SDK
//	$EDITOR hello/main.go        # its middleware, tools and subscriptions
//	ganglion ext build hello     # compiles hello/hello.wasm and loads it once
//	ganglion run hello "hello"   # the agent of hello/ganglion.yaml, which loads it
//
// The guest's go.mod requires github.com/ganglion-dev/ganglion and
// replaces it with the directory ganglion-sdk, a copy of the SDK that the
// ganglion command was built with ([SourceFiles]): the guest builds
// against the SDK of the host that loads it. To move a guest to another
// ganglion's SDK, remove its ganglion-sdk and run
// "ganglion ext init --sdk-only DIR". The hello/ganglion.yaml that init
// writes lists the module under its agent's extensions; any other config
// lists it by its path, relative to the config's directory:
//
//	extensions:
//	  - wasm: hello/hello.wasm
//
// # Building
//
// ganglion ext build DIR compiles the guest in DIR with the standard
// toolchain, into DIR/<name of DIR>.wasm, then loads it once to check it
// and prints its manifest; it runs, in DIR:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -o DIR/NAME.wasm .
//
// -buildmode=c-shared makes a WASI reactor: the host calls its _initialize
// (which runs the package init functions, and so [Register]) and then its
// exports, and the module stays alive between calls. A c-shared module does
// not run main, so main stays empty and Register is called from init. The
// SDK holds the //go:wasmexport functions the host calls
// (ganglion_abi_version, ganglion_init, ganglion_turn, ganglion_step,
// ganglion_tool_call, ganglion_tool, ganglion_event): importing the package
// is all the wiring a module needs. ganglion ext inspect FILE.wasm shows
// what a module declares and registers.
//
// # Manifest
//
// Every instance's init sends the host a manifest: [Manifest]'s fields plus
// what setup registered (the hook kinds, the tool names, the subscribed
// patterns). The host refuses at run time what the manifest does not
// declare: publishing on a topic no Publish pattern matches, state without
// State, a secret not listed, a model call without Models, a file outside
// Files.
//
// # Errors
//
// A hook fails by returning an error: the SDK gives its text to the host
// (set_error) and returns 1, and the extension's on_error decides (the
// default, fail_closed, fails the turn). A panic in a hook is recovered and
// fails the hook the same way, with the stack in the host's log, instead of
// trapping and losing the instance. Returning the error of Next (or one
// wrapping it) passes the rest of the chain's failure on as the host
// reported it, not blamed on the extension. A tool's error is an error
// result the model reads, as for a native tool.
//
// Methods that can fail in a well-formed hook return an error: a host
// refusal is an [*Error] with the import's name, its [Code] and the host's
// message, matching a sentinel with [errors.Is] (errors.Is(err,
// ErrNotFound)). Accessors that cannot fail unless the context is misused
// (Agent, TurnID, InputText, Name, Args and the like) return only their
// value; if the host refuses them (a context used after its hook returned,
// [ErrStale]; a value over max_payload) they panic with the [*Error], which
// fails the hook with its message.
//
// # Concurrency
//
// A guest is synchronous: the host calls one export at a time in an
// instance and the module does not run between calls, so hooks need no
// goroutines (a goroutine a hook starts makes progress only while some hook
// waits for it). While a hook waits in Next, the host may run an inner hook
// of the same extension in the same instance: package variables are shared
// between nested hooks, nothing else runs concurrently with them. Parallel
// tool calls, event deliveries and a pool of instances run in separate
// instances of the module, which share nothing: keep what must survive a
// call in State. A context belongs to its hook call: do not keep it after
// the hook returns.
//
// # Memory
//
// Values move through one reusable buffer in the guest: a read that the
// host reports larger than the buffer grows it and asks again (sdk/ABI.md,
// "Reading into a guest buffer"). Every value a method returns is the
// caller's own.
//
// A read is a call into the host, about 120 ns. InputText and
// [ToolCall.Name] cost one only for a value the instance has not read
// before: the host tells the guest, through the inbox the SDK registers at
// the first of those reads (sdk/ABI.md, "inbox"), when a hook's input text
// or tool name is one it read already, and the SDK keeps the last of each.
//
// # Configuration and other agents
//
// [API.Config] decodes the extension's config: section from the agent's
// config (unknown settings are refused). Turn and step hooks can call other
// agents with [Turn.Agents] and [Step.Agents],
// which the runtime routes through its orchestrator; the agents must be
// listed in the [Manifest]'s Agents and granted by the config (agents:).
//
// # The context window
//
// A step hook sees the context window of its turn with [Step.Window] (the
// effective messages, counted, and Truncate, Reduce and Condense) and calls
// the agent's model with [Step.Models], as native middleware does: an
// extension that manages the context (a summariser) can be written in Go.
// Model calls cost money, so the [Manifest] must declare Models.
package ganglion
