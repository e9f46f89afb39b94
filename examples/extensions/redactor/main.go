package main

import (
	"regexp"

	ganglion "github.com/ganglion-dev/ganglion/sdk"
)

var key = regexp.MustCompile(`sk-[A-Za-z0-9]{16,}`)

const mask = "[redacted]"

func init() {
	ganglion.Register(ganglion.Manifest{Name: "redactor", Version: "1.0.0"}, setup)
}

func setup(api *ganglion.API) error {
	api.Pipeline.ToolCall(func(c *ganglion.ToolCall) error {
		if err := c.Next(); err != nil {
			return err // pass the tool's failure on as it is
		}
		res, err := c.Result()
		if err != nil {
			return err
		}
		masked := key.ReplaceAllString(res.Content, mask)
		if masked == res.Content {
			return nil // keep the result Next returned
		}
		api.Logger.Info("redacted a tool result", "tool", c.Name(), "call", c.CallID())
		res.Content = masked
		return c.SetResult(res)
	})
	return nil
}

func main() {}
