package runtime

import (
	"slices"

	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/internal/delegation"
)

// roster is whom the runtime hosts: the config's agents, in order, and its
// teams. It is fixed once New has built every agent; nothing changes it
// after, so it is read without a lock.
type roster struct {
	names  []string          // the agents, in config order
	byName map[string]*agent // filled as New builds them
	teams  []config.Team     // in config order
	teamOf map[string]string // agent → its team; absent for a system-level agent
	// budgets bound the task trees each agent starts (delegation.Budget).
	budgets map[string]config.Budget
}

func newRoster(cfg *config.File) roster {
	ro := roster{byName: map[string]*agent{}, teamOf: map[string]string{}, teams: slices.Clone(cfg.Teams), budgets: map[string]config.Budget{}}
	for i, ac := range cfg.Agents {
		ro.names = append(ro.names, ac.Name)
		ro.budgets[ac.Name] = delegation.Budget(cfg.TaskBudget, cfg.Agents[i].TaskBudget)
	}
	for _, t := range cfg.Teams {
		for _, a := range t.Agents {
			ro.teamOf[a] = t.Name
		}
	}
	return ro
}

// peers returns whom agent name may call_agent: its teammates, or the
// other system-level agents.
func (ro *roster) peers(name string) []string {
	var out []string
	team := ro.teamOf[name]
	for _, n := range ro.names {
		if n != name && ro.teamOf[n] == team {
			out = append(out, n)
		}
	}
	return out
}
