package yamlsrc

// MaxDepth is the nesting limit, for the external tests.
const MaxDepth = maxDepth
