package main

import ganglion "github.com/ganglion-dev/ganglion/sdk"

func init() {
	ganglion.Register(ganglion.Manifest{Name: "unconscious", Version: "1.0.0", Agents: []string{"unconscious"}}, setup)
}

func setup(api *ganglion.API) error {
	api.Pipeline.Turn(func(t *ganglion.Turn) error {
		reply, err := t.Agents().Request("unconscious", t.InputText(), ganglion.AgentOptions{})
		if err != nil {
			return err
		}
		if err := t.Emit(ganglion.MessageEvent{Type: ganglion.MessageAppend,
			Message: ganglion.Message{Role: ganglion.RoleSystem, Content: "unconscious: " + reply.Text}}); err != nil {
			return err
		}
		return t.Next()
	})
	return nil
}

func main() {}
