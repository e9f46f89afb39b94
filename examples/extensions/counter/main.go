package main

import (
	ganglion "github.com/ganglion-dev/ganglion/sdk"
)

// counts is the extension's state for one instance.
type counts struct {
	Turns int `json:"turns"`
	Steps int `json:"steps"`
}

func init() {
	ganglion.Register(ganglion.Manifest{
		Name:    "counter",
		Version: "1.0.0",
		State:   true,
		Publish: []string{"counter.*"},
	}, setup)
}

func setup(api *ganglion.API) error {
	api.Pipeline.Turn(func(t *ganglion.Turn) error {
		c, err := update(t, func(c *counts) { c.Turns++ })
		if err != nil {
			return err
		}
		if err := t.Next(); err != nil {
			return err
		}
		// The step middleware has counted this turn's steps meanwhile.
		if _, err := t.State(&c); err != nil {
			return err
		}
		api.Logger.Debug("turn counted", "instance", t.Instance(), "turns", c.Turns, "steps", c.Steps)
		return api.Events.Publish(t, "counter.turn", c)
	})
	api.Pipeline.Step(func(s *ganglion.Step) error {
		if _, err := update(s, func(c *counts) { c.Steps++ }); err != nil {
			return err
		}
		return s.Next()
	})
	return nil
}

// update changes the instance's counts with fn and stores them.
func update(ctx ganglion.Context, fn func(*counts)) (counts, error) {
	var c counts
	if _, err := ctx.State(&c); err != nil {
		return c, err
	}
	fn(&c)
	return c, ctx.SetState(c)
}

func main() {}
