// Package engine is the runtime's turn engine, which names no feature of
// the runtime. It runs an agent's turns (Agent.RunTurn): the turn and
// step loop, the instances (Instance) held in memory (Cache) with their
// turn slots (Slot) and the conversation they keep (History), the
// effective history the model is sent and the window middleware reduce,
// the repair of the calls a stop of the process cut short, the masking of
// secrets, and the IDs of messages and turns. What a turn needs of the
// rest comes in one Env: the store, the bus, the hooks through which the
// runtime's features take part in every turn (Hook), the placement, and
// the seams through which the loop is traced (Tracer) and runs its tools
// (ToolRunner).
package engine
