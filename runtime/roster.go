package runtime

import (
	"slices"

	"github.com/ganglion-dev/ganglion/runtime/config"
)

// roster is whom the runtime hosts: the config's agents, in order, and its
// teams. It is fixed once New has built every agent; nothing changes it
// after, so it is read without a lock.
type roster struct {
	names  []string          // the agents, in config order
	byName map[string]*agent // filled as New builds them
	teams  []config.Team     // in config order
	teamOf map[string]string // agent → its team; absent for a system-level agent
	// budgets bound the task trees each agent starts (budget.go).
	budgets map[string]config.Budget
}

func newRoster(cfg *config.File) roster {
	ro := roster{byName: map[string]*agent{}, teamOf: map[string]string{}, teams: slices.Clone(cfg.Teams), budgets: map[string]config.Budget{}}
	for i, ac := range cfg.Agents {
		ro.names = append(ro.names, ac.Name)
		ro.budgets[ac.Name] = taskBudget(cfg.TaskBudget, cfg.Agents[i].TaskBudget)
	}
	for _, t := range cfg.Teams {
		for _, a := range t.Agents {
			ro.teamOf[a] = t.Name
		}
	}
	return ro
}

// team returns the team called name.
func (ro *roster) team(name string) (config.Team, bool) {
	i := slices.IndexFunc(ro.teams, func(t config.Team) bool { return t.Name == name })
	if i < 0 {
		return config.Team{}, false
	}
	return ro.teams[i], true
}

// teamNames returns the teams' names, in config order.
func (ro *roster) teamNames() []string {
	out := make([]string, len(ro.teams))
	for i, t := range ro.teams {
		out[i] = t.Name
	}
	return out
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
