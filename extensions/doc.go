// Package extensions is Ganglion's extension host: the one API through
// which native Go extensions and WebAssembly modules register middleware,
// tools, state, event handlers, pauses for a human and models of their own.
// The runtime looks up each `name:` of an agent's config in a [Registry],
// calls the [Factory] with its settings, and calls [Extension.Register]
// with an [API] bound to that agent:
//
//	reg := extensions.NewRegistry()
//	reg.Register("hello", func(cfg extensions.Config) (extensions.Extension, error) {
//		return extensions.Func(func(api *extensions.API) error {
//			api.Pipeline.Turn(func(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
//				return t.Next(ctx)
//			})
//			return nil
//		}), nil
//	})
//
// The author's guide (middleware order, pauses, the window, the built-ins):
// docs/extensions.md.
package extensions
