package server

import "time"

// WithWebhookBase sets the first retry's wait of the webhooks, for tests
// that retry in milliseconds. It goes after WithWebhooks.
func WithWebhookBase(d time.Duration) Option {
	return func(s *Server) {
		if s.hooks != nil {
			s.hooks.base = d
		}
	}
}
