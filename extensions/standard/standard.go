// Package standard lists the built-in extensions: the ones every runtime
// knows by name, so that a config can list them without code. Each is an
// ordinary extension, built on the public Extension API alone; this
// package only names them, the way an application adds its own with
// runtime.WithExtension.
package standard

import (
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/extensions/approval"
	"github.com/ganglion-dev/ganglion/extensions/audit"
	"github.com/ganglion-dev/ganglion/extensions/condense"
	"github.com/ganglion-dev/ganglion/extensions/protocol"
)

// Registry returns a new registry holding the built-in extensions:
// audit, protocol, approval and condense.
func Registry() *extensions.Registry {
	r := extensions.NewRegistry()
	for _, e := range []struct {
		name string
		f    extensions.Factory
	}{
		{audit.Name, audit.New},
		{protocol.Name, protocol.Factory(nil)},
		{approval.Name, approval.New},
		{condense.Name, condense.New},
	} {
		if err := r.Register(e.name, e.f); err != nil {
			panic("standard: " + err.Error()) // two built-ins under one name
		}
	}
	return r
}
