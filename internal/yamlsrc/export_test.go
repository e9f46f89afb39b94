package yamlsrc

// MaxDepth is the nesting limit, for the external tests.
const MaxDepth = maxDepth

// MaxSize is maxSize for the external tests.
const MaxSize = maxSize
