package model_test

import (
	"errors"
	"fmt"

	"github.com/ganglion-dev/ganglion/runtime/model"
)

// A provider classifies its failures with an [*model.Error] (StatusKind
// reads an HTTP status); a program that calls the model branches on the
// kind's sentinel, however deep the error is wrapped.
func ExampleError() {
	for _, status := range []int{429, 503, 401, 400} {
		err := fmt.Errorf("turn 3: %w", &model.Error{Kind: model.StatusKind(status), Provider: "openai", Status: status, Message: "see the body"})
		switch {
		case errors.Is(err, model.ErrRateLimited):
			fmt.Println(status, "rate limited: wait and try again")
		case errors.Is(err, model.ErrTransient):
			fmt.Println(status, "a passing failure: try again")
		case errors.Is(err, model.ErrAuth):
			fmt.Println(status, "check the API key")
		case errors.Is(err, model.ErrInvalidRequest):
			fmt.Println(status, "the request is wrong:", err)
		}
	}
	// Output:
	// 429 rate limited: wait and try again
	// 503 a passing failure: try again
	// 401 check the API key
	// 400 the request is wrong: turn 3: openai: invalid request (HTTP 400): see the body
}
