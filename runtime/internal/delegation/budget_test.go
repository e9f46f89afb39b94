package delegation

import (
	"testing"

	"github.com/ganglion-dev/ganglion/runtime/config"
)

// TestTaskBudgetMerge: an agent's task_budget takes its own fields over the
// file's, and the file's over the default, field by field.
func TestTaskBudgetMerge(t *testing.T) {
	tests := []struct {
		name        string
		file, agent *config.Budget
		want        config.Budget
	}{
		{"defaults", nil, nil, config.Budget{Delegations: 100, Turns: 500, Tokens: 10_000_000}},
		{"file", &config.Budget{Turns: 40}, nil, config.Budget{Delegations: 100, Turns: 40, Tokens: 10_000_000}},
		{"agent over file", &config.Budget{Turns: 40, Delegations: 7}, &config.Budget{Delegations: 3, Tokens: 900},
			config.Budget{Delegations: 3, Turns: 40, Tokens: 900}},
		{"agent alone", nil, &config.Budget{Turns: 9}, config.Budget{Delegations: 100, Turns: 9, Tokens: 10_000_000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Budget(tt.file, tt.agent); got != tt.want {
				t.Errorf("Budget = %+v, want %+v", got, tt.want)
			}
		})
	}
}
