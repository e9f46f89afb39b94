package config

// Enums are the values Validate accepts for each key with a fixed set of
// them, by the key's place in schema/ganglion.schema.json, for the test
// that the schema lists the same.
var Enums = map[string][]string{
	"#/$defs/Model/properties/tool_protocol":     {toolProtocolNative, ToolProtocolXML},
	"#/$defs/Extension/properties/on_error":      {onErrorFailClosed, onErrorFailOpen},
	"#/$defs/MCPServer/properties/start":         {mcpStartLazy, mcpStartEager},
	"#/$defs/Webhook/properties/events/items":    webhookEvents,
	"#/$defs/HTTPGrant/properties/methods/items": httpMethods,
}

// MinMemtableSize and MinBlockCacheSize are the least sizes Validate
// takes, for the test that they are the badger store's.
const (
	MinMemtableSize   = minMemtableSize
	MinBlockCacheSize = minBlockCacheSize
)
