// Package engine is the runtime's turn engine, which names no feature of
// the runtime: for now the instances in memory (Cache) and their turn
// slots (Slot), the conversation an instance keeps (History), the
// effective history the model is sent (what condensation and truncation
// marks leave), the IDs of messages and turns, and the seams through
// which the turn loop is traced (Tracer) and runs its tools (ToolRunner).
// The turn and step loop join it as package runtime becomes a facade
// (RATIONALE.md, "The runtime as a facade").
package engine
