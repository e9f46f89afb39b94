package protocol

// DefaultMaxBlockSize is the block size limit of a [Scanner] given no
// [MaxBlockSize], for the external tests.
const DefaultMaxBlockSize = defaultMaxBlockSize
