package main

import ganglion "github.com/ganglion-dev/ganglion/sdk"

func init() {
	ganglion.Register(ganglion.Manifest{Name: "observer", Version: "1.0.0", Agents: []string{"observer"}}, setup)
}

func setup(api *ganglion.API) error {
	api.Pipeline.Turn(func(t *ganglion.Turn) error {
		if err := t.Next(); err != nil {
			return err // the turn failed: nothing to observe, pass the failure on
		}
		res, err := t.Result()
		if err != nil {
			return err
		}
		// Fire and forget: the observer's turn runs in the background, and
		// the turn's result is the one Next returned.
		return t.Agents().Send("observer", t.Agent()+" said: "+res.Response.Content, ganglion.AgentOptions{})
	})
	return nil
}

func main() {}
