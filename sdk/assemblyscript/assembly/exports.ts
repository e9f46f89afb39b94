// The hook exports of sdk/ABI.md. Re-export them from the entry file, all
// (export * from ".../exports") or just those the guest registers hooks for,
// next to the guest's own ganglion_init:
//
//   export { ganglion_abi_version, ganglion_turn } from ".../exports";
//   export function ganglion_init(): i32 { ... }

import { ABI_VERSION, Kind, dispatch, dispatchPending } from "./index";

/** ganglion_abi_version returns the ABI version, 2. */
export function ganglion_abi_version(): i32 {
  return ABI_VERSION;
}

/** ganglion_turn runs the turn middleware registered as id. */
export function ganglion_turn(ctx: i32, id: i32): i32 {
  return dispatch(Kind.TURN, ctx, id);
}

/** ganglion_step runs the step middleware registered as id. */
export function ganglion_step(ctx: i32, id: i32): i32 {
  return dispatch(Kind.STEP, ctx, id);
}

/** ganglion_tool_call runs the toolCall middleware registered as id. */
export function ganglion_tool_call(ctx: i32, id: i32): i32 {
  return dispatch(Kind.TOOL_CALL, ctx, id);
}

/** ganglion_tool runs the tool registered as id. */
export function ganglion_tool(ctx: i32, id: i32): i32 {
  return dispatch(Kind.TOOL, ctx, id);
}

/** ganglion_event runs the event handler registered as id. */
export function ganglion_event(ctx: i32, id: i32): i32 {
  return dispatch(Kind.EVENT, ctx, id);
}

/**
 * ganglion_pending runs the pending kind registered as id (version 2): a
 * human acted on one of its items, an item expired, or a call an item
 * paused resumes.
 */
export function ganglion_pending(ctx: i32, id: i32): i32 {
  return dispatchPending(ctx, id);
}
