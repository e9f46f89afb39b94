package ledger

import "context"

// Expire lets the external tests run the ledger's own expiry.
func (l *Ledger) Expire(ctx context.Context, decide func(Item) Resolution) ([]Item, error) {
	return l.expire(ctx, decide)
}
