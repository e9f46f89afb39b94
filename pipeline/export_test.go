package pipeline

// ErrNextOutsideChain lets the external tests check the error of a Next
// called from no running layer.
var ErrNextOutsideChain = errNextOutsideChain

// ReservedMetadataReasons lets the external tests read every reserved
// key, with what it does.
var ReservedMetadataReasons = reservedMetadata
