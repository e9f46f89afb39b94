package model

// maxBackoff for the external tests.
const MaxBackoff = maxBackoff
