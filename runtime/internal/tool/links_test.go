package tool_test

// The package's tests link the JSON Schema validator, as the runtime's
// and the ganglion command's do; the flat check's own tests compare with
// it.
import _ "github.com/ganglion-dev/ganglion/runtime/jsonschema"
