// Package delegation runs the tasks that call_agent and call_team_agent
// make, and the agent calls of middleware (ctx.agents): the hook by which
// a turn records its delegations, commits them with the step that made
// them and settles its task when it ends (engine.Hook); the task turns run
// in the background and the reports that merge into a parent's; the trees'
// budgets; the answers handed to channels; the system tools. Tasks are
// stored as package task's records. The runtime embeds one Tasks and
// reaches it through its methods; Tasks reach the runtime only through
// Env.
package delegation
