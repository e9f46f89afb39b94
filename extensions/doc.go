// Package extensions is Ganglion's extension host: the one Extension API
// through which native Go extensions and WebAssembly modules alike register
// middleware, tools, state, event handlers and logging (seed 004).
//
// An extension is loaded per agent. The runtime looks up each `name:` of an
// agent's config in a [Registry], calls the [Factory] with the extension's
// settings, and calls [Extension.Register] with an [API] bound to that agent:
//
//	reg := extensions.NewRegistry()
//	reg.Register("hello", func(cfg extensions.Config) (extensions.Extension, error) {
//		return extensions.Func(func(api *extensions.API) error {
//			api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
//				api.Logger.Info("turn", "input", t.Input().Text)
//				return t.Next(ctx)
//			})
//			return nil
//		}), nil
//	})
//
// Middleware order is the order of the agent's extensions list, then each
// layer's priority. An extension's on_error setting (fail_closed or
// fail_open) decides whether its failures fail the turn or skip its layer.
//
// Built-in extensions live in sub-packages (audit, and later protocol
// parsing, approval rules and condensation); the WASM loader lives in a
// sub-package too.
package extensions
